"""One ``CompactedReader`` over several topics: every committed record of each, nothing of an
aborted transaction, a topic that does not exist reads as empty, ``poll`` follows on."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from tests.integration.test_broker import produce_in_transactions
from workers.config import from_env
from workers.kafka.compacted import CompactedReader, KeyedRecord, latest
from workers.runtime.fencing import fence

pytestmark = pytest.mark.kafka

NewTopicFactory = Callable[..., str]
FLUSH_S = 30.0


def test_one_reader_reads_several_topics_to_their_end(kafka_config: dict[str, str],
                                                      new_topic: NewTopicFactory) -> None:
    keyed, transactional = new_topic(partitions=2), new_topic()
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    producer = Producer(kafka_config)
    for i in range(10):
        producer.produce(keyed, key=f"k{i % 4}".encode(), value=f"v{i}".encode())
    producer.flush(FLUSH_S)
    produce_in_transactions(kafka_config, transactional, committed=["c1", "c2"],
                            aborted=["a1"])
    reader = CompactedReader(from_env({}, bootstrap_servers=kafka_config["bootstrap.servers"]),
                             keyed, transactional, missing)
    try:
        records = reader.catch_up()
        by_topic = {topic: [r for r in records if r.topic == topic]
                    for topic in (keyed, transactional, missing)}
        assert {key: r.value for key, r in latest(by_topic[keyed]).items()} == {
            "k0": b"v8", "k1": b"v9", "k2": b"v6", "k3": b"v7"}
        assert [r.value for r in by_topic[transactional]] == [b"c1", b"c2"]
        assert by_topic[missing] == []
        assert reader.catch_up() == []  # nothing new
        producer.produce(transactional, value=b"later")
        producer.flush(FLUSH_S)
        assert [r.value for r in reader.catch_up()] == [b"later"]
    finally:
        reader.close()


def test_a_read_held_up_by_a_dead_writer_s_transaction_ends_it_by_fencing(
        kafka_config: dict[str, str], new_topic: NewTopicFactory) -> None:
    """A writer "dies" with a transaction open (a minute before the coordinator would end
    it): the reader, held up, is told so with what it read; fencing the writer's id there
    ends the transaction at once, and the read returns the committed records only."""
    topic = new_topic()
    dead_id = f"dead-{uuid.uuid4().hex[:8]}"
    dead = Producer({**kafka_config, "transactional.id": dead_id,
                     "transaction.timeout.ms": 60_000})
    dead.init_transactions(FLUSH_S)
    dead.begin_transaction()
    dead.produce(topic, key=b"k", value=b"committed")
    dead.commit_transaction(FLUSH_S)
    dead.begin_transaction()
    dead.produce(topic, key=b"k", value=b"left open")
    dead.flush(FLUSH_S)
    config = from_env({}, bootstrap_servers=kafka_config["bootstrap.servers"])
    held: list[list[bytes | None]] = []

    def end_it(records: list[KeyedRecord]) -> None:
        held.append([r.value for r in records])
        fence(config, dead_id)

    started = time.monotonic()
    with CompactedReader(config, topic) as reader:
        records = reader.catch_up(on_held=end_it)
    assert time.monotonic() - started < 30  # not the minute of the transaction timeout
    assert held == [[b"committed"]]
    assert [r.value for r in records] == [b"committed"]
