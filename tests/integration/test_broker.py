"""The Kafka broker the tests and ``deltalog broker`` use behaves like Kafka.

Round trip through a consumer group, transactions (read_committed hides aborted records),
restart on the same data directory, pause/resume, and a clear error without Java.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from tests.fixtures.kafka import wait_for_leaders
from workers.kafka import broker as broker_module
from workers.kafka.broker import BrokerError, LocalBroker

pytestmark = pytest.mark.kafka

NewTopicFactory = Callable[..., str]
# Longest a test waits for records it expects; a local broker delivers in milliseconds.
READ_TIMEOUT_S = 30.0
POLL_TIMEOUT_S = 0.5


def _consumer(config: dict[str, str], **extra: str | bool) -> Consumer:
    return Consumer({**config, "group.id": f"test-{uuid.uuid4().hex[:8]}",
                     "auto.offset.reset": "earliest", **extra})


def read_all(config: dict[str, str], topic: str, partitions: int = 1,
             isolation: str = "read_committed") -> list[str]:
    """Every value in ``topic`` up to the end of each partition (the LSO for read_committed)."""
    consumer = _consumer(config, **{"isolation.level": isolation, "enable.partition.eof": True,
                                    "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    values: list[str] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + READ_TIMEOUT_S
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = consumer.poll(POLL_TIMEOUT_S)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition())
            elif error is not None:
                raise AssertionError(f"consume failed: {error}")
            else:
                values.append(message.value().decode())
    finally:
        consumer.close()
    assert len(at_end) == partitions, f"did not reach the end of {topic} in {READ_TIMEOUT_S} s"
    return values


def produce_in_transactions(config: dict[str, str], topic: str, committed: list[str],
                            aborted: list[str]) -> None:
    """Produce ``aborted`` in a transaction that aborts, then ``committed`` in one that commits."""
    producer = Producer({**config, "transactional.id": f"test-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(READ_TIMEOUT_S)
    for values, finish in ((aborted, producer.abort_transaction),
                           (committed, producer.commit_transaction)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value.encode())
        producer.flush(READ_TIMEOUT_S)
        finish(READ_TIMEOUT_S)


def test_round_trip_through_a_consumer_group(kafka_config: dict[str, str],
                                             new_topic: NewTopicFactory) -> None:
    topic = new_topic(partitions=2)
    sent = {f"key-{i}": f"value-{i}" for i in range(20)}
    producer = Producer(kafka_config)
    for key, value in sent.items():
        producer.produce(topic, key=key.encode(), value=value.encode())
    assert producer.flush(READ_TIMEOUT_S) == 0

    consumer = _consumer(kafka_config)
    consumer.subscribe([topic])
    received: dict[str, str] = {}
    deadline = time.monotonic() + READ_TIMEOUT_S
    try:
        while len(received) < len(sent) and time.monotonic() < deadline:
            message = consumer.poll(POLL_TIMEOUT_S)
            if message is not None and message.error() is None:
                received[message.key().decode()] = message.value().decode()
    finally:
        consumer.close()
    assert received == sent


def test_read_committed_sees_committed_and_not_aborted(kafka_config: dict[str, str],
                                                       new_topic: NewTopicFactory) -> None:
    topic = new_topic()
    produce_in_transactions(kafka_config, topic, committed=["c1", "c2"], aborted=["a1", "a2"])

    assert read_all(kafka_config, topic, isolation="read_committed") == ["c1", "c2"]
    # The aborted records are really in the log: only the isolation level hides them.
    assert read_all(kafka_config, topic, isolation="read_uncommitted") == ["a1", "a2", "c1", "c2"]


def test_restart_on_the_same_data_dir_keeps_topic_and_committed_records(tmp_path: Path) -> None:
    data_dir = tmp_path / "kafka"
    broker = LocalBroker(data_dir=data_dir)
    try:
        broker.start()
        config = {"bootstrap.servers": broker.bootstrap_servers}
        topic = "restart-test"
        admin = AdminClient(config)
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[
            topic].result(READ_TIMEOUT_S)
        wait_for_leaders(admin, topic, 1)
        produce_in_transactions(config, topic, committed=["kept"], aborted=["dropped"])
        broker.stop()
        assert (data_dir / "broker.log").exists(), "an explicit data_dir is kept"

        broker.start()  # same object: same port, so the old bootstrap string still works
        assert topic in AdminClient(config).list_topics(timeout=READ_TIMEOUT_S).topics
        assert read_all(config, topic) == ["kept"]
    finally:
        broker.stop()


def test_a_port_taken_before_the_broker_binds_it_is_chosen_anew(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A port free when chosen can be taken before the JVM binds it (CI: another process's
    connection got it as its local port): the broker starts on new ports."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind((broker_module.HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        chosen = iter([port])
        free_port = broker_module.free_port
        monkeypatch.setattr(broker_module, "free_port", lambda: next(chosen, 0) or free_port())
        with LocalBroker() as broker:
            assert broker.port != port
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            assert admin.list_topics(timeout=READ_TIMEOUT_S).brokers


def test_pause_freezes_the_broker_and_resume_continues_it() -> None:
    with LocalBroker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.list_topics(timeout=READ_TIMEOUT_S)
        broker.pause()
        with pytest.raises(KafkaException) as frozen:
            admin.list_topics(timeout=1.0)
        # No answer: the request times out, or (when the client was between connections) the
        # connection attempt to the frozen broker fails first — both mean it is frozen.
        assert frozen.value.args[0].code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT)
        broker.resume()
        assert admin.list_topics(timeout=READ_TIMEOUT_S).brokers


def test_missing_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(BrokerError, match="Java 17 or newer is needed"):
        LocalBroker(data_dir=tmp_path).start()
