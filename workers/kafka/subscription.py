"""Reading a query's output as a downstream consumer: its view, then the changes after it
(Materialize's SUBSCRIBE), exact whatever the change stream's retention; resumed from a
stored :class:`Position` without a snapshot while the changes since are retained; or the
raw change stream from its first record, refused once retention deleted its head.

A **position** ``(registration, tx)`` names the result of registration ``registration``
(the offset of its record in ``deltalog.queries``) after transaction ``tx``.  Every change
carries its own (``Change.position``); it is complete once the last row of its tick is
applied (``Change.last``): a consumer that stores it in the same transaction as the rows it
applied never sees a change twice or misses one.  Along a results topic, positions never go
down: a tick's rows are written by one owner in one Kafka transaction, ticks in order, and a
registration anew has a larger offset than the one it replaces.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from workers.config import WorkerConfig
from workers.edn import dumps
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.compacted import METADATA_TIMEOUT_S
from workers.kafka.consume import arrived
from workers.kafka.messages import row_from_avro
from workers.kafka.row_records import REGISTRATION_HEADER
from workers.kafka.topics import Topics
from workers.kafka.views import MARKER, View, read_views
from workers.zset import ZSet
from workers.zset.row import Row

log = logging.getLogger(__name__)

PROBE_WAIT_S = 10.0  # longest one record takes to arrive from a broker holding it
# A tick's last row is known at the next tick's first or at the end of what is committed,
# which the reader learns from an empty fetch: the broker answers one after this long (its
# default, 500 ms, would hold every tick's last row that long; an idle reader fetches 20
# times a second instead of twice).
FETCH_WAIT_MS = 50
# Errors of a partition created a moment ago (no leader yet): asked again until it has one.
PARTITION_READY_WAIT_S = 0.1
NOT_READY = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
             KafkaError.UNKNOWN_TOPIC_OR_PART}
READ_THE_VIEW = "read it without --from-beginning (the view, then the changes after it)"


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """The result of registration ``registration`` of a query after transaction ``tx``:
    where a consumer is.  Written ``REGISTRATION:TX``."""

    registration: int
    tx: int

    def __str__(self) -> str:
        return f"{self.registration}:{self.tx}"

    @classmethod
    def parse(cls, text: str) -> Position:
        registration, _, tx = text.partition(":")
        try:
            return cls(int(registration), int(tx))
        except ValueError:
            raise WorkersError(f"not a position: {text!r} (expected REGISTRATION:TX)",
                               code=ErrorCode.USAGE) from None


@dataclass(frozen=True, slots=True)
class Change:
    """One committed change of a query's result.  ``last``: the last row of its tick (or
    snapshot) — once it is applied, :attr:`position` is a complete position to store.  The
    row of no values (``()``) with weight 0 stands for an empty snapshot."""

    row: Row
    weight: int
    tx_first: int
    tx_last: int
    snapshot: bool
    registration: int = -1  # of the query it belongs to; -1: written before views existed
    last: bool = True

    @property
    def position(self) -> Position:
        return Position(self.registration, self.tx_last)

    def as_json(self, query: str) -> dict[str, Any]:
        return {"query": query, "row": dumps(self.row), "weight": self.weight,
                "tx_first": self.tx_first, "tx_last": self.tx_last, "snapshot": self.snapshot,
                "registration": self.registration, "last": self.last}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Where a subscription starts: the query's view, the result of its registration
    ``registration`` after transaction ``tx``.  ``not_resumed``: the position a resume asked
    for, whose changes since are no longer retained (or belong to an earlier registration):
    the consumer replaces what it holds with these rows."""

    rows: ZSet[Row]
    tx: int
    registration: int
    not_resumed: Position | None = None

    @property
    def position(self) -> Position:
        return Position(self.registration, self.tx)


