"""A query's view topic against the real broker: once retention has really deleted the
beginning of the change streams, a takeover's catch-up, ``deltalog tail --view`` and a
subscriber (snapshot, then the changes after it) still give the oracle's views; a deployment
whose view topic is missing gets it built."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from tests.integration.pipeline import (
    REACH_COUNT,
    TRIANGLE,
    TWO_PATH,
    WAIT_S,
    http_get,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
)
from tests.integration.test_cli import deltalog
from workers.config import WorkerConfig
from workers.edn import dumps
from workers.errors import WorkersError
from workers.kafka.broker import free_port
from workers.kafka.clients import Change, QueryAdmin, Snapshot, follow, subscribe
from workers.kafka.compacted import CompactedReader
from workers.kafka.sink import ResultSink
from workers.kafka.topics import Topics, create
from workers.kafka.views import READ_ATTEMPTS, read_views, read_within_s
from workers.runtime.process import WorkerProcess
from workers.testing import evaluate_from_scratch
from workers.zset import add_into

pytestmark = pytest.mark.kafka
BAG = "{:find [?a] :with [?b] :where [[?a :g/to ?b]]}"  # out-degrees as multiplicities
QUERIES = {"tri": TRIANGLE, "paths": TWO_PATH, "reach": REACH_COUNT, "degree": BAG}
# Roll a segment every 100 ms and delete it 100 ms later (checked every second by the test
# broker): what a week of retention does to a months-old deployment.
TINY_RETENTION = {"segment.ms": "100", "retention.ms": "100"}
# Or compact the change streams as soon as the cleaner looks (an operator's mistake).
EAGER_COMPACTION = {"cleanup.policy": "compact", "segment.ms": "100",
                    "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0",
                    "delete.retention.ms": "100"}
DELETED_WAIT_S = 60.0
TAIL_VIEW_S = 10.0  # long enough for tail --view to start, read the view and print it
Tick = tuple[int, int]


@pytest.mark.serial
@pytest.mark.parametrize("lost", ["deleted", "compacted"])
def test_views_survive_retention_a_takeover_and_tail(kafka_bootstrap: str, tmp_path: Path,
                                                     lost: str) -> None:
    """The change streams lose their history (``lost``) before a takeover; a subscriber
    follows the deleted ones (a compacted stream is no change stream to follow)."""
    # One queries partition: w1 owns every query, w2 none until w1 dies.
    config = isolated_config(kafka_bootstrap, query_partitions=1)
    topics = Topics(config.topic_prefix)
    port = free_port()
    w1, w2 = (WorkerProcess(config, tmp_path / f"snapshots-{i}", tmp_path / f"{i}.log",
                            worker_id=i, tick_max_tx=tick_max_tx, metrics_port=metrics_port,
                            env={"DELTALOG_QUERY_PARTITIONS": "1"})
              for i, tick_max_tx, metrics_port in (("w1", 3, None), ("w2", 50, port)))
    w1.start()
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    wait_committed(config, list(QUERIES), -1, w1)
    streams = [topics.results(name) for name in QUERIES]
    _configure(config, streams, TINY_RETENTION if lost == "deleted" else EAGER_COMPACTION)
    stream = random_stream(seed=17, count=500)
    send_stream(config, stream[:300], batch=5, pause_s=0.02)
    wait_committed(config, list(QUERIES), 299, w1)
    states = reference_states(stream)
    if lost == "deleted":
        _wait_deleted(config, streams)
    else:
        _wait_compacted(config, states[299])

    subscribers = {name: _Subscriber(config, name) for name in QUERIES if lost == "deleted"}
    for subscriber in subscribers.values():
        subscriber.snapshot_taken.wait(DELETED_WAIT_S)
    w2.start()
    _wait_position(w2, port, 299)
    w1.kill()
    # w2 reads these before the group gives it w1's queries (after the session timeout): it
    # is ahead of their progress and catches them up from their views, the streams deleted.
    send_stream(config, stream[300:], batch=len(stream) - 300)
    wait_committed(config, list(QUERIES), len(stream) - 1, w2)
    w2.stop()
    for subscriber in subscribers.values():
        subscriber.stop.set()
        subscriber.thread.join()

    for name, subscriber in subscribers.items():
        assert subscriber.error is None, subscriber.error
        assert subscriber.snapshot is not None and subscriber.snapshot.tx >= 0
        _check_subscription(QUERIES[name], subscriber.snapshot, subscriber.changes, states)
    for name, query in QUERIES.items():
        final = _snapshot(config, name)
        assert final.tx == len(stream) - 1
        assert final.rows == evaluate_from_scratch(query, states[-1]), name
    assert w2.log.read_text().count("caught up from tx") == len(QUERIES)
    env = {**os.environ, "DELTALOG_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "DELTALOG_TOPIC_PREFIX": config.topic_prefix}
    expected = evaluate_from_scratch(TRIANGLE, states[-1])
    assert _tail_view(env, "tri") == sorted(dumps(row) for row in expected)


def test_a_missing_view_is_built_from_the_current_result(kafka_bootstrap: str,
                                                         tmp_path: Path) -> None:
    """A deployment from before view topics: the worker resumes its queries and builds their
    views from their current results, without reading the change streams."""
    config = isolated_config(kafka_bootstrap)
    topics = Topics(config.topic_prefix)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=5)
    worker.start()
    admin = QueryAdmin(config)
    for name in ("tri", "degree"):
        admin.add(name, QUERIES[name])
    stream = random_stream(seed=23, count=120)
    send_stream(config, stream, batch=len(stream))
    wait_committed(config, ["tri", "degree"], len(stream) - 1, worker)
    worker.stop()
    _delete(config, [topics.view("tri"), topics.view("degree")])
    worker.start()
    states = reference_states(stream)
    for name in ("tri", "degree"):
        snapshot = _snapshot(config, name)
        assert snapshot.tx == len(stream) - 1
        assert snapshot.rows == evaluate_from_scratch(QUERIES[name], states[-1]), name
    worker.stop()
    assert "its view is built from its current result" in worker.log.read_text()


def test_a_query_registered_anew_replaces_its_view_and_ends_subscriptions(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=5)
    worker.start()
    admin = QueryAdmin(config)
    admin.add("q", TWO_PATH)
    stream = random_stream(seed=29, count=160)
    send_stream(config, stream[:80], batch=80)
    wait_committed(config, ["q"], 79, worker)
    subscriber = _Subscriber(config, "q")
    subscriber.snapshot_taken.wait(DELETED_WAIT_S)
    admin.add("q", TRIANGLE)  # the same name, another query: the view is replaced
    send_stream(config, stream[80:], batch=80)
    wait_committed(config, ["q"], len(stream) - 1, worker)
    subscriber.thread.join(DELETED_WAIT_S)  # it ends by itself
    worker.stop()
    states = reference_states(stream)
    assert not subscriber.thread.is_alive() and subscriber.error is None
    assert subscriber.snapshot is not None
    _check_subscription(TWO_PATH, subscriber.snapshot, subscriber.changes, states)
    snapshot = _snapshot(config, "q")
    assert snapshot.rows == evaluate_from_scratch(TRIANGLE, states[-1])


def test_a_view_read_slower_than_the_tombstones_retention_is_read_again(
        kafka_bootstrap: str) -> None:
    """The cleaner drops a tombstone ``delete.retention.ms`` after compacting it, so a read
    slower than :func:`read_within_s` may have missed a row's leaving: it is read again, and one
    that stays that slow fails rather than give a view that may be wrong.  The clock is the
    test's: each read takes as long as it says."""
    config = isolated_config(kafka_bootstrap)
    topics = Topics(config.topic_prefix)
    create(AdminClient(config.kafka()), topics.of_query("q"))
    with ResultSink(config, topics, f"{config.topic_prefix}-writer") as sink:
        sink.init()
        for tx, weights in enumerate([{(1,): 1, (2,): 1}, {(1,): 0}]):
            sink.begin()
            for row, weight in weights.items():
                sink.view("q", 0, row, weight, tx)
            sink.view_marker("q", 0, tx)
            sink.commit()
    within_s = read_within_s(config)
    readings = iter([0.0, within_s + 1, 100.0, 100.0])  # slow, then in time
    view = read_views(config, ["q"], clock=lambda: next(readings))["q"]
    assert (view.rows, view.registration, view.tx) == ({(2,): 1}, 0, 1)
    assert next(readings, None) is None  # read twice
    slow = itertools.count(step=within_s + 1)
    with pytest.raises(WorkersError, match=r"view_tombstones_ms"):
        read_views(config, ["q"], clock=lambda: next(slow))
    assert next(slow) == 2 * READ_ATTEMPTS * (within_s + 1)


