"""Reading topics from their beginning to their end: a compacted topic (queries, progress) as
a table, the latest value per key; a results topic as the changes committed to it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.closing import Closing
from workers.kafka.consume import data_messages

POLL_S = 0.05  # one poll: consume() waits this long unless a full batch arrives first
OPEN_TRANSACTION_WAIT_S = 120.0  # well above any transaction.timeout.ms deltalog sets
METADATA_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    key: str
    value: bytes | None  # None: a tombstone
    offset: int
    partition: int = 0
    topic: str = ""


class CompactedReader(Closing):
    """Reads every partition of ``topics`` from the beginning, ``read_committed``;
    ``catch_up`` returns everything up to the current end, ``poll`` what arrived since.  A
    key always lands in the same partition, so the order per key is kept.  A topic that does
    not exist reads as empty.  One reader for many topics pays the consumer's start and its
    polls once (a worker taking over reads the results topics of all its new queries)."""

    def __init__(self, config: WorkerConfig, *topics: str) -> None:
        settings = {"group.id": f"deltalog-reader-{uuid.uuid4()}", "enable.auto.commit": False,
                    "enable.partition.eof": True}
        self._consumer = Consumer(config.kafka(**settings, **{
            "isolation.level": "read_committed"}))
        # Only for the end offsets: a read_committed consumer's end is the last stable
        # offset, which stops before a transaction still open (say, of a worker killed
        # mid-tick) and hides what other workers committed after it.
        self._ends = Consumer(config.kafka(**settings, **{
            "isolation.level": "read_uncommitted"}))
        self.partitions: list[TopicPartition] = []
        for topic in topics:
            metadata = self._consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S)
            self.partitions += [TopicPartition(topic, p)
                                for p in sorted(metadata.topics[topic].partitions)]
        self._consumer.assign([TopicPartition(tp.topic, tp.partition, 0)
                               for tp in self.partitions])
        self.topics = topics

    def catch_up(self, timeout_s: float = 30.0,
                 on_held: Callable[[list[KeyedRecord]], None] | None = None
                 ) -> list[KeyedRecord]:
        """Every committed record up to the end of each partition as it is now — waiting
        for the transactions open then to end (committed, aborted, or timed out).  Once the
        reading is held up by an open transaction, ``on_held`` is called (once) with the
        records read so far: it may end that transaction (``workers.runtime.fencing``)."""
        deadline = time.monotonic() + timeout_s + OPEN_TRANSACTION_WAIT_S
        highs = [self._end(tp, deadline) for tp in self.partitions]
        records: list[KeyedRecord] = []
        # Aborted and control records leave gaps in offsets: the consumer's position tells.
        while behind := [(tp, high) for tp, position, high in zip(
                self.partitions, self._positions(), highs, strict=True) if position < high]:
            if time.monotonic() > deadline:
                raise WorkersError(f"reading {', '.join(self.topics)}: a transaction stayed "
                                   f"open for {OPEN_TRANSACTION_WAIT_S:.0f} s",
                                   code=ErrorCode.KAFKA)
            read = list(self._read(POLL_S))
            records += read
            if not read and on_held is not None and self._held(behind):
                on_held(records)
                on_held = None
        return records

    def _held(self, behind: list[tuple[TopicPartition, int]]) -> bool:
        """Whether a partition's last stable offset (the end a ``read_committed`` consumer
        is told) is below its high watermark and the consumer has reached it."""
        for tp, high in behind:
            stable = self._consumer.get_watermark_offsets(tp, timeout=METADATA_TIMEOUT_S)[1]
            (position,) = self._consumer.position([tp])
            if stable < high and position.offset >= stable:
                return True
        return False

    def _end(self, partition: TopicPartition, deadline: float) -> int:
        """The partition's high watermark; a topic just created may not be known to this
        client yet (``Unknown partition``): asked again until ``deadline``."""
        while True:
            try:
                return int(self._ends.get_watermark_offsets(partition, timeout=5.0)[1])
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(POLL_S)

    def poll(self) -> list[KeyedRecord]:
        return list(self._read(0))

    def _read(self, timeout_s: float) -> Iterator[KeyedRecord]:
        for message in data_messages(self._consumer.consume(500, timeout_s),
                                     ", ".join(self.topics)):
            key = (message.key() or b"").decode(errors="replace")  # names; row keys unused
            yield KeyedRecord(key, message.value(), message.offset() or 0,
                              message.partition() or 0, message.topic() or "")

    def _positions(self) -> list[int]:
        if not self.partitions:
            return []
        return [max(tp.offset, 0) for tp in self._consumer.position(self.partitions)]

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