def subscribe(config: WorkerConfig, query: str, poll_s: float = 0.5,
              stop: threading.Event | None = None, after: Position | None = None,
              stop_at_end: bool = False) -> Iterator[Snapshot | Change]:
    """A query's current view, then every change committed after it, until ``stop`` is set
    (Materialize's SUBSCRIBE): exact whatever the change stream's retention, and read in time
    bounded by the view's size plus the changes since.  ``after``: resume there instead —
    no snapshot, only the changes after it, while the change stream still holds them all
    (else a :class:`Snapshot` saying so).  ``stop_at_end``: end at the end of the committed
    stream (nothing at all for a query no worker has taken up yet).

    1. ``start`` = the change stream's last stable offset: every record of a transaction
       open then, or begun later, lies at or after it;
    2. resuming ``after`` = ``(R, T)``: when the stream holds every change after it — its
       first record retained is at or before ``(R, T)``, or nothing was ever deleted — the
       changes from the first offset past ``(R, T)`` (:func:`_resume_offset`), unless the
       first of them belongs to a later registration; else, when the view (step 3) is
       ``(R, T')`` with ``T' <= T`` (nothing changed since), from ``start``;
    3. otherwise the view, read to a marker (:func:`~workers.kafka.views.read_views`;
       waiting for the first while the query is not taken up): the :class:`Snapshot`, the
       result of registration ``R`` after transaction ``T``.  Every tick committed before
       step 1 is in it, so every tick not in it has its change rows at ``start`` or later;
    4. the change stream from there: a change joins iff its ``(registration, tx_last)`` is
       greater than ``(R, T)`` — the others are in the snapshot (or the consumer's state)
       or belong to an earlier registration of the name.  A change of a later registration
       ends the subscription: the query was registered anew, subscribe again.
    """
    topic = Topics(config.topic_prefix).results(query)
    with _changes_consumer(config, **{"auto.offset.reset": "error"}) as consumer:
        if not _created(consumer, topic, poll_s, stop_at_end, stop):
            return
        start = _watermarks(consumer, topic)[1]  # Step 1
        offset = None if after is None else _resume_offset(
            consumer, AvroCodec("result_change", registry_for(config.registry_url)), topic,
            after, start)
        position = after
        if offset is None:
            view = _view(config, query, poll_s, stop, stop_at_end)  # Step 3
            if view is None:
                return
            if after is not None and view.registration == after.registration \
                    and view.tx <= after.tx:
                offset = start  # Step 2: nothing changed after ``after``
            else:
                if after is not None:
                    log.warning("%s: the changes after %s are no longer retained: "
                                "starting from the view", query, after)
                position = Position(view.registration, view.tx)
                offset = start
                yield Snapshot(view.rows, view.tx, view.registration, after)
        assert position is not None
        for change in _changes(consumer, config, topic, offset, poll_s, stop_at_end,
                               stop):  # Step 4
            if change.registration > position.registration:
                return
            if change.position > position:
                yield change


def follow(config: WorkerConfig, query: str, poll_s: float = 0.5,
           stop_at_end: bool = False, stop: threading.Event | None = None,
           after: Position | None = None, from_beginning: bool = False) -> Iterator[Change]:
    """:func:`subscribe` as rows, until its end (``stop_at_end``), until ``stop`` is set, or
    for ever: the snapshot's rows (``snapshot`` set, at the snapshot's transaction; an empty
    one as the row ``()`` of weight 0, so that a consumer always sees where it starts), then
    the changes after it.

    ``from_beginning``: the raw change stream instead, every record from offset 0 (every
    registration's snapshot rows and changes, as committed) — refused when the stream's head
    is gone (:func:`_check_head`): integrating what is left would be silently wrong."""
    if from_beginning:
        topic = Topics(config.topic_prefix).results(query)
        with _changes_consumer(config, **{"auto.offset.reset": "error"}) as consumer:
            if _created(consumer, topic, poll_s, stop_at_end, stop):
                yield from _from_beginning(consumer, config, topic, poll_s, stop_at_end, stop)
        return
    for item in subscribe(config, query, poll_s, stop, after, stop_at_end):
        if isinstance(item, Snapshot):
            yield from snapshot_rows(item)
        else:
            yield item


