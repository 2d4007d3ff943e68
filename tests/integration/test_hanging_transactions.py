"""A hanging transaction (``workers.kafka.hanging``): records on a partition the transaction
coordinator does not know the transaction wrote.  CI met one when the broker shut down while
a tick added partitions to its transaction; here the same state is made on purpose: a
transaction writes to a results topic, then to the progress topic, and while the broker is
stopped the coordinator's record of that second addition is cut from its log.  After the
restart the coordinator aborts what it knows and the progress partition stays held for ever
— until deltalog's sweep: the writer's own (a lost tick's partitions, as ``TickWriter._lost``
does) or a reader's (a worker whose read it holds up, as another writer)."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from tests.integration.pipeline import (
    TRIANGLE,
    committed_changes,
    committed_progress,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
)
from workers.config import WorkerConfig
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin, progress_table
from workers.kafka.sink import ResultSink, TransactionFailed
from workers.kafka.topics import Topics, create, ensure_topics
from workers.runtime.fencing import fence
from workers.runtime.process import WorkerProcess, transactional_id
from workers.runtime.worker import Worker
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka]
TIMEOUT_S = 30.0
BATCH_HEADER = struct.Struct(">qi")  # a record batch starts with its base offset and length
NOT_COMMITTED = b"not committed"  # the hanging transaction's records
LEADER_UNKNOWN = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)


def _topics(broker: LocalBroker) -> tuple[WorkerConfig, Topics]:
    config = isolated_config(broker.bootstrap_servers)
    topics = Topics(config.topic_prefix)
    with AdminClient(config.kafka()) as admin:
        ensure_topics(admin, topics, config.query_partitions)
        create(admin, topics.of_query("q"))
    return config, topics


def _leave_hanging(broker: LocalBroker, config: WorkerConfig, topics: Topics, writer: str,
                   held: str) -> Producer:
    """``writer`` commits a progress record (the progress then names it), then writes to
    q's results topic and the progress topic in a transaction the broker's restart leaves
    hanging on ``held``, the one of the two written second.  Returns that producer, for the
    test to keep until it has fenced it (dropped before, it would abort what it can)."""
    with ResultSink(config, topics, writer) as sink:
        sink.init()
        sink.begin()
        sink.progress("old", 0, 0)  # a query gone: the progress names the writer
        sink.commit()
    producer = Producer(config.kafka(**{"transactional.id": writer, "linger.ms": 0}))
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    first = topics.results("q") if held == topics.progress else topics.progress
    for topic in (first, held):  # two additions, in this order
        producer.produce(topic, NOT_COMMITTED, b"q")
        assert producer.flush(TIMEOUT_S) == 0
    broker.stop()
    _cut_last_batch(broker.log_dir / "__transaction_state-0")
    broker.start()
    return producer


def _cut_last_batch(partition: Path) -> None:
    """Drop the last record batch of a stopped broker's partition (here the coordinator's
    record that the progress topic joined the transaction), and the files the broker
    rebuilds from the log on its start."""
    (log,) = partition.glob("*.log")
    data, position, last = log.read_bytes(), 0, 0
    while position < len(data):
        last = position
        position += BATCH_HEADER.size + BATCH_HEADER.unpack_from(data, position)[1]
    with log.open("r+b") as handle:
        handle.truncate(last)
    for rebuilt in ("*.index", "*.timeindex", "*.snapshot"):
        for path in partition.glob(rebuilt):
            path.unlink()


def _held(config: WorkerConfig, topic: str) -> bool:
    """Whether the topic's partition has records beyond its last stable offset."""
    ends = {isolation: _end(config, topic, isolation)
            for isolation in ("read_committed", "read_uncommitted")}
    return bool(ends["read_committed"] < ends["read_uncommitted"])


def _released(config: WorkerConfig, topic: str) -> bool:
    """Whether the topic's partition is held no longer within ``TIMEOUT_S``: an abort
    returns once the coordinator has prepared it, and its markers — which move the last
    stable offset — are written after that."""
    deadline = time.monotonic() + TIMEOUT_S
    while _held(config, topic):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _end(config: WorkerConfig, topic: str, isolation: str) -> int:
    """The partition's end as a reader of that isolation sees it; asked again while its
    leader is not known yet, as right after the broker's restart."""
    consumer = Consumer(config.kafka(**{"group.id": "ends", "isolation.level": isolation}))
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:
            try:
                return int(consumer.get_watermark_offsets(TopicPartition(topic, 0),
                                                          timeout=TIMEOUT_S)[1])
            except KafkaException as error:
                if (error.args[0].code() not in LEADER_UNKNOWN
                        or time.monotonic() > deadline):
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