class _Subscriber:
    """``subscribe`` in a thread: its snapshot and every change it yields, until ``stop``."""

    def __init__(self, config: WorkerConfig, query: str) -> None:
        self.snapshot: Snapshot | None = None
        self.changes: list[Change] = []
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.snapshot_taken = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(config, query), daemon=True)
        self.thread.start()

    def _run(self, config: WorkerConfig, query: str) -> None:
        try:
            for item in subscribe(config, query, poll_s=0.1, stop=self.stop):
                if isinstance(item, Snapshot):
                    self.snapshot = item
                    self.snapshot_taken.set()
                else:
                    self.changes.append(item)
        except BaseException as error:  # reported by the test, not lost in the thread
            self.error = error
            self.snapshot_taken.set()


def _check_subscription(query: str, snapshot: Snapshot, changes: list[Change],
                        states: list[Any]) -> None:
    """The snapshot is the oracle's result at its transaction, and so is the view after
    every tick of changes that follows it (ticks in order, none overlapping)."""
    view = dict(snapshot.rows)
    assert view == evaluate_from_scratch(query, states[snapshot.tx])
    ticks: dict[Tick, dict[Any, int]] = defaultdict(dict)
    for change in changes:
        add_into(ticks[(change.tx_first, change.tx_last)], {change.row: change.weight})
    last = snapshot.tx
    for (tx_first, tx_last), rows in ticks.items():  # in the order they were committed
        assert tx_first > last, f"tick {tx_first}..{tx_last} after {last}"
        add_into(view, rows)
        assert view == evaluate_from_scratch(query, states[tx_last]), (tx_first, tx_last)
        last = tx_last


