"""The client side of the contract: send transactions, manage queries, follow results, and
subscribe to a query (its view, then the changes after it)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from workers.config import WorkerConfig
from workers.datalog import compile_query
from workers.edn import dumps, read
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.closing import Closing, close_producer
from workers.kafka.compacted import METADATA_TIMEOUT_S, CompactedReader, KeyedRecord, latest
from workers.kafka.consume import arrived
from workers.kafka.messages import Row, row_from_avro, transaction_to_avro
from workers.kafka.sink import REGISTRATION_HEADER
from workers.kafka.topics import Topics, check_query_name, ensure_topics
from workers.kafka.views import read_views
from workers.runtime.registration import Registration, parse_registration, registration_record

FLUSH_TIMEOUT_S = 30.0  # all sent records acknowledged (acks=all)
QUEUE_FULL_WAIT_S = 0.1


class TxProducer(Closing):
    """Sends transactions (EDN text or forms) to ``deltalog.tx`` as Avro records."""

    def __init__(self, config: WorkerConfig, source: str | None = None) -> None:
        self.topic = Topics(config.topic_prefix).tx
        with AdminClient(config.kafka()) as admin:
            ensure_topics(admin, Topics(config.topic_prefix), config.query_partitions)
        self._producer = Producer(config.kafka(**{"enable.idempotence": True, "linger.ms": 5}))
        self._codec = AvroCodec("transaction", registry_for(config.registry_url))
        self._source = source

    def send(self, tx: Any) -> None:
        """Queue one transaction; its ops are validated here (bad shapes raise)."""
        forms = read(tx) if isinstance(tx, str) else tx
        self.send_raw(self._codec.encode(transaction_to_avro(forms, self._source)))

    def send_raw(self, value: bytes) -> None:
        """Queue bytes as they are (tests use it to send bad input)."""
        while True:
            try:
                self._producer.produce(self.topic, value)
                return
            except BufferError:
                self._producer.poll(QUEUE_FULL_WAIT_S)

    def flush(self) -> None:
        if self._producer.flush(FLUSH_TIMEOUT_S):
            raise WorkersError(f"transactions not acknowledged within {FLUSH_TIMEOUT_S} s",
                               code=ErrorCode.KAFKA)

    def close(self) -> None:
        """Close; what was sent and not flushed gets the flush's time to be acknowledged."""
        close_producer(self._producer, FLUSH_TIMEOUT_S)


