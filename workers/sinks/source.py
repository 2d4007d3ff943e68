"""What a sink reads from Kafka: a query's change stream from an offset it stored (with the
query's registrations watched beside it), its registration, and the attribute types.

A sink resumes from an *offset* of ``deltalog.results.<query>`` it stored with its rows, so it
reads the change stream itself rather than through :func:`workers.kafka.clients.subscribe`
(which starts from the view every time).  Its reader rides out broker trouble: errors that
librdkafka retries on its own (a broker away, a leader moving) are logged, not raised; the
position falling out of the stream's retention raises :class:`PositionLost`.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from workers.config import WorkerConfig
from workers.db.schema import VALUE_TYPE
from workers.db.tx import DB_ADD, DB_RETRACT_ENTITY
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.clients import Change
from workers.kafka.closing import Closing
from workers.kafka.compacted import METADATA_TIMEOUT_S, CompactedReader, latest
from workers.kafka.messages import row_from_avro, transaction_from_avro
from workers.kafka.registration import Registration, parse_registration
from workers.kafka.row_records import REGISTRATION_HEADER
from workers.kafka.topics import Topics

log = logging.getLogger(__name__)

BATCH = 2000  # records one consume() returns at most
TROUBLE_LOG_S = 10.0  # a transient consumer error is logged at most this often
# Errors that end the read: the others (transport, all brokers down, a leader moving, a
# request timing out) librdkafka recovers from on its own.
FATAL = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED,
                   KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._SSL,
                   KafkaError._INVALID_ARG, KafkaError._UNKNOWN_PARTITION})
OUT_OF_RANGE = frozenset({KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE})


class PositionLost(WorkersError):
    """The stored offset is no longer in the change stream (retention deleted it)."""

    code = ErrorCode.KAFKA


@dataclass(frozen=True, slots=True)
class Current:
    """A query's registration now: ``offset`` in ``deltalog.queries`` (what change rows and
    views name as their registration) and the record."""

    offset: int
    registration: Registration


@dataclass(frozen=True, slots=True)
class Record:
    """One change row at ``offset`` of the change stream."""

    offset: int
    change: Change


@dataclass(frozen=True, slots=True)
class End:
    """Everything committed to the change stream is read; ``offset`` is the next to read."""

    offset: int


@dataclass(frozen=True, slots=True)
class Registered:
    """A record of the query in ``deltalog.queries`` after the one the sink started with:
    registered anew at ``offset``, or removed (``removed``)."""

    offset: int
    removed: bool


Event = Record | End | Registered


def current_registration(config: WorkerConfig, query: str) -> Current | None:
    """The query's registration in ``deltalog.queries`` now (None: not registered)."""
    codec = AvroCodec("query_registration", registry_for(config.registry_url))
    with CompactedReader(config, Topics(config.topic_prefix).queries) as reader:
        record = latest(reader.catch_up()).get(query)
    if record is None or record.value is None:
        return None
    return Current(record.offset, parse_registration(codec, record.value))


def value_types(config: WorkerConfig, up_to_tx: int) -> dict[str, str]:
    """The ``:db/valueType`` of each attribute after transaction ``up_to_tx`` (its offset in
    ``deltalog.tx``), by attribute name: ``{"age": "db.type/long"}``.

    Only transactions that name ``db/valueType`` are decoded (Avro keeps strings as they are,
    so the bytes tell).  A transaction the worker refused is read like the others: a schema
    change it held is taken as made (the table's column then refuses values of the real
    type, with an error naming the column).
    """
    types: dict[str, str] = {}
    if up_to_tx < 0:
        return types
    codec = AvroCodec("transaction", registry_for(config.registry_url))
    topic = Topics(config.topic_prefix).tx
    consumer = Consumer(config.kafka(**{
        "group.id": f"deltalog-sink-schema-{uuid.uuid4()}", "enable.auto.commit": False,
        "enable.partition.eof": True}))
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + METADATA_TIMEOUT_S
        while True:
            messages = consumer.consume(BATCH, 0.5)
            if not messages and time.monotonic() > deadline:
                raise WorkersError(f"reading {topic} up to {up_to_tx}: nothing for "
                                   f"{METADATA_TIMEOUT_S:.0f} s", code=ErrorCode.KAFKA)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return types
                    if error.code() in FATAL or error.fatal():
                        raise WorkersError(f"reading {topic}: {error}", code=ErrorCode.KAFKA)
                    continue
                deadline = time.monotonic() + METADATA_TIMEOUT_S
                offset, value = message.offset() or 0, message.value() or b""
                if offset > up_to_tx:
                    return types
                if b"db/valueType" in value:
                    _declare(types, transaction_from_avro(codec.decode(value)))
    finally:
        consumer.close()