def _committed_values(config: WorkerConfig, topic: str) -> list[bytes | None]:
    """Every committed record's value in the topic's partition."""
    consumer = Consumer(config.kafka(**{"group.id": "values", "isolation.level":
                                        "read_committed", "enable.partition.eof": True}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    while (message := consumer.poll(TIMEOUT_S)) is not None and message.error() is None:
        values.append(message.value())
    consumer.close()
    end = None if message is None else message.error()
    assert end is not None and end.code() == KafkaError._PARTITION_EOF, (
        f"{topic} not read to its end")
    return values


def test_a_writer_ends_what_its_lost_transaction_left_hanging(own_broker: LocalBroker) -> None:
    config, topics = _topics(own_broker)
    writer = transactional_id("lost")
    hanging = _leave_hanging(own_broker, config, topics, writer, held=topics.progress)
    with ResultSink(config, topics, writer) as sink:
        sink.init()  # as TickWriter._lost: a new producer, whose init aborts what the
        # coordinator knows of the transaction — the results topic — and not the rest
        assert _released(config, topics.results("q"))
        assert _held(config, topics.progress)
        sink.sweep({topics.results("q"), topics.progress})
    assert _released(config, topics.progress)
    assert progress_table(config)["old"]["worker"] == writer
    hanging.purge()  # fenced: let go unclosed (closing raises that it was fenced)


def test_a_worker_held_up_by_a_hanging_transaction_ends_it(own_broker: LocalBroker,
                                                           tmp_path: Path) -> None:
    """The writer is gone: the worker's start reads the progress, held up until the
    progress stood still past ``hanging_after_s``; the worker then ends the transaction as
    the writers the progress names, and carries on exactly once."""
    config, topics = _topics(own_broker)
    hanging = _leave_hanging(own_broker, config, topics, transactional_id("gone"),
                             held=topics.progress)
    assert _held(config, topics.progress)
    QueryAdmin(config).add("tri", TRIANGLE)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=5)
    worker.start()
    stream = random_stream(seed=5, count=60)
    send_stream(config, stream, 5)
    wait_committed(config, ["tri"], len(stream) - 1, worker)
    worker.stop()
    assert "ended what deltalog-worker-gone may have left hanging" in worker.log.read_text()
    check_change_stream(TRIANGLE, committed_changes(config, "tri"),
                        reference_states(stream))
    hanging.purge()  # fenced: let go unclosed (closing raises that it was fenced)


def test_a_worker_restarted_ends_what_it_left_hanging_before_it_commits(
        own_broker: LocalBroker, tmp_path: Path) -> None:
    """A worker whose transaction hangs on a query's results topic is killed: restarted
    with its transactional id it owns the query again, and a commit of that id would end
    the hanging records as committed (Kafka ends a producer's open records with the next
    marker of the same producer id).  Its start aborts them first."""
    config, topics = _topics(own_broker)
    hanging = _leave_hanging(own_broker, config, topics, transactional_id("w1"),
                             held=topics.results("q"))
    assert _held(config, topics.results("q"))
    QueryAdmin(config).add("q", TRIANGLE)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", worker_id="w1",
                           tick_max_tx=5)
    worker.start()
    stream = random_stream(seed=7, count=30)
    send_stream(config, stream, 5)
    wait_committed(config, ["q"], len(stream) - 1, worker)
    worker.stop()
    assert NOT_COMMITTED not in _committed_values(config, topics.results("q"))
    check_change_stream(TRIANGLE, committed_changes(config, "q"), reference_states(stream))
    hanging.purge()