class QueryAdmin(Closing):
    """``query add / rm / ls`` through the compacted ``deltalog.queries`` topic."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.topics = Topics(config.topic_prefix)
        with AdminClient(config.kafka()) as admin:
            ensure_topics(admin, self.topics, config.query_partitions)
        self._codec = AvroCodec("query_registration", registry_for(config.registry_url))
        self._producer = Producer(config.kafka(**{"enable.idempotence": True}))

    def add(self, name: str, edn: str, inputs: Sequence[str] = ()) -> None:
        """Register a query; it is parsed and checked here, so a bad one is refused now."""
        check_query_name(name)
        compile_query(edn, [read(text) for text in inputs])
        record = registration_record(name, edn, tuple(inputs))
        self._send(name, self._codec.encode(record))

    def remove(self, name: str) -> None:
        if name not in self.list():
            raise WorkersError(f"no query named {name!r}", code=ErrorCode.UNKNOWN_QUERY,
                               form=name)
        self._send(name, None)

    def list(self) -> dict[str, Registration]:
        with CompactedReader(self.config, self.topics.queries) as reader:
            table = latest(reader.catch_up())
        return {name: parse_registration(self._codec, record.value)  # type: ignore[arg-type]
                for name, record in sorted(table.items())}

    def _send(self, name: str, value: bytes | None) -> None:
        self._producer.produce(self.topics.queries, value, name.encode())
        if self._producer.flush(FLUSH_TIMEOUT_S):
            raise WorkersError("query registration not acknowledged", code=ErrorCode.KAFKA)

    def close(self) -> None:
        close_producer(self._producer, FLUSH_TIMEOUT_S)


def progress_table(config: WorkerConfig, on_held: Callable[[set[str]], None] | None = None,
                   on_hanging: Callable[[set[str], list[TopicPartition]], None] | None = None
                   ) -> dict[str, dict[str, Any]]:
    """The committed ``Progress`` record of every query (``deltalog.progress`` as a table).
    Held up by an open transaction, the read calls ``on_held`` with the writers named so far;
    by a hanging one, ``on_hanging`` with them and the partitions it holds."""
    codec = AvroCodec("progress", registry_for(config.registry_url))

    def writers(records: list[KeyedRecord]) -> set[str]:
        return {codec.decode(record.value)["worker"] for record in records if record.value}

    with CompactedReader(config, Topics(config.topic_prefix).progress) as reader:
        return {name: codec.decode(record.value or b"")
                for name, record in latest(reader.catch_up(
                    on_held=None if on_held is None else lambda read: on_held(writers(read)),
                    on_hanging=None if on_hanging is None
                    else lambda read, held: on_hanging(writers(read), held))).items()}


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


@dataclass(frozen=True, slots=True)
class Change:
    """One committed change of a query's result."""

    row: Row
    weight: int
    tx_first: int
    tx_last: int
    snapshot: bool
    registration: int = -1  # of the query it belongs to; -1: written before views existed

    def as_json(self, query: str) -> dict[str, Any]:
        return {"query": query, "row": dumps(self.row), "weight": self.weight,
                "tx_first": self.tx_first, "tx_last": self.tx_last, "snapshot": self.snapshot}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Where a subscription starts: the query's view, the result of its registration
    ``registration`` after transaction ``tx``."""

    rows: dict[Row, int]
    tx: int
    registration: int


def follow(config: WorkerConfig, query: str, poll_s: float = 0.5,
           stop_at_end: bool = False, stop: threading.Event | None = None) -> Iterator[Change]:
    """A query's committed change stream from the oldest record retention kept
    (``read_committed``), until its end (``stop_at_end``), until ``stop`` is set, or for
    ever.  Integrated, it is the view only while the stream is complete: :func:`subscribe`
    is exact whatever the retention."""
    topic = Topics(config.topic_prefix).results(query)
    with _changes_consumer(config) as consumer:
        if _created(consumer, topic, poll_s, stop_at_end, stop):
            yield from _changes(consumer, config, topic, OFFSET_BEGINNING, poll_s, stop_at_end,
                                stop)


def subscribe(config: WorkerConfig, query: str, poll_s: float = 0.5,
              stop: threading.Event | None = None) -> Iterator[Snapshot | Change]:
    """A query's current view, then every change committed after it, until ``stop`` is set
    (Materialize's SUBSCRIBE): exact whatever the change stream's retention, and read in time
    bounded by the view's size plus the changes since.

    1. ``start`` = the change stream's last stable offset: every record of a transaction
       open then, or begun later, lies at or after it;
    2. the view read to a marker (:func:`~workers.kafka.views.read_views`; waiting for the
       first while the query is not taken up): the :class:`Snapshot`, the result of
       registration ``R`` after transaction ``T``.  Every tick committed before step 1 is in
       it, so every tick not in it has its change rows at ``start`` or later;
    3. the change stream from ``start``: a change joins iff its ``(registration, tx_last)``
       is greater than ``(R, T)`` — the others are in the snapshot or belong to an earlier
       registration of the name.  A change of a later registration ends the subscription:
       the query was registered anew, subscribe again.
    """
    topic = Topics(config.topic_prefix).results(query)
    with _changes_consumer(config, **{"auto.offset.reset": "error"}) as consumer:
        if not _created(consumer, topic, poll_s, False, stop):
            return
        start = int(consumer.get_watermark_offsets(TopicPartition(topic, 0),  # Step 1
                                                   timeout=METADATA_TIMEOUT_S)[1])
        view = read_views(config, [query])[query]  # Step 2
        while view.registration < 0:
            if stop is not None and stop.wait(poll_s):
                return
            view = read_views(config, [query])[query]
        yield Snapshot(view.rows, view.tx, view.registration)
        for change in _changes(consumer, config, topic, start, poll_s, False, stop):  # Step 3
            if change.registration > view.registration:
                return
            if (change.registration, change.tx_last) > (view.registration, view.tx):
                yield change


def _changes_consumer(config: WorkerConfig, **settings: str) -> Consumer:
    return Consumer(config.kafka(**{
        "group.id": f"deltalog-tail-{uuid.uuid4()}", "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True, **settings}))


def _changes(consumer: Consumer, config: WorkerConfig, topic: str, start: int, poll_s: float,
             stop_at_end: bool, stop: threading.Event | None) -> Iterator[Change]:
    """The change rows of ``topic`` from offset ``start``."""
    codec = AvroCodec("result_change", registry_for(config.registry_url))
    consumer.assign([TopicPartition(topic, 0, start)])
    while stop is None or not stop.is_set():
        for message in arrived(consumer, 500, poll_s):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if stop_at_end:
                        return
                    continue
                raise WorkersError(f"reading {topic}: {error}", code=ErrorCode.KAFKA)
            record = codec.decode(message.value() or b"")
            yield Change(row_from_avro(record["values"]), record["weight"], record["tx_first"],
                         record["tx_last"], record["snapshot"], _registration(message))


def _registration(message: Message) -> int:
    """The registration a change row belongs to (its header; -1 when it has none)."""
    value = dict(message.headers() or []).get(REGISTRATION_HEADER)
    return -1 if value is None else int(value)
