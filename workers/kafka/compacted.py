"""Reading a compacted topic (queries, progress) as a table: the latest value per key."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.consume import data_messages

POLL_S = 0.2  # one poll while following a topic
OPEN_TRANSACTION_WAIT_S = 120.0  # well above any transaction.timeout.ms deltalog sets
METADATA_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    key: str
    value: bytes | None  # None: a tombstone
    offset: int
    partition: int = 0


class CompactedReader:
    """Reads every partition of a topic from the beginning, ``read_committed``; ``catch_up``
    returns everything up to the current end, ``poll`` what arrived since.  A key always
    lands in the same partition, so the order per key is kept."""

    def __init__(self, config: WorkerConfig, topic: str) -> None:
        settings = {"group.id": f"deltalog-reader-{uuid.uuid4()}", "enable.auto.commit": False,
                    "enable.partition.eof": True}
        self._consumer = Consumer(config.kafka(**settings, **{
            "isolation.level": "read_committed"}))
        # Only for the end offsets: a read_committed consumer's end is the last stable
        # offset, which stops before a transaction still open (say, of a worker killed
        # mid-tick) and hides what other workers committed after it.
        self._ends = Consumer(config.kafka(**settings, **{
            "isolation.level": "read_uncommitted"}))
        metadata = self._consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S)
        self.partitions = sorted(metadata.topics[topic].partitions)
        self._consumer.assign([TopicPartition(topic, p, 0) for p in self.partitions])
        self.topic = topic

    def catch_up(self, timeout_s: float = 30.0) -> list[KeyedRecord]:
        """Every committed record up to the end of each partition as it is now — waiting
        for the transactions open then to end (committed, aborted, or timed out)."""
        deadline = time.monotonic() + timeout_s + OPEN_TRANSACTION_WAIT_S
        highs = {p: self._end(p, deadline) for p in self.partitions}
        records: list[KeyedRecord] = []
        # Aborted and control records leave gaps in offsets: the consumer's position tells.
        while any(self._position(p) < high for p, high in highs.items()):
            if time.monotonic() > deadline:
                raise WorkersError(f"reading {self.topic}: a transaction stayed open for "
                                   f"{OPEN_TRANSACTION_WAIT_S:.0f} s", code=ErrorCode.KAFKA)
            records += self._read(POLL_S)
        return records

    def _end(self, partition: int, deadline: float) -> int:
        """The partition's high watermark; a topic just created may not be known to this
        client yet (``Unknown partition``): asked again until ``deadline``."""
        while True:
            try:
                return int(self._ends.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=POLL_S * 25)[1])
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(POLL_S)

    def poll(self) -> list[KeyedRecord]:
        return list(self._read(0))

    def _read(self, timeout_s: float) -> Iterator[KeyedRecord]:
        for message in data_messages(self._consumer.consume(500, timeout_s), self.topic):
            key = (message.key() or b"").decode(errors="replace")  # names; row keys unused
            yield KeyedRecord(key, message.value(), message.offset() or 0,
                              message.partition() or 0)

    def _position(self, partition: int) -> int:
        (position,) = self._consumer.position([TopicPartition(self.topic, partition)])
        return max(position.offset, 0)

    def close(self) -> None:
        self._consumer.close()
        self._ends.close()


def latest(records: list[KeyedRecord]) -> dict[str, KeyedRecord]:
    """The table a compacted topic stands for: the last record per key, tombstones removed."""
    table: dict[str, KeyedRecord] = {}
    for record in records:
        if record.value is None:
            table.pop(record.key, None)
        else:
            table[record.key] = record
    return table