def snapshot_rows(snapshot: Snapshot) -> Iterator[Change]:
    """A snapshot as change rows, the last one flagged; an empty one as the row of no
    values with weight 0 (no query has that row: ``:find`` names at least one element)."""
    rows = list(snapshot.rows.items()) or [(MARKER, 0)]
    for i, (row, weight) in enumerate(rows, 1):
        yield Change(row, weight, snapshot.tx, snapshot.tx, True, snapshot.registration,
                     i == len(rows))


def _from_beginning(consumer: Consumer, config: WorkerConfig, topic: str, poll_s: float,
                    stop_at_end: bool, stop: threading.Event | None) -> Iterator[Change]:
    """The change stream from offset 0, once its head is known to be there: nothing deleted
    (the low watermark is 0) and the first record a registration's first — a snapshot row (a
    registration writes its current result, or the row of no values when that is empty,
    before any change); else :class:`HeadGoneError`, before any row."""
    low = _watermarks(consumer, topic)[0]
    if low > 0:
        raise HeadGoneError(f"{topic}: retention deleted its records before offset {low}, so "
                            f"reading it from the beginning would miss changes; {READ_THE_VIEW}")
    changes = _changes(consumer, config, topic, 0, poll_s, stop_at_end, stop)
    first = next(changes, None)
    if first is None:
        return
    if not first.snapshot:
        raise HeadGoneError(f"{topic}: its first record (tx {first.tx_first}..{first.tx_last}"
                            ") is not a registration's first (a snapshot row): its head was "
                            "deleted or compacted away, so reading it from the beginning "
                            f"would miss changes; {READ_THE_VIEW}")
    yield first
    yield from changes


class HeadGoneError(WorkersError):
    """A change stream read from its beginning whose first records retention deleted."""

    code = ErrorCode.KAFKA


def _view(config: WorkerConfig, query: str, poll_s: float, stop: threading.Event | None,
          stop_at_end: bool) -> View | None:
    """The query's committed view, once a worker wrote one (None: ``stop`` was set first,
    or none is written yet and ``stop_at_end``)."""
    view = read_views(config, [query])[query]
    while view.registration < 0:
        if stop_at_end or (stop is not None and stop.wait(poll_s)):
            return None
        if stop is None:
            time.sleep(poll_s)
        view = read_views(config, [query])[query]
    return view


def _resume_offset(consumer: Consumer, codec: AvroCodec, topic: str, after: Position,
                   start: int) -> int | None:
    """The offset from which ``topic`` holds every change after ``after`` and none of a later
    registration before it (every record before it is at or before ``after``), or None when
    retention deleted some of those changes or the query was registered anew since.  A binary
    search on the offsets below ``start`` (positions never go down along the stream): a few
    records read, not the history."""
    low = _watermarks(consumer, topic)[0]
    first = _probe(consumer, codec, topic, low, start)
    if low > 0 and (first is None or first[1] > after):
        return None  # what lay between ``after`` and the first record retained is gone
    lo, hi = low, start
    while lo < hi:
        mid = (lo + hi) // 2
        found = _probe(consumer, codec, topic, mid, start)
        if found is None or found[1] > after:
            hi = mid
        else:
            lo = found[0] + 1
    following = _probe(consumer, codec, topic, lo, start)
    if following is not None and following[1].registration != after.registration:
        return None  # registered anew since: the new registration's snapshot replaces all
    return lo


