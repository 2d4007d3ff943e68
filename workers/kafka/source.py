"""TxSource: the transaction log read in ticks, from a position ("next offset to read")."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from workers.config import WorkerConfig
from workers.kafka.closing import Closing
from workers.kafka.consume import arrived, data_messages


@dataclass(frozen=True, slots=True)
class TxRecord:
    """One record of ``deltalog.tx``: its offset is the transaction id."""

    offset: int
    value: bytes
    appended_s: float = 0.0  # when the broker appended it (Unix seconds; the lag's age)


class TxSource(Closing):
    """Reads partition 0 of the tx topic (the total order) with ``read_committed``."""

    def __init__(self, config: WorkerConfig, topic: str, position: int) -> None:
        self._consumer = Consumer(config.kafka(**{
            "group.id": f"deltalog-worker-{config.worker_id}",  # never committed: progress is ours
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": False,
            # A position the log no longer has must stop the worker, not skip history.
            "auto.offset.reset": "error",
        }))
        self._consumer.assign([TopicPartition(topic, 0, position)])
        self._pending: deque[TxRecord] = deque()
        self._end = -1
        self.topic = topic

    def next_batch(self, max_count: int, max_bytes: int, max_wait_s: float,
                   until: int | None = None) -> list[TxRecord]:
        """What has arrived, up to ``max_count`` records and ``max_bytes`` bytes (at least
        one) and none past offset ``until``; wait at most ``max_wait_s`` only when nothing
        has.  Ticks stay small at low load (latency) and grow under load (throughput);
        records beyond the bounds wait for the next call."""
        if len(self._pending) < max_count:
            self._take(arrived(self._consumer, max_count - len(self._pending),
                               0.0 if self._pending else max_wait_s))
        batch: list[TxRecord] = []
        size = 0
        while self._pending and len(batch) < max_count:
            if until is not None and self._pending[0].offset > until:
                break
            size += len(self._pending[0].value)
            if batch and size > max_bytes:
                break
            batch.append(self._pending.popleft())
        return batch

    def end(self) -> int:
        """The offset after the last committed transaction in the log, as the consumer last
        heard it (-1 before it has; a broker away does not make it fail)."""
        try:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, 0),
                                                           cached=True)
        except KafkaException:
            return self._end
        self._end = max(self._end, int(high))
        return self._end

    def _take(self, messages: list[Message]) -> None:
        for message in data_messages(messages, self.topic):
            _, appended_ms = message.timestamp()
            self._pending.append(TxRecord(message.offset() or 0, message.value() or b"",
                                          max(appended_ms, 0) / 1000))

    def close(self) -> None:
        self._consumer.close()
