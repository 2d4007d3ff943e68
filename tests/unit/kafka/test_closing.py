"""workers.kafka.closing: clients close in bounded time, without a broker too."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from workers.kafka.closing import Closing, close_producer

NO_BROKER = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}


def test_a_producer_holding_a_record_no_broker_takes_closes_after_the_flush_time() -> None:
    producer = Producer(NO_BROKER)
    producer.produce("t", b"never acknowledged")
    started = time.monotonic()
    close_producer(producer, 0.2)  # librdkafka's own close would wait for ever
    assert time.monotonic() - started < 5
    with pytest.raises(RuntimeError, match="closed"):
        producer.produce("t", b"after")


def test_with_closes_on_the_way_out_when_the_block_raises_too() -> None:
    closed: list[str] = []

    class Client(Closing):
        def close(self) -> None:
            closed.append("closed")

    with pytest.raises(ValueError), Client():
        raise ValueError
    assert closed == ["closed"]