def test_a_worker_fenced_while_it_starts_sweeps_again_and_carries_on(
        own_broker: LocalBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker restarted after a crash is no member of the group while it starts: a worker
    taking its queries up fences its transactional id meanwhile (``fence_absent``), and the
    start's sweep fails, fenced.  The worker takes a new producer and sweeps before its first
    commit instead of ending (CI's chaos run: a restarted worker exited 2)."""
    config = isolated_config(own_broker.bootstrap_servers,
                             snapshot_dir=tmp_path / "snapshots", tick_max_tx=5)
    QueryAdmin(config).add("tri", TRIANGLE)
    stream = random_stream(seed=11, count=40)
    send_stream(config, stream, 5)
    real_sweep = ResultSink.sweep
    fenced: list[str] = []

    def fenced_first(sink: ResultSink, topics: set[str]) -> None:
        if not fenced:
            fenced.append(sink.worker)
            fence(config, sink.worker)  # as another worker's fence_absent would
        real_sweep(sink, topics)

    monkeypatch.setattr(ResultSink, "sweep", fenced_first)
    with Worker(config) as worker:
        worker.start()
        deadline = time.monotonic() + 120
        while committed_progress(config, ["tri"]) < len(stream) - 1:
            assert time.monotonic() < deadline, committed_progress(config, ["tri"])
            worker.tick()
    assert fenced == [transactional_id(config.worker_id)]
    check_change_stream(TRIANGLE, committed_changes(config, "tri"), reference_states(stream))


def _cut_commit_marker(partition: Path) -> None:
    """Drop the partition's last batch, which must be a transaction marker: the state the
    broker left when it skipped a committed transaction's markers."""
    (log,) = partition.glob("*.log")
    data, position, last = log.read_bytes(), 0, 0
    while position < len(data):
        last = position
        position += BATCH_HEADER.size + BATCH_HEADER.unpack_from(data, position)[1]
    attributes = struct.unpack_from(">h", data, last + BATCH_HEADER.size + 9)[0]
    assert attributes & 0x20, f"{partition.name}: its last batch is no marker"
    _cut_last_batch(partition)


@pytest.mark.parametrize("seed", [3])
def test_a_committed_tick_whose_markers_the_broker_skipped_is_redone(
        own_broker: LocalBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        seed: int) -> None:
    """A tick the worker saw committed, whose markers Kafka skipped (4.3.1, a one-node
    cluster's controlled shutdown: "Couldn't find leader endpoint ... can be skipped", then
    CompleteCommit), hangs on its partitions like a lost transaction's.  Made here by cutting
    those markers from the stopped broker's logs; then the next tick is lost.  Its sweep
    aborts the committed tick on every partition and every query is caught up from what is
    committed: the change stream stays exact (before, the sweep aborted it where the lost
    tick wrote and nothing redid it, or a later commit committed it where it did not — the
    PostgreSQL sink's broker-restart test, a tick twice)."""
    config = isolated_config(own_broker.bootstrap_servers,
                             snapshot_dir=tmp_path / "snapshots", tick_max_tx=5)
    topics = Topics(config.topic_prefix)
    QueryAdmin(config).add("tri", TRIANGLE)
    stream = random_stream(seed=seed, count=60)
    send_stream(config, stream[:30], 5)
    lost: list[int] = []
    real_send_offsets = ResultSink.send_offsets

    def lose_once(sink: ResultSink, offsets: Any, group_metadata: Any) -> None:
        if lost == [0]:
            lost.append(1)
            raise TransactionFailed("Kafka transaction failed: lost on purpose")
        real_send_offsets(sink, offsets, group_metadata)

    monkeypatch.setattr(ResultSink, "send_offsets", lose_once)
    with Worker(config) as worker:
        worker.start()
        deadline = time.monotonic() + 120
        while committed_progress(config, ["tri"]) < 29:
            assert time.monotonic() < deadline, committed_progress(config, ["tri"])
            worker.tick()
        written = {topic for topic in (topics.results("tri"), topics.view("tri"),
                                       topics.progress)}
        own_broker.stop()
        for topic in sorted(written):
            _cut_commit_marker(own_broker.log_dir / f"{topic}-0")
        own_broker.start()
        assert _held(config, topics.results("tri"))
        lost.append(0)  # the next tick's transaction is lost
        send_stream(config, stream[30:], 5)
        deadline = time.monotonic() + 180
        while lost != [0, 1]:  # progress is held until the worker's sweep ends the tick
            assert time.monotonic() < deadline, lost
            worker.tick()
        while committed_progress(config, ["tri"]) < len(stream) - 1:
            assert time.monotonic() < deadline, committed_progress(config, ["tri"])
            worker.tick()
    check_change_stream(TRIANGLE, committed_changes(config, "tri"), reference_states(stream))
