"""A fleet on Spark writes its state once per tick: the workers share one state location
(``spark_sharing=fleet``); the owner of the queries topic's partition 0 writes it, the others
follow it.  The writer is killed twice mid-stream (bad records among the good ones): the
other takes writing over where the state stands, and every query's committed change stream
still integrates to the oracle, with one dead letter per bad record — and the state is one
epoch, never written again from the start.  And a writer paused past the session timeout
(a zombie) publishes nothing once another took writing over (``publish.py``)."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.pipeline import (
    REACH_COUNT,
    TRIANGLE,
    TWO_PATH,
    committed_changes,
    committed_progress,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
    with_bad_records,
)
from tests.integration.test_fleet import (
    _settled_owner_of_partition_0,
    killing_the_dead_letters_writer_twice,
)
from workers.config import WorkerConfig
from workers.executors.spark.publish import newest
from workers.executors.spark.state import Manifest, filesystem
from workers.kafka.clients import QueryAdmin
from workers.runtime.process import WorkerProcess
from workers.runtime.status import fleet_status
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.serial]
QUERIES = {"tri": TRIANGLE, "paths": TWO_PATH, "reach": REACH_COUNT, "tri2": TRIANGLE}


def _fleet(config: WorkerConfig, tmp_path: Path, *ids: str) -> dict[str, WorkerProcess]:
    """Workers (not started) sharing one Spark state, ``tmp_path / "state"``."""
    return {i: WorkerProcess(config, tmp_path / f"snapshots-{i}", tmp_path / f"{i}.log",
                             worker_id=i, tick_max_tx=5, executor="spark",
                             spark_master="local[1]", spark_memory_values=8,
                             spark_state=str(tmp_path / "state"), spark_sharing="fleet")
            for i in ids}


def test_a_fleet_writes_one_state_and_hands_writing_over_when_its_writer_dies(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    state = tmp_path / "state"
    workers = _fleet(config, tmp_path, "w1", "w2")
    records, bad = with_bad_records(seed=17, count=300, every=11)
    dead = killing_the_dead_letters_writer_twice(config, workers, QUERIES, records, bad, 15)
    states = reference_states([r if isinstance(r, list) and offset not in bad else []
                               for offset, r in enumerate(records)])  # offsets kept
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)
    assert dead == {offset: 1 for offset in bad}
    logs = {i: w.log.read_text() for i, w in workers.items()}
    assert all("writing the shared Spark state" in text for text in logs.values())
    assert any("following the shared Spark state" in text for text in logs.values())
    published = newest(*filesystem(str(state)))
    assert published is not None
    manifest = json.loads(published[1])
    epochs = {name.split("-")[1] for name in (p.name for p in state.iterdir())
              if name.startswith(("batch-", "base-"))}
    assert epochs == {manifest["epoch"]}  # one epoch: the state was never written anew


def _holders(config: WorkerConfig, count: int) -> dict[str, tuple[int, ...]]:
    """The query partitions each worker holds, once ``count`` workers hold some."""
    deadline = time.monotonic() + 120
    while True:
        held = {w.client_id.removeprefix("deltalog-"): w.partitions
                for w in fleet_status(config).workers if w.partitions}
        if len(held) == count:
            return held
        assert time.monotonic() < deadline, f"query partitions held as {held}"
        time.sleep(0.2)


def _writing(worker: WorkerProcess) -> int:
    """The length of ``worker``'s log once it says the worker writes the shared state now
    (given partition 0, it leads once it has caught up)."""
    deadline = time.monotonic() + 120
    while True:
        log = worker.log.read_text()
        roles = [line for line in log.splitlines() if "the shared Spark state" in line]
        if roles and "writing the shared Spark state" in roles[-1]:
            return len(log)
        assert worker.alive() and time.monotonic() < deadline, worker.tail(40)
        time.sleep(0.2)


def test_a_fleet_of_three_keeps_its_writer_while_others_join_and_leave(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Three workers on one state: ``w3`` joins mid-stream, then a follower leaves.  The
    group rebalances cooperatively (only the partitions that change owner move): the leave
    moves only the leaver's partitions, so the writer (the owner of queries partition 0)
    writes on without stepping down; and every change stream is the oracle's."""
    config = isolated_config(kafka_bootstrap)
    workers = _fleet(config, tmp_path, "w1", "w2", "w3")
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    names = list(QUERIES)
    stream = random_stream(seed=23, count=300)
    try:
        workers["w1"].start()
        workers["w2"].start()
        sender = threading.Thread(target=send_stream, args=(config, stream, 1, 1 / 40))
        sender.start()
        wait_committed(config, names, 30, workers["w1"])
        _holders(config, 2)
        workers["w3"].start()
        joined = _holders(config, 3)
        writer = next(w for w, held in joined.items() if 0 in held)
        wait_committed(config, names, committed_progress(config, names) + 30, workers[writer])
        leaver = next(w for w in joined if w != writer)
        written_before = _writing(workers[writer])
        workers[leaver].stop()
        left = _holders(config, 2)
        sender.join()
        for worker in (w for w in workers.values() if w.worker_id != leaver):
            wait_committed(config, names, len(stream) - 1, worker)
    finally:
        for worker in workers.values():
            worker.stop()
    states = reference_states(stream)
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)
    assert 0 in left[writer] and leaver not in left
    since_the_leave = workers[writer].log.read_text()[written_before:]
    assert "the shared Spark state" not in since_the_leave, since_the_leave  # no step down