def _declare(types: dict[str, str], forms: list[list[object]]) -> None:
    """Apply one transaction's ``:db/valueType`` ops (a schema entity's id is its ident)."""
    for form in forms:
        op, e = form[0], form[1]
        name = getattr(e, "name", None)
        if name is None:
            continue
        if op == DB_RETRACT_ENTITY:
            types.pop(name, None)
            continue
        if form[2] != VALUE_TYPE:
            continue
        if op == DB_ADD:
            types[name] = getattr(form[3], "name", "")
        else:
            types.pop(name, None)


class ChangeReader(Closing):
    """The change stream of ``query`` from an offset (:meth:`start`), ``read_committed``,
    with its records in ``deltalog.queries`` after a given offset watched (a query
    registered anew, or removed, whose change stream says nothing of it)."""

    def __init__(self, config: WorkerConfig, query: str) -> None:
        topics = Topics(config.topic_prefix)
        self.query, self.topic, self._queries = query, topics.results(query), topics.queries
        self._consumer = Consumer(config.kafka(**{
            "group.id": f"deltalog-sink-{uuid.uuid4()}", "enable.auto.commit": False,
            "isolation.level": "read_committed", "enable.partition.eof": True,
            "auto.offset.reset": "error"}))
        self._codec = AvroCodec("result_change", registry_for(config.registry_url))
        self._watch_from: list[TopicPartition] = []
        self._logged_at = 0.0

    def exists(self) -> bool:
        """Whether the change stream exists (a worker creates it when it takes the query up)."""
        metadata = self._consumer.list_topics(self.topic, timeout=METADATA_TIMEOUT_S)
        return bool(metadata.topics[self.topic].partitions)

    def note_registrations(self) -> None:
        """Remember where ``deltalog.queries`` ends now: :meth:`start` watches from there.
        Called before the registration is read, so no later record is missed."""
        metadata = self._consumer.list_topics(self._queries, timeout=METADATA_TIMEOUT_S)
        self._watch_from = [
            TopicPartition(self._queries, p, self._consumer.get_watermark_offsets(
                TopicPartition(self._queries, p), timeout=METADATA_TIMEOUT_S)[1])
            for p in sorted(metadata.topics[self._queries].partitions)]

    def stable_end(self) -> int:
        """The change stream's last stable offset: every record of a transaction open now, or
        begun later, lies at or after it."""
        deadline = time.monotonic() + METADATA_TIMEOUT_S
        while True:  # a topic just made may be unknown to this client for a moment
            try:
                return int(self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, 0), timeout=METADATA_TIMEOUT_S)[1])
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def start(self, offset: int) -> None:
        self._consumer.assign([TopicPartition(self.topic, 0, offset), *self._watch_from])

    def poll(self, timeout_s: float) -> Iterator[Event]:
        """What arrived, in order per partition."""
        for message in self._consumer.consume(BATCH, timeout_s):
            error = message.error()
            if error is not None:
                yield from self._error(error, message.topic(), message.offset())
            elif message.topic() == self.topic:
                record = self._codec.decode(message.value() or b"")
                yield Record(message.offset() or 0, Change(
                    row_from_avro(record["values"]), record["weight"], record["tx_first"],
                    record["tx_last"], record["snapshot"], _registration(message.headers())))
            elif (message.key() or b"").decode(errors="replace") == self.query:
                yield Registered(message.offset() or 0, message.value() is None)

    def _error(self, error: KafkaError, topic: str | None, offset: int | None
               ) -> Iterator[Event]:
        if error.code() == KafkaError._PARTITION_EOF:
            if topic == self.topic:
                yield End(offset or 0)
            return
        if error.code() in OUT_OF_RANGE and topic in (self.topic, None):
            raise PositionLost(f"reading {self.topic}: {error.str()} (retention deleted the "
                               "stored position)", code=ErrorCode.KAFKA)
        if error.fatal() or error.code() in FATAL:
            raise WorkersError(f"reading {self.topic}: {error}", code=ErrorCode.KAFKA)
        now = time.monotonic()
        if now - self._logged_at > TROUBLE_LOG_S:
            self._logged_at = now
            log.warning("reading %s: %s (retrying)", self.topic, error.str())

    def close(self) -> None:
        with contextlib.suppress(KafkaException):  # broker trouble: nothing to commit anyway
            self._consumer.close()


def _registration(headers: Any) -> int:
    """The registration a change row belongs to (its header; -1 when it has none)."""
    value = dict(headers or []).get(REGISTRATION_HEADER)
    return -1 if value is None else int(value)