def _snapshot(config: WorkerConfig, query: str) -> Snapshot:
    """Where a subscription starts now."""
    with contextlib.closing(subscribe(config, query)) as items:
        snapshot = next(items)
    assert isinstance(snapshot, Snapshot)
    return snapshot


def _wait_position(worker: WorkerProcess, port: int, tx: int) -> None:
    """Until the worker has applied the log up to ``tx`` (its queries or not)."""
    deadline = time.monotonic() + WAIT_S
    while f"deltalog_last_committed_tx {float(tx)}" not in http_get(
            f"http://127.0.0.1:{port}/metrics")[1].decode():
        assert worker.alive() and time.monotonic() < deadline, worker.log
        time.sleep(0.2)


def _configure(config: WorkerConfig, topics: list[str], settings: dict[str, str]) -> None:
    admin = AdminClient(config.kafka())
    resources = [ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        for key, value in settings.items()]) for topic in topics]
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)


def _wait_deleted(config: WorkerConfig, topics: list[str]) -> None:
    """Until retention has deleted the beginning of every topic (its low watermark moved)."""
    deadline = time.monotonic() + DELETED_WAIT_S
    with CompactedReader(config, *topics) as reader:
        while not all(low > 0 for low in reader.low_watermarks()):
            assert time.monotonic() < deadline, reader.low_watermarks()
            time.sleep(0.5)


def _wait_compacted(config: WorkerConfig, datoms: Any) -> None:
    """Until the cleaner has compacted every query's change stream so much that integrating
    it no longer gives the query's result on ``datoms``."""
    deadline = time.monotonic() + DELETED_WAIT_S
    while any(_integrated(config, name) == evaluate_from_scratch(query, datoms)
              for name, query in QUERIES.items()):
        assert time.monotonic() < deadline
        time.sleep(1.0)


def _integrated(config: WorkerConfig, query: str) -> dict[Any, int]:
    """The change stream integrated from its first record (what compaction breaks)."""
    view: dict[Any, int] = {}
    for change in follow(config, query, stop_at_end=True, from_beginning=True):
        add_into(view, {change.row: change.weight})
    return view


def _delete(config: WorkerConfig, topics: list[str]) -> None:
    admin = AdminClient(config.kafka())
    for future in admin.delete_topics(topics).values():
        future.result(30)
    deadline = time.monotonic() + DELETED_WAIT_S
    while set(topics) & set(admin.list_topics(timeout=30).topics):
        assert time.monotonic() < deadline
        time.sleep(0.2)


def _tail_view(env: dict[str, str], name: str) -> list[str]:
    """The rows of the last table ``deltalog tail --view`` prints (it follows forever, so
    it is stopped by the timeout)."""
    try:
        output = deltalog(env, "tail", name, "--view", timeout_s=TAIL_VIEW_S).stdout
    except subprocess.TimeoutExpired as stopped:
        output = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else stopped.stdout
    screen = (output or "").split("\033[2J\033[H")[-1].splitlines()
    assert screen and " @ tx " in screen[0], output
    return [line.strip() for line in screen[1:]]
