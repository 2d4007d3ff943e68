"""A fresh worker on an empty disk starts from the fleet's shared snapshot store: after 10^5
transactions it replays only the log after the newest snapshot — counted by its own
metrics — and the change streams, written by the first worker and then by it, pass the
oracle tick by tick."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.integration.pipeline import (
    TRIANGLE,
    WAIT_S,
    committed_changes,
    http_get,
    isolated_config,
    random_stream,
    send_stream,
    wait_committed,
)
from workers.edn import keyword
from workers.kafka.broker import free_port
from workers.kafka.clients import QueryAdmin
from workers.runtime.checkpoint import SnapshotStore
from workers.runtime.process import WorkerProcess
from workers.testing import Datom, ReferenceDb, check_change_stream

pytestmark = [pytest.mark.kafka]
HISTORY_TX = 100_000
GAP_TX = 2_000  # sent while no worker runs: the fresh worker replays at least these
LATER_TX = 300  # sent once the fresh worker runs: its ticks must be right too
NODES = 8
DEGREE = "{:find [?a (count ?b)] :where [[?a :g/to ?b]]}"
QUERIES = {"tri": TRIANGLE, "degree": DEGREE}


class _States(Sequence[Any]):
    """The database after transaction ``i``, computed as the oracle asks for increasing
    ``i`` (10^5 databases would not fit side by side)."""

    def __init__(self, stream: Sequence[list[list[Any]]]) -> None:
        self._stream, self._db, self._at = stream, ReferenceDb(), -1

    def __len__(self) -> int:
        return len(self._stream)

    def __getitem__(self, i: Any) -> frozenset[Datom]:
        assert i >= self._at, "the oracle reads ticks in order"
        while self._at < i:
            self._at += 1
            self._db.transact(self._stream[self._at])
        return frozenset(self._db.datoms)


def test_a_fresh_worker_replays_only_the_log_after_the_shared_snapshot(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    shared = tmp_path / "shared-snapshots"
    # strings in the value dictionary (retracted later, they stay there, and in snapshots)
    names = [[keyword("db/add"), node, keyword("name"), f"node-{node}"] for node in range(NODES)]
    stream = [names, *random_stream(seed=17, count=HISTORY_TX + LATER_TX - 1, nodes=NODES)]
    history, gap, later = (stream[:HISTORY_TX - GAP_TX], stream[HISTORY_TX - GAP_TX:HISTORY_TX],
                           stream[HISTORY_TX:])
    with QueryAdmin(config) as admin:
        for name, query in QUERIES.items():
            admin.add(name, query)

    first = WorkerProcess(config, shared, tmp_path / "w1.log", worker_id="w1",
                          snapshot_interval_s=1)
    first.start()
    wait_committed(config, list(QUERIES), -1, first)
    send_stream(config, history, batch=20_000)
    wait_committed(config, list(QUERIES), len(history) - 1, first)
    # A snapshot at most every second, after a tick or once idle: wait for one past the
    # history's half (it may commit the second half within a second), not hope for it.
    _wait_snapshot(shared, HISTORY_TX // 2, first)
    first.stop()
    send_stream(config, gap, batch=GAP_TX)
    snapshot_tx = SnapshotStore.at(shared).newest()
    assert snapshot_tx is not None and 0 <= snapshot_tx < len(history)

    port = free_port()
    fresh = WorkerProcess(config, tmp_path / "empty-disk", tmp_path / "w2.log", worker_id="w2",
                          snapshot_url=shared.as_uri(), metrics_port=port)
    fresh.start()
    metrics = _wait_position(port, HISTORY_TX - 1, fresh)
    replayed = _total(metrics, "deltalog_tx_consumed_total") + _total(
        metrics, "deltalog_tx_refused_total")
    assert f"loaded snapshot at tx {snapshot_tx}" in fresh.log.read_text()
    assert GAP_TX <= replayed == HISTORY_TX - 1 - snapshot_tx < HISTORY_TX // 2
    assert not (tmp_path / "empty-disk").exists()

    send_stream(config, later, batch=LATER_TX)
    wait_committed(config, list(QUERIES), len(stream) - 1, fresh)
    fresh.stop()
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), _States(stream))


def _wait_position(port: int, tx: int, worker: WorkerProcess) -> str:
    """The worker's metrics once its database includes transaction ``tx``."""
    deadline = time.monotonic() + WAIT_S
    while True:
        _, body = http_get(f"http://127.0.0.1:{port}/metrics")
        metrics = body.decode()
        if _total(metrics, "deltalog_last_committed_tx") >= tx:
            return metrics
        assert worker.alive(), f"worker died: {worker.tail()}"
        assert time.monotonic() < deadline, f"not at tx {tx}: {worker.tail()}"
        time.sleep(0.2)


def _wait_snapshot(store: Path, past_tx: int, worker: WorkerProcess) -> None:
    """Until the store's newest snapshot is past transaction ``past_tx``."""
    deadline = time.monotonic() + WAIT_S
    while (newest := SnapshotStore.at(store).newest()) is None or newest <= past_tx:
        assert worker.alive(), f"worker died: {worker.tail()}"
        assert time.monotonic() < deadline, f"no snapshot past tx {past_tx}: {worker.tail()}"
        time.sleep(0.2)


def _total(metrics: str, name: str) -> int:
    """The sum of a metric's samples over its labels (0 when it has none yet)."""
    samples = re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", metrics, re.MULTILINE)
    return int(sum(float(value) for value in samples))
