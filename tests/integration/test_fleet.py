"""A fleet of workers shares the queries through the consumer group on the queries topic:
a worker killed or hung loses its queries to the others, a new worker takes some, a paused
owner that comes back cannot commit — and every query's committed change stream still
integrates to the oracle with no tick twice."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer

from tests.integration.pipeline import (
    REACH_COUNT,
    TRIANGLE,
    TWO_PATH,
    Record,
    committed_changes,
    committed_progress,
    http_get,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
    with_bad_records,
)
from workers.config import WorkerConfig
from workers.db.resolve import allocated_id
from workers.edn import keyword
from workers.kafka.avro import AvroCodec
from workers.kafka.broker import free_port
from workers.kafka.clients import QueryAdmin, TxProducer
from workers.kafka.compacted import CompactedReader
from workers.kafka.topics import Topics
from workers.kafka.views import read_views
from workers.runtime import ports as ports_module
from workers.runtime import worker as worker_module
from workers.runtime.ownership import HEARTBEATS_PER_SESSION, Ownership
from workers.runtime.process import WorkerProcess
from workers.runtime.status import fleet_status
from workers.runtime.worker import Worker
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.serial]
SHAPES = (TRIANGLE, TWO_PATH, REACH_COUNT)
QUERIES = {f"q{i}": SHAPES[i % len(SHAPES)] for i in range(8)}


def _fleet(config: WorkerConfig, tmp_path: Path, ids: Sequence[str]) -> list[WorkerProcess]:
    return [WorkerProcess(config, tmp_path / f"snapshots-{i}", tmp_path / f"{i}.log",
                          worker_id=i, tick_max_tx=3, snapshot_interval_s=1) for i in ids]


def _owners(config: WorkerConfig) -> dict[str, list[tuple[int, str]]]:
    """Every progress record ever committed, per query: (tx_last, worker)."""
    codec = AvroCodec("progress")
    reader = CompactedReader(config, Topics(config.topic_prefix).progress)
    owners: dict[str, list[tuple[int, str]]] = {}
    for record in reader.catch_up():
        progress = codec.decode(record.value or b"")
        owners.setdefault(record.key, []).append((progress["tx_last"], progress["worker"]))
    reader.close()
    return owners


def _check_all(config: WorkerConfig, stream: list[Any]) -> None:
    states = reference_states(stream)
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)


def test_killed_worker_loses_its_queries_and_a_new_one_takes_some(kafka_bootstrap: str,
                                                                  tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    w1, w2, w3 = _fleet(config, tmp_path, ["w1", "w2", "w3"])
    w1.start()
    w2.start()
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    stream = random_stream(seed=21, count=900)
    sender = threading.Thread(target=send_stream, args=(config, stream, 1, 1 / 40))
    sender.start()
    wait_committed(config, list(QUERIES), 60, w2)
    w1.kill()
    killed = time.monotonic()
    wait_committed(config, list(QUERIES), 120, w2)
    print(f"queries producing again {time.monotonic() - killed:.1f} s after kill -9")
    w3.start()
    sender.join()
    wait_committed(config, list(QUERIES), len(stream) - 1, w2)
    status = fleet_status(config)
    assert {w.client_id for w in status.workers} == {"deltalog-w2", "deltalog-w3"}
    assert {q.name for q in status.queries} == set(QUERIES)
    assert all(q.owner in ("deltalog-w2", "deltalog-w3") and q.lag == 0
               for q in status.queries), status.text()
    for worker in (w2, w3):
        worker.stop()
    _check_all(config, stream)
    workers = {w for records in _owners(config).values() for _, w in records}
    assert {"deltalog-worker-w1", "deltalog-worker-w2", "deltalog-worker-w3"} <= workers


def test_a_paused_owner_is_fenced_when_it_comes_back(kafka_bootstrap: str,
                                                     tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    w1, w2 = _fleet(config, tmp_path, ["w1", "w2"])
    w1.start()
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    stream = random_stream(seed=5, count=240)
    wait_committed(config, list(QUERIES), -1, w1)
    w2.start()
    sender = threading.Thread(target=send_stream, args=(config, stream, 1, 1 / 40))
    sender.start()
    wait_committed(config, list(QUERIES), 40, w1)
    w1.pause()  # it hangs, maybe mid-tick: w2 takes every query after the session timeout
    try:
        wait_committed(config, list(QUERIES), 120, w2)
    finally:
        w1.resume()
    sender.join()
    wait_committed(config, list(QUERIES), len(stream) - 1, w2)
    for worker in (w1, w2):
        worker.stop()
    _check_all(config, stream)
    assert "revoked query partitions" in w1.log.read_text()


def test_a_worker_is_ready_only_once_caught_up(kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    QueryAdmin(config).add("tri", TRIANGLE)
    stream = random_stream(seed=3, count=1500)
    send_stream(config, stream, batch=len(stream))
    port = free_port()
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=10,
                           metrics_port=port, env={"DELTALOG_READY_LAG_TX": "20"})
    worker.start()
    reasons = []
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline and worker.alive(), reasons[-3:]
        status, body = http_get(f"http://127.0.0.1:{port}/health/ready")
        if status == 200:
            break
        if status == 503:
            reasons.append(json.loads(body)["reason"])
        time.sleep(0.05)
    assert committed_progress(config, ["tri"]) >= len(stream) - 1 - 20
    assert any("behind the log" in r or "wait" in r for r in reasons), reasons
    assert http_get(f"http://127.0.0.1:{port}/health/live")[0] == 200
    assert b"deltalog_consumer_lag_records" in http_get(f"http://127.0.0.1:{port}/metrics")[1]
    worker.stop()



def test_a_worker_is_not_ready_while_it_takes_queries_up(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between a partition's registrations being read and the first tick including its
    queries being committed (the progress and views read, the catch-up tick), the worker
    is not ready: its queries produce nothing yet.  Asked while it reads the views."""
    config = isolated_config(kafka_bootstrap, snapshot_dir=tmp_path / "snapshots")
    QueryAdmin(config).add("tri", TRIANGLE)
    send_stream(config, random_stream(seed=5, count=50), batch=50)
    asked: list[tuple[bool, str]] = []
    with Worker(config) as worker:
        def read_views_asking(*args: Any, **kwargs: Any) -> Any:
            asked.append(worker.readiness())
            return read_views(*args, **kwargs)

        monkeypatch.setattr(ports_module, "read_views", read_views_asking)
        worker.start()
        deadline = time.monotonic() + 120
        while not worker.readiness()[0]:
            assert time.monotonic() < deadline, worker.readiness()
            worker.tick()
        assert committed_progress(config, ["tri"]) == 49  # ready once its tick committed
    assert asked and asked[0] == (False, "taking queries up: their progress, views, first tick")