def test_a_writer_paused_past_the_session_timeout_publishes_nothing_when_resumed(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Issue 39, item 2: the writer is stopped (SIGSTOP) past the session timeout, the other
    worker takes writing over (it claims the state: a publication of its own), then the
    first is resumed.  Every publication a watcher sees comes after the one before it (the
    state's version and position never go back, one epoch); the first publishes nothing —
    it stops writing (its publication refused) or steps down before it publishes; and
    every query's committed change stream is the oracle's."""
    config = isolated_config(kafka_bootstrap)
    state = tmp_path / "state"
    workers = _fleet(config, tmp_path, "w1", "w2")
    names = list(QUERIES)
    stream = random_stream(seed=23, count=240)
    seen: list[Manifest] = []
    watching = threading.Event()
    watcher = threading.Thread(target=_watch, args=(str(state), seen, watching))
    try:
        workers["w1"].start()
        admin = QueryAdmin(config)
        for name, query in QUERIES.items():
            admin.add(name, query)
        wait_committed(config, names, -1, workers["w1"])
        workers["w2"].start()
        sender = threading.Thread(target=send_stream, args=(config, stream, 1, 1 / 40))
        sender.start()
        wait_committed(config, names, 40, workers["w1"])
        writer = workers[_settled_owner_of_partition_0(config)]
        other = next(w for w in workers.values() if w is not writer)
        watcher.start()
        claims = other.log.read_text().count("writing the shared Spark state")
        writer.pause()
        paused_at = len(writer.log.read_bytes())
        try:
            _wait_for(lambda: other.log.read_text().count("writing the shared Spark state")
                      > claims, other)
            wait_committed(config, names, committed_progress(config, names) + 20, other)
        finally:
            writer.resume()
        sender.join()
        deadline = time.monotonic() + 300
        while committed_progress(config, names) < len(stream) - 1:
            assert time.monotonic() < deadline, committed_progress(config, names)
            if not writer.alive():  # it stopped writing: its supervisor starts it again
                writer.start()
            assert other.alive(), other.tail(40)
            time.sleep(0.2)
    finally:
        watching.set()
        for worker in workers.values():
            worker.stop()
        if watcher.is_alive():
            watcher.join()
    states = reference_states(stream)
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)
    resumed = writer.log.read_bytes()[paused_at:].decode(errors="replace")
    assert ("another writer wrote the Spark state" in resumed
            or "following the shared Spark state" in resumed), resumed[-3000:]
    assert len(seen) > 2 and len({m.epoch for m in seen}) == 1
    for before, after in itertools.pairwise(seen):
        assert before.serial < after.serial
        assert before.stamp is not None and after.stamp is not None
        assert (before.version, before.stamp.marks.position) <= (
            after.version, after.stamp.marks.position), (before, after)


def _watch(location: str, seen: list[Manifest], done: threading.Event) -> None:
    """Each newest publication of the state at ``location``, as often as it can look."""
    fs, root = filesystem(location)
    while not done.is_set():
        published = newest(fs, root)
        if published is not None and (not seen or seen[-1].serial != published[0]):
            seen.append(Manifest.from_json(location, published[1]))
        time.sleep(0.005)


def _wait_for(condition: Callable[[], bool], worker: WorkerProcess) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert worker.alive(), worker.tail(40)
        assert time.monotonic() < deadline, worker.tail(40)
        time.sleep(0.2)
