"""One ``CompactedReader`` over several topics: every committed record of each, nothing of an
aborted transaction, a topic that does not exist reads as empty, ``poll`` follows on."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from tests.integration.test_broker import produce_in_transactions
from workers.config import from_env
from workers.kafka.compacted import CompactedReader, latest

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
