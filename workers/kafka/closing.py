"""Kafka clients closed when their work ends, not whenever the garbage collector gets to them:
a client left open keeps its connections, logs the broker's absence once the broker is gone
(``make demo`` printed such lines by the hundred), and a consumer group member left open holds
its partitions until its session times out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self

from confluent_kafka import Producer


class Closing(ABC):
    """A wrapper of Kafka clients that ``with`` closes on the way out."""

    @abstractmethod
    def close(self) -> None:
        """Close the clients this object opened."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def close_producer(producer: Producer, flush_s: float) -> None:
    """Close ``producer`` in bounded time: what it still holds gets ``flush_s`` to be
    acknowledged, the rest is dropped (librdkafka's own close waits for every record, for
    ever while no broker answers)."""
    producer.flush(flush_s)
    producer.purge()
    producer.close()
