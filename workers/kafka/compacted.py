"""Reading topics from their beginning to their end: a compacted topic (queries, progress) as
a table, the latest value per key; a results topic as the changes committed to it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.closing import Closing
from workers.kafka.consume import data_messages
from workers.kafka.hanging import hanging_after_s

POLL_S = 0.05  # one poll: consume() waits this long unless a full batch arrives first
OPEN_TRANSACTION_WAIT_S = 120.0  # well above any transaction.timeout.ms deltalog sets
METADATA_TIMEOUT_S = 30.0
# librdkafka's prefetch ahead of the reader (its default: 64 MiB).  A view read folds records
# as they come; what sits in the queue is memory of the worker's start or takeover on top.
PREFETCH_KIB = 16 << 10


@dataclass(frozen=True, slots=True)
class KeyedRecord:
    key: str
    value: bytes | None  # None: a tombstone
    offset: int
    partition: int = 0
    topic: str = ""
    raw_key: bytes = b""  # the key as written (a view's rows are keyed by Avro bytes)


class CompactedReader(Closing):
    """Reads every partition of ``topics`` from the beginning, ``read_committed``;
    ``catch_up`` returns everything up to the current end, ``poll`` what arrived since.  A
    key always lands in the same partition, so the order per key is kept.  A topic that does
    not exist reads as empty.  One reader for many topics pays the consumer's start and its
    polls once (a worker taking over reads the results topics of all its new queries)."""

    def __init__(self, config: WorkerConfig, *topics: str) -> None:
        settings = {"group.id": f"deltalog-reader-{uuid.uuid4()}", "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "queued.max.messages.kbytes": PREFETCH_KIB}
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
        # From the first record still stored: retention may have deleted the first offsets.
        self._consumer.assign([TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING)
                               for tp in self.partitions])
        self.topics = topics
        self._hanging_after_s = hanging_after_s(config)

    def catch_up(self, timeout_s: float = 30.0,
                 on_held: Callable[[list[KeyedRecord]], None] | None = None,
                 on_hanging: Callable[[list[KeyedRecord], list[TopicPartition]], None]
                 | None = None) -> list[KeyedRecord]:
        """Every committed record up to the end of each partition as it is now — waiting
        for the transactions open then to end (committed, aborted, or timed out).  Once the
        reading is held up by an open transaction, ``on_held`` is called (once) with the
        records read so far: it may end that transaction (``workers.runtime.fencing``);
        ``on_hanging`` as :meth:`read_to_end`'s, with the records read so far."""
        records: list[KeyedRecord] = []
        for record in self.read_to_end(
                timeout_s, None if on_held is None else lambda: on_held(records),
                None if on_hanging is None else lambda held: on_hanging(records, held)):
            records.append(record)
        return records

    def read_to_end(self, timeout_s: float = 30.0, on_held: Callable[[], None] | None = None,
                    on_hanging: Callable[[list[TopicPartition]], None] | None = None
                    ) -> Iterator[KeyedRecord]:
        """:meth:`catch_up` record by record, none kept here: for a reader that folds them
        as they come (a view topic has a record per row: a worker restarted on the memory
        test's views peaked at 381 MB holding them all, 232 MB folding them; docs/fleet.md,
        "Worker memory").  ``on_hanging`` is called with the partitions whose last stable
        offset stood still for :func:`hanging_after_s` (``workers.kafka.hanging``), and again
        each time as long after while they still do."""
        deadline = time.monotonic() + timeout_s + OPEN_TRANSACTION_WAIT_S
        watermarks = [self._watermarks(tp, deadline) for tp in self.partitions]
        lows, highs = [low for low, _ in watermarks], [high for _, high in watermarks]
        held: dict[tuple[str, int], int] = {}  # held partitions → their last stable offset
        checked_at = 0.0  # when the held partitions were last looked at
        # Aborted and control records leave gaps in offsets: the consumer's position tells;
        # before the first fetch it is the first offset still stored.
        while behind := [(tp, high) for tp, position, high in zip(
                self.partitions, self._positions(lows), highs, strict=True) if position < high]:
            if time.monotonic() > deadline:
                raise WorkersError(f"reading {', '.join(self.topics)}: a transaction stayed "
                                   f"open for {OPEN_TRANSACTION_WAIT_S:.0f} s",
                                   code=ErrorCode.KAFKA)
            read = 0
            for record in self._read(POLL_S):
                read += 1
                yield record
            now = time.monotonic()
            if read or (on_held is None and (
                    on_hanging is None or now - checked_at < self._hanging_after_s)):
                continue
            before, held, checked_at = held, self._held(behind), now
            if held and on_held is not None:
                on_held()
                on_held = None
            if hanging := [TopicPartition(*key) for key, stable in held.items()
                           if before.get(key) == stable]:
                assert on_hanging is not None
                on_hanging(hanging)

    def _held(self, behind: list[tuple[TopicPartition, int]]) -> dict[tuple[str, int], int]:
        """The partitions whose last stable offset (the end a ``read_committed`` consumer is
        told) is below their high watermark and reached by the consumer, with that offset.
        A partition whose offset cannot be had now (its leader moving, the broker going
        away) is left out: the read itself waits for the broker and says when it gives up;
        the worker of CI's 2026-11-24 run died of ``NOT_LEADER_FOR_PARTITION`` here."""
        held = {}
        for tp, high in behind:
            try:
                stable = self._consumer.get_watermark_offsets(
                    tp, timeout=METADATA_TIMEOUT_S)[1]
            except KafkaException:
                continue
            (position,) = self._consumer.position([tp])
            if stable < high and position.offset >= stable:
                held[tp.topic, tp.partition] = stable
        return held

    def _watermarks(self, partition: TopicPartition, deadline: float) -> tuple[int, int]:
        """The partition's low and high watermarks; a topic just created may not be known to
        this client yet (``Unknown partition``): asked again until ``deadline``."""
        while True:
            try:
                low, high = self._ends.get_watermark_offsets(partition, timeout=5.0)
                return int(low), int(high)
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(POLL_S)

    def low_watermarks(self) -> list[int]:
        """Each partition's first offset still stored (retention deletes from the start)."""
        return [int(self._ends.get_watermark_offsets(tp, timeout=METADATA_TIMEOUT_S)[0])
                for tp in self.partitions]

    def poll(self) -> list[KeyedRecord]:
        return list(self._read(0))

    def _read(self, timeout_s: float) -> Iterator[KeyedRecord]:
        for message in data_messages(self._consumer.consume(500, timeout_s),
                                     ", ".join(self.topics)):
            raw_key = message.key() or b""
            yield KeyedRecord(raw_key.decode(errors="replace"), message.value(),
                              message.offset() or 0, message.partition() or 0,
                              message.topic() or "", raw_key)

    def _positions(self, lows: list[int]) -> list[int]:
        if not self.partitions:
            return []
        return [tp.offset if tp.offset >= 0 else low
                for tp, low in zip(self._consumer.position(self.partitions), lows, strict=True)]

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