def _probe(consumer: Consumer, codec: AvroCodec, topic: str, offset: int, end: int
           ) -> tuple[int, Position] | None:
    """The offset and position of the first committed change at ``offset`` or later and
    before ``end`` (None if there is none, or retention deleted ``offset`` meanwhile)."""
    if offset >= end:
        return None
    consumer.assign([TopicPartition(topic, 0, offset)])
    deadline = time.monotonic() + PROBE_WAIT_S
    while time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is None:
            continue
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                return None
            if error.code() == KafkaError._AUTO_OFFSET_RESET:
                return None  # deleted meanwhile
            raise WorkersError(f"reading {topic}: {error}", code=ErrorCode.KAFKA)
        found = message.offset() or 0
        if found >= end:
            return None
        return found, _change(codec, message).position
    raise WorkersError(f"reading {topic} at offset {offset}: no record within "
                       f"{PROBE_WAIT_S:.0f} s", code=ErrorCode.KAFKA)


def _watermarks(consumer: Consumer, topic: str) -> tuple[int, int]:
    """The first offset retention kept and the last stable offset of ``topic``'s partition,
    once it has a leader (a results topic is read as soon as it exists)."""
    deadline = time.monotonic() + METADATA_TIMEOUT_S
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0),
                                                       timeout=METADATA_TIMEOUT_S)
            return int(low), int(high)
        except KafkaException as err:
            if err.args[0].code() not in NOT_READY or time.monotonic() > deadline:
                raise WorkersError(f"reading {topic}: {err}", code=ErrorCode.KAFKA) from err
            time.sleep(PARTITION_READY_WAIT_S)


def _created(consumer: Consumer, topic: str, poll_s: float, once: bool,
             stop: threading.Event | None) -> bool:
    """Wait for ``topic`` to exist (a query's results topic appears when a worker takes the
    query up; a consumer assigned to it before then may not notice it for minutes); False
    when asked ``once`` and it does not exist, or when ``stop`` is set first."""
    while stop is None or not stop.is_set():
        if consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics[topic].partitions:
            return True
        if once:
            return False
        time.sleep(poll_s)
    return False


def _changes_consumer(config: WorkerConfig, **settings: str) -> Consumer:
    return Consumer(config.kafka(**{
        "group.id": f"deltalog-tail-{uuid.uuid4()}", "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True,
        "fetch.wait.max.ms": FETCH_WAIT_MS, **settings}))


def _changes(consumer: Consumer, config: WorkerConfig, topic: str, start: int, poll_s: float,
             stop_at_end: bool, stop: threading.Event | None) -> Iterator[Change]:
    """The change rows of ``topic`` from offset ``start``, each flagged ``last`` when the
    next one is of another tick or the stream's end follows it (a read_committed reader sees
    a transaction whole: at its end, no tick is read in part)."""
    codec = AvroCodec("result_change", registry_for(config.registry_url))
    consumer.assign([TopicPartition(topic, 0, start)])
    pending: Change | None = None
    while stop is None or not stop.is_set():
        for message in arrived(consumer, 500, poll_s):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if pending is not None:
                        yield pending
                        pending = None
                    if stop_at_end:
                        return
                    continue
                if error.code() == KafkaError._AUTO_OFFSET_RESET:
                    raise HeadGoneError(f"reading {topic}: retention deleted changes not read "
                                        f"yet ({error}): subscribe again")
                raise WorkersError(f"reading {topic}: {error}", code=ErrorCode.KAFKA)
            change = _change(codec, message)
            if pending is not None:
                yield Change(pending.row, pending.weight, pending.tx_first, pending.tx_last,
                             pending.snapshot, pending.registration,
                             (pending.position, pending.snapshot)
                             != (change.position, change.snapshot))
            pending = change


def _change(codec: AvroCodec, message: Message) -> Change:
    """A change record as read (``last`` is the reader's to decide)."""
    record = codec.decode(message.value() or b"")
    value = dict(message.headers() or []).get(REGISTRATION_HEADER)
    return Change(row_from_avro(record["values"]), record["weight"], record["tx_first"],
                  record["tx_last"], record["snapshot"], -1 if value is None else int(value))
