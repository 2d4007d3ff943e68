"""A tick whose change is enormous stays within the memory ceiling: retracting the hub of a
graph whose two-paths through the hub number ``SPOKES``² is stepped and written in pieces.
And a tick in pieces whose transaction is lost loses and doubles nothing.

The worker's private memory is read from ``/proc``: loaded (``RssAnon``) and at its peak at
the end (``VmHWM`` less the file-backed ``RssFile``).  Its libraries' file-backed pages are
left out: how many are resident depends on the page cache, not on the worker (50 MB in a
long-used virtualenv, 80 MB in CI's freshly installed one, same libraries, same load).
Measured on 2 cores (2026-11-24, docs/fleet.md, "Worker memory"): in pieces of 50 datoms
the worker is at ~107–111 MB resident loaded (~60 MB of it private) and peaks at ~119–120
MB resident (~70 MB private).  The worker snapshots every second here, so the loaded
worker has written snapshots as a production one has (the first one used to map ~45 MB of
PyArrow, and whether it came before the reading decided the test).  Held whole (one piece),
the hub's tick peaked at ~319 MB resident (~270 MB private if its libraries took the same
50 MB: not measured apart) — far over the ceiling.  The committed changes are checked: the
hub's tick removes exactly the paths that no longer exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.integration.pipeline import (
    ADD,
    TO,
    TRIANGLE,
    TWO_PATH,
    committed_changes,
    http_get,
    isolated_config,
    reference_states,
    send_stream,
    wait_committed,
)
from workers.edn import keyword
from workers.kafka.broker import free_port
from workers.kafka.clients import QueryAdmin
from workers.runtime.process import WorkerProcess, transactional_id
from workers.testing import check_change_stream, evaluate_from_scratch
from workers.zset import add_into

# Serial: its worker's load and hub ticks take ~50 s of CPU on 2 cores; beside the other
# tests' Spark sessions they outlast the waits (the memory it checks does not change).
pytestmark = [pytest.mark.kafka, pytest.mark.serial]

HUB = 0
SPOKES = 700  # two-paths through the hub: 490,000
EDGES_PER_TX = 100
PIECE_DATOMS = 50  # a piece of the hub's retraction removes 35,000 paths
CEILING_MB = 120  # the worker's private memory (anonymous pages) at its peak
HEADROOM_MB = 40  # loaded, the worker is this far under the ceiling
# The worker's own ceiling counts all its resident pages, its libraries' too (file-backed:
# 50 MB in a long-used virtualenv, 80 MB right after a fresh install, whose files the page
# cache holds whole): those are shared and not a tick's doing, so the test leaves room for them.
LIBRARIES_MB = 80
TRANSACTION_MS = 60_000  # Kafka's default: ticks this large take longer than the 6 s default


def _graph(count: int = SPOKES) -> list[tuple[int, int]]:
    """Spokes to and from the hub, and a ring through the spokes (triangles with the hub)."""
    spokes = range(1, count + 1)
    return ([(s, HUB) for s in spokes] + [(HUB, s) for s in spokes]
            + [(s, s % count + 1) for s in spokes])


def _load(edges: list[tuple[int, int]]) -> list[list[list[Any]]]:
    return [[[ADD, a, TO, b] for a, b in edges[i:i + EDGES_PER_TX]]
            for i in range(0, len(edges), EDGES_PER_TX)]


def _memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def test_retracting_a_hub_stays_within_the_memory_ceiling(kafka_bootstrap: str,
                                                          tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    admin = QueryAdmin(config)
    admin.add("paths", TWO_PATH)
    admin.add("tri", TRIANGLE)
    edges = _graph()
    load = _load(edges)
    port = free_port()
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", metrics_port=port,
                           env={"DELTALOG_MEMORY_LIMIT_MB": str(CEILING_MB + LIBRARIES_MB),
                                "DELTALOG_TICK_MAX_DATOMS": str(PIECE_DATOMS),
                                "DELTALOG_SNAPSHOT_INTERVAL_S": "1",
                                # A tick of this size outlives the default 6 s transaction.
                                "DELTALOG_TRANSACTION_TIMEOUT_MS": str(TRANSACTION_MS)})
    worker.start()
    try:
        send_stream(config, load, batch=len(load))
        wait_committed(config, ["paths", "tri"], len(load) - 1, worker)
        assert worker.process is not None
        before_kb = _memory_kb(worker.process.pid, "RssAnon")
        assert before_kb < (CEILING_MB - HEADROOM_MB) * 1024, f"loaded at {before_kb} kB"
        send_stream(config, [[[keyword("db/retractEntity"), HUB]]])
        wait_committed(config, ["paths", "tri"], len(load), worker)
        # The private peak: the resident peak less the file-backed pages (they only grow
        # while a worker runs, so this reads the private peak or a little under).
        peak_kb = (_memory_kb(worker.process.pid, "VmHWM")
                   - _memory_kb(worker.process.pid, "RssFile"))
        scrape = http_get(f"http://127.0.0.1:{port}/metrics")[1].decode()
    finally:
        worker.stop()
    assert peak_kb < CEILING_MB * 1024, f"peak {peak_kb} kB over the {CEILING_MB} MB ceiling"
    pieces = SPOKES // PIECE_DATOMS
    assert _sample(scrape, "deltalog_tick_chunks_total") >= pieces

    hub_tick: dict[Any, int] = {}
    view: dict[Any, int] = {}
    for change in committed_changes(config, "paths"):
        add_into(view, {change.row: change.weight})
        if change.tx_first == len(load):
            add_into(hub_tick, {change.row: change.weight})
    expected = evaluate_from_scratch(TWO_PATH, {(a, TO, b) for a, b in edges if a != HUB})
    assert view == expected
    before = evaluate_from_scratch(TWO_PATH, {(a, TO, b) for a, b in edges})
    assert len(before) > SPOKES * SPOKES
    assert hub_tick == {row: -1 for row in before if row not in expected}


def _sample(scrape: str, name: str) -> float:
    return next(float(line.split()[-1]) for line in scrape.splitlines()
                if line.startswith(name + " "))


def test_a_lost_tick_in_pieces_is_caught_up(kafka_bootstrap: str, tmp_path: Path) -> None:
    """The worker is fenced (another producer takes its transactional id) just before the
    hub's retraction: that tick's transaction fails after its pieces were computed, the
    queries are owned anew and caught up from their committed views — every tick of both
    change streams passes the oracle."""
    config = isolated_config(kafka_bootstrap)
    admin = QueryAdmin(config)
    admin.add("paths", TWO_PATH)
    admin.add("tri", TRIANGLE)
    stream = _load(_graph(40)) + [[[keyword("db/retractEntity"), HUB]]]
    log = tmp_path / "w.log"
    worker = WorkerProcess(config, tmp_path / "snapshots", log,
                           env={"DELTALOG_TICK_MAX_DATOMS": "8"})
    worker.start()
    try:
        send_stream(config, stream[:-1], batch=len(stream))
        wait_committed(config, ["paths", "tri"], len(stream) - 2, worker)
        usurper = Producer(config.kafka(**{"transactional.id": transactional_id("w1")}))
        usurper.init_transactions(30)
        send_stream(config, stream[-1:])
        wait_committed(config, ["paths", "tri"], len(stream) - 1, worker)
    finally:
        worker.stop()
    assert "had pieces written: owned anew" in log.read_text()
    states = reference_states(stream)
    for query, text in (("paths", TWO_PATH), ("tri", TRIANGLE)):
        check_change_stream(text, committed_changes(config, query), states)