def test_a_take_up_commits_at_the_position_before_what_was_sent_meanwhile(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """A query taken up while transactions wait in the log is committed at the worker's
    position first, and those transactions by the next ticks: the queries a takeover moves
    produce again without waiting for the survivor to apply what was sent meanwhile."""
    config = isolated_config(kafka_bootstrap, snapshot_dir=tmp_path / "snapshots",
                             tick_max_tx=1)
    admin = QueryAdmin(config)
    admin.add("tri", TRIANGLE)
    stream = random_stream(seed=17, count=200)
    send_stream(config, stream[:20], batch=20)
    with Worker(config) as worker:
        worker.start()
        _tick_until(worker, config, ["tri"], 19)
        send_stream(config, stream[20:], batch=len(stream))  # one a tick from now on
        admin.add("two", TWO_PATH)
        _tick_until(worker, config, ["tri", "two"], len(stream) - 1)
    owners = _owners(config)
    taken_at = owners["two"][0][0]
    assert 19 <= taken_at < len(stream) - 1  # taken up while transactions were waiting
    assert [tx for tx, _ in owners["tri"]].count(taken_at) == 2  # its tick applied none
    states = reference_states(stream)
    for name, query in (("tri", TRIANGLE), ("two", TWO_PATH)):
        check_change_stream(query, committed_changes(config, name), states)


def test_a_tick_refused_at_a_rebalance_is_sent_again_exactly_once(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A tick whose offsets the group refuses because its generation changed meanwhile (a
    takeover's survivor, mid-tick at the rebalance) is sent again with the next tick, by a
    new producer: exactly once."""
    config = isolated_config(kafka_bootstrap, snapshot_dir=tmp_path / "snapshots")
    QueryAdmin(config).add("tri", TRIANGLE)
    stream = random_stream(seed=19, count=120)
    send_stream(config, stream[:60], batch=60)
    handed: list[Any] = []  # the group metadata commits were given
    stale: list[Any] = []  # given to the next commit instead, once
    real_metadata = Ownership.group_metadata

    def metadata(ownership: Ownership) -> Any:
        handed.append(stale.pop() if stale else real_metadata(ownership))
        return handed[-1]

    monkeypatch.setattr(Ownership, "group_metadata", metadata)
    with Worker(config) as worker:
        worker.start()
        _tick_until(worker, config, ["tri"], 59)
        before_rebalances = handed[-1]
        given: list[list[int]] = []  # the partitions the joiner was given
        joiner = threading.Thread(target=_join_and_leave, args=(config, given))
        joiner.start()
        while joiner.is_alive():  # the worker takes part in both rebalances as it ticks
            worker.tick()
        joiner.join()
        assert given and given[0], "the joiner was never given a partition"
        _tick_until_sole_member(worker, config)
        stale.append(before_rebalances)
        send_stream(config, stream[60:], batch=60)
        with caplog.at_level(logging.WARNING, logger=worker_module.__name__):
            _tick_until(worker, config, ["tri"], len(stream) - 1)
    lost = [r.getMessage() for r in caplog.records if "tick not committed" in r.getMessage()]
    assert len(lost) == 1 and "generation" in lost[0], lost
    check_change_stream(TRIANGLE, committed_changes(config, "tri"), reference_states(stream))


def _tick_until(worker: Worker, config: WorkerConfig, queries: Sequence[str],
                tx_last: int) -> None:
    deadline = time.monotonic() + 120
    while committed_progress(config, queries) < tx_last:
        assert time.monotonic() < deadline, committed_progress(config, queries)
        worker.tick()


def _join_and_leave(config: WorkerConfig, given: list[list[int]]) -> None:
    """Join the workers' group until given a partition (into ``given``), then leave: two
    rebalances, and a generation the worker's earlier commits' metadata no longer matches.
    The consumer is closed whatever happens: one dropped while in the group hangs in
    librdkafka's destroy, and with it the whole test run.  It heartbeats as often as a worker
    does: at librdkafka's default (3 s, the whole session) it timed its own session out
    every 3.5 s and was never given a partition (a quarter of the runs here)."""
    group = config.group_id or f"{config.topic_prefix}.workers"
    consumer = Consumer(config.kafka(**{
        "group.id": group, "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": config.session_timeout_ms,
        "heartbeat.interval.ms": max(config.session_timeout_ms // HEARTBEATS_PER_SESSION, 250),
        "enable.auto.commit": False}))
    try:
        consumer.subscribe([Topics(config.topic_prefix).queries])
        deadline = time.monotonic() + 120
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        given.append([tp.partition for tp in consumer.assignment()])
    finally:
        consumer.close()


def _tick_until_sole_member(worker: Worker, config: WorkerConfig) -> None:
    """Tick until the worker holds every queries partition again."""
    deadline = time.monotonic() + 120
    while [len(w.partitions) for w in fleet_status(config).workers] != [
            config.query_partitions]:
        assert time.monotonic() < deadline, fleet_status(config).text()
        worker.tick()


def test_over_its_memory_ceiling_a_worker_slows_down_and_loses_nothing(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    QueryAdmin(config).add("tri", TRIANGLE)
    stream = random_stream(seed=9, count=300)
    send_stream(config, stream, batch=len(stream))
    port = free_port()
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=100,
                           metrics_port=port, env={"DELTALOG_MEMORY_LIMIT_MB": "1"})
    worker.start()
    wait_committed(config, ["tri"], len(stream) - 1, worker)
    scrape = http_get(f"http://127.0.0.1:{port}/metrics")[1].decode()
    worker.stop()
    assert "deltalog_backpressure_throttled 1.0" in scrape
    check_change_stream(TRIANGLE, committed_changes(config, "tri"), reference_states(stream))


def test_tx_log_dead_letters_are_written_once_whoever_owns_partition_0(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Bad records (undecodable, refused by the engine) among good ones, while the owner of
    queries partition 0 (the dead letters' writer) is killed twice mid-stream: one dead
    letter per bad record, none for a good one."""
    config = isolated_config(kafka_bootstrap)
    workers = {w.worker_id: w for w in _fleet(config, tmp_path, ["w1", "w2"])}
    records, bad = with_bad_records(seed=13, count=700, every=9)
    dead = killing_the_dead_letters_writer_twice(config, workers, QUERIES, records, bad, 20)
    assert dead == {offset: 1 for offset in bad}


def killing_the_dead_letters_writer_twice(
        config: WorkerConfig, workers: dict[str, WorkerProcess], queries: dict[str, str],
        records: Sequence[Record], bad: set[int], ahead: int) -> Counter[int]:
    """``w1`` takes ``queries`` up alone; ``records`` are sent while ``w2`` joins and the
    owner of queries partition 0 (the dead letters' writer) is killed twice, each time
    started again once the other worker committed ``ahead`` more; the log's dead letters
    by offset, once both committed the whole stream.  The workers are stopped after."""
    workers["w1"].start()
    admin = QueryAdmin(config)
    for name, query in queries.items():
        admin.add(name, query)
    names = list(queries)
    sender = threading.Thread(target=_send, args=(config, records, 1 / 40))
    sender.start()
    try:
        wait_committed(config, names, 2 * ahead, workers["w1"])
        workers["w2"].start()
        for _ in range(2):
            killed = workers[_settled_owner_of_partition_0(config)]
            killed.kill()
            survivor = next(w for w in workers.values() if w is not killed)
            # ``ahead`` more, or the stream's end if it comes first (the sender may be done)
            wait_committed(config, names, min(committed_progress(config, names) + ahead,
                                              len(records) - 1), survivor)
            killed.start()
        sender.join()
        for worker in workers.values():
            wait_committed(config, names, len(records) - 1, worker)
        return Counter(d["offset"] for d in _dead_letters(config, len(bad))
                       if d["topic"] == Topics(config.topic_prefix).tx)
    finally:
        for worker in workers.values():
            worker.stop()


def _send(config: WorkerConfig, records: Sequence[Record],
          pause_s: float) -> None:
    with TxProducer(config) as producer:
        for record in records:
            if isinstance(record, bytes):
                producer.send_raw(record)
            else:
                producer.send(record)
            producer.flush()
            time.sleep(pause_s)


def _settled_owner_of_partition_0(config: WorkerConfig) -> str:
    """The worker id of the owner of queries partition 0, once both workers hold some."""
    deadline = time.monotonic() + 120
    while True:
        held = {w.client_id: w.partitions for w in fleet_status(config).workers}
        if len(held) == 2 and all(held.values()):
            return next(c for c, p in held.items() if 0 in p).removeprefix("deltalog-")
        assert time.monotonic() < deadline, f"query partitions held as {held}"
        time.sleep(0.2)


def _dead_letters(config: WorkerConfig, at_least: int) -> list[dict[str, Any]]:
    """The committed dead letters, read to the topic's end: ``at_least`` of them."""
    return _committed(config, Topics(config.topic_prefix).dlq, "dead_letter", at_least)


def _committed(config: WorkerConfig, topic: str, schema: str,
               at_least: int) -> list[dict[str, Any]]:
    """The committed records of ``topic`` (Avro ``schema``), read to its end: ``at_least``."""
    codec = AvroCodec(schema)
    with CompactedReader(config, topic) as reader:
        records = [codec.decode(r.value or b"") for r in reader.catch_up()]
    assert len(records) >= at_least, records
    return records


def test_tempids_get_the_same_ids_on_every_worker_and_one_report_each(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Transactions naming tempids among plain ones, while the owner of queries partition 0
    (the reports' writer) is killed twice and started again (it replays from its snapshot):
    one committed report per such transaction, its ids the log's function of the offset, and
    a query over the new entities — moved between workers, caught up — integrates to rows
    of exactly those ids."""
    config = isolated_config(kafka_bootstrap)
    workers = {w.worker_id: w for w in _fleet(config, tmp_path, ["w1", "w2"])}
    records: list[Record] = []
    named: dict[int, dict[Any, int]] = {}  # offset -> the ids its report must say
    people: set[tuple[Any, ...]] = set()  # the rows of PEOPLE at the end
    for i, tx in enumerate(random_stream(seed=8, count=400)):
        records.append(tx)
        if i % 7 == 3:
            offset = len(records)
            named[offset] = {f"p{i}": allocated_id(offset, 0), -1: allocated_id(offset, 1)}
            people |= {(allocated_id(offset, 0), f"n{i}"), (allocated_id(offset, 1), "x")}
            records.append([{DB_ID: f"p{i}", NAME: f"n{i}", FRIEND: -1}, [ADD, -1, NAME, "x"]])
    queries = {**QUERIES, "people": PEOPLE}
    killing_the_dead_letters_writer_twice(config, workers, queries, records, set(), 20)
    reports = _committed(config, Topics(config.topic_prefix).reports, "tx_report", len(named))
    assert Counter(r["tx"] for r in reports) == dict.fromkeys(named, 1)
    assert {r["tx"]: {t["tempid"]: t["id"] for t in r["tempids"]} for r in reports} == named
    view: dict[Any, int] = {}
    for change in committed_changes(config, "people"):
        view[change.row] = view.get(change.row, 0) + change.weight
    assert {row for row, weight in view.items() if weight} == people


ADD, DB_ID, NAME, FRIEND = (keyword(k) for k in ("db/add", "db/id", "p/name", "p/friend"))
PEOPLE = "[:find ?e ?n :where [?e :p/name ?n]]"

