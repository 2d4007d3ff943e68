"""Reading a compacted topic (queries, progress) as a table: the latest value per key."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from workers.config import WorkerConfig
from workers.kafka.consume import data_messages

POLL_S = 0.2  # one poll while following a topic


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    key: str
    value: bytes | None  # None: a tombstone
    offset: int


class CompactedReader:
    """Reads partition 0 of a topic from the beginning, ``read_committed``; ``catch_up``
    returns everything up to the current end, ``poll`` what arrived since."""

    def __init__(self, config: WorkerConfig, topic: str) -> None:
        self._consumer = Consumer(config.kafka(**{
            "group.id": f"deltalog-reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }))
        self._consumer.assign([TopicPartition(topic, 0, 0)])
        self.topic = topic

    def catch_up(self, timeout_s: float = 30.0) -> list[KeyedRecord]:
        """Every record up to the end of the partition as it is now."""
        _, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, 0),
                                                       timeout=timeout_s)
        records: list[KeyedRecord] = []
        # Aborted and control records leave gaps in offsets: the consumer's position tells.
        while self._position() < high:
            records += self._read(POLL_S)
        return records

    def poll(self) -> list[KeyedRecord]:
        return list(self._read(0))

    def _read(self, timeout_s: float) -> Iterator[KeyedRecord]:
        for message in data_messages(self._consumer.consume(500, timeout_s), self.topic):
            key = (message.key() or b"").decode()
            yield KeyedRecord(key, message.value(), message.offset() or 0)

    def _position(self) -> int:
        (partition,) = self._consumer.position([TopicPartition(self.topic, 0)])
        return max(partition.offset, 0)

    def close(self) -> None:
        self._consumer.close()


def latest(records: list[KeyedRecord]) -> dict[str, KeyedRecord]:
    """The table a compacted topic stands for: the last record per key, tombstones removed."""
    table: dict[str, KeyedRecord] = {}
    for record in records:
        if record.value is None:
            table.pop(record.key, None)
        else:
            table[record.key] = record
    return table
