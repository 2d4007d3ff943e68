"""A query's current view as a compacted topic, ``deltalog.views.<query>`` (Kafka Streams'
changelog of a KTable): readable in time bounded by the view's size, whatever the retention
of the change stream.

Records, written by the query's owner in the same Kafka transaction as the tick's change rows:

- key ``ResultKey`` (the row), value ``ViewRow`` with the row's weight in the view now (1, or
  a bag's multiplicity); a tombstone when the row leaves the view;
- every tick that writes to the view ends with the **marker**: the row of no values (no
  query has one: ``:find`` names at least one element), whose ``tx_last`` and
  ``registration`` say which registration's result the view is, after which transaction.

Compaction keeps the latest record of each key, and only in closed segments, so a reader that
reads a view topic from its beginning up to a marker at or past the end it saw when it started
holds exactly the rows that were current at that marker's transaction — provided it gets
there within the topic's ``delete.retention.ms`` (the ``view_tombstones_ms`` setting): the cleaner
drops a tombstone that long after it first compacts it, so a slower read may miss a row's
leaving and keep the row.  A read that took longer starts again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import TopicPartition

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.compacted import OPEN_TRANSACTION_WAIT_S, POLL_S, CompactedReader, KeyedRecord
from workers.kafka.messages import row_from_avro, row_to_avro
from workers.kafka.topics import Topics
from workers.zset import ZSet
from workers.zset.row import Row

log = logging.getLogger(__name__)

MARKER: Row = ()  # the key of a tick's last record in a view topic
READ_ATTEMPTS = 3


@dataclass(slots=True)
class View:
    """A query's view as its topic holds it: ``rows`` are the result of ``registration``
    after transaction ``tx``.  ``registration`` -1: no marker yet (no view written)."""

    rows: ZSet[Row] = field(default_factory=dict)
    registration: int = -1
    tx: int = -1
    records_read: int = 0  # the rows, and the churn its topic still held (docs/fleet.md)

    def of(self, registration: int) -> bool:
        """Whether this is the view of that registration of the query (else it is stale or
        was never built)."""
        return self.registration == registration


class _Folding:
    """One view topic read so far: the latest value per key (decoded only at the end: a row
    written many times is decoded once)."""

    def __init__(self, marker_key: bytes) -> None:
        self.marker_key = marker_key
        self.by_key: dict[bytes, bytes] = {}
        self.at_marker = True  # the last record read was a marker (or none was read)
        self.read = 0

    def add(self, record: KeyedRecord) -> None:
        self.read += 1
        self.at_marker = record.raw_key == self.marker_key
        if record.value is None:
            self.by_key.pop(record.raw_key, None)
        else:
            self.by_key[record.raw_key] = record.value

    def result(self, codec: AvroCodec) -> View:
        """The view read; the records are let go as they are decoded (not held beside the
        rows they become)."""
        view = View(records_read=self.read)
        marker = self.by_key.pop(self.marker_key, None)
        if marker is not None:
            value = codec.decode(marker)
            view.registration, view.tx = value["registration"], value["tx_last"]
        while self.by_key:
            value = codec.decode(self.by_key.popitem()[1])
            view.rows[row_from_avro(value["values"])] = value["weight"]
        return view


def read_views(config: WorkerConfig, queries: Sequence[str],
               on_held: Callable[[], None] | None = None,
               on_hanging: Callable[[list[TopicPartition]], None] | None = None,
               clock: Callable[[], float] = time.monotonic) -> dict[str, View]:
    """The committed view of each query, read with one consumer from the beginning of each
    view topic to its end, then on to the next marker: a transaction read in part (it went on
    past the end seen at the start) is read whole.  A query without a view topic has an empty
    view and no marker.  ``on_held``, ``on_hanging``: as :meth:`CompactedReader.read_to_end`'s.
    A read that took longer than :func:`read_within_s` by ``clock`` may have missed
    tombstones: it is done again, up to ``READ_ATTEMPTS`` times."""
    if not queries:
        return {}
    within_s = read_within_s(config)
    for _ in range(READ_ATTEMPTS):
        started = clock()
        views = _read_views_once(config, queries, on_held, on_hanging)
        if clock() - started <= within_s:
            return views
        log.warning("reading the views of %s took longer than %.0f s (half the tombstones' "
                    "retention): reading them again", ", ".join(queries), within_s)
    raise WorkersError(f"reading the views of {', '.join(queries)} took longer than "
                       f"{within_s:.0f} s {READ_ATTEMPTS} times: raise the view_tombstones_ms "
                       "setting and the view topics' delete.retention.ms with it",
                       code=ErrorCode.KAFKA)


def read_within_s(config: WorkerConfig) -> float:
    """How long a read of the views from their beginning to their markers may take and stay
    exact: half the tombstones' retention, room for the cleaner's own timing."""
    return config.view_tombstones_ms / 1000 / 2


def _read_views_once(config: WorkerConfig, queries: Sequence[str],
                     on_held: Callable[[], None] | None,
                     on_hanging: Callable[[list[TopicPartition]], None] | None
                     ) -> dict[str, View]:
    topics = Topics(config.topic_prefix)
    query_of = {topics.view(query): query for query in queries}
    registry = registry_for(config.registry_url)
    marker_key = AvroCodec("result_key", registry).encode({"values": row_to_avro(MARKER)})
    folding = {topic: _Folding(marker_key) for topic in query_of}
    codec = AvroCodec("view_row", registry)
    with CompactedReader(config, *query_of) as reader:
        for record in reader.read_to_end(on_held=on_held, on_hanging=on_hanging):
            folding[record.topic].add(record)
        deadline = time.monotonic() + OPEN_TRANSACTION_WAIT_S
        while not all(f.at_marker for f in folding.values()):
            if time.monotonic() > deadline:
                raise WorkersError(f"reading {', '.join(query_of)}: a view's transaction did "
                                   f"not end with a marker within {OPEN_TRANSACTION_WAIT_S:.0f}"
                                   " s", code=ErrorCode.KAFKA)
            records = reader.poll()
            for record in records:
                folding[record.topic].add(record)
            if not records:
                time.sleep(POLL_S)
    return {query_of[topic]: f.result(codec) for topic, f in folding.items()}
