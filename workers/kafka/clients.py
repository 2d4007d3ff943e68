"""The client side of the contract: send transactions, manage queries, follow results, and
subscribe to a query (its view, then the changes after it; :mod:`workers.kafka.subscription`,
re-exported here)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from workers.config import WorkerConfig
from workers.datalog import compile_query
from workers.db.tx import parse_tx
from workers.edn import read
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.closing import Closing, close_producer
from workers.kafka.compacted import CompactedReader, KeyedRecord, latest
from workers.kafka.messages import named_tempids, transaction_to_avro
from workers.kafka.registration import Registration, parse_registration, registration_record
from workers.kafka.subscription import (
    Change,
    HeadGoneError,
    Position,
    Snapshot,
    follow,
    snapshot_rows,
    subscribe,
)
from workers.kafka.topics import Topics, check_query_name, ensure_topics

__all__ = ["Change", "HeadGoneError", "Position", "QueryAdmin", "Sent", "Snapshot", "TxProducer",
           "follow", "progress_table", "snapshot_rows", "subscribe"]

FLUSH_TIMEOUT_S = 30.0  # all sent records acknowledged (acks=all)
QUEUE_FULL_WAIT_S = 0.1


@dataclass(slots=True)
class Sent:
    """A transaction sent: when (epoch ms), its offset in the log once acknowledged, and
    whether it names tempids (a report will say their ids)."""

    sent_ms: int
    offset: int | None = None
    tempids: bool = False


class TxProducer(Closing):
    """Sends transactions (EDN text or forms) to ``deltalog.tx`` as Avro records."""

    def __init__(self, config: WorkerConfig, source: str | None = None) -> None:
        self.topic = Topics(config.topic_prefix).tx
        with AdminClient(config.kafka()) as admin:
            ensure_topics(admin, Topics(config.topic_prefix), config.query_partitions)
        self._producer = Producer(config.kafka(**{"enable.idempotence": True, "linger.ms": 5}))
        self._codec = AvroCodec("transaction", registry_for(config.registry_url))
        self._source = source

    def send(self, tx: Any) -> Sent:
        """Queue one transaction; its ops are validated here (bad shapes raise).  Its offset
        is known once it is acknowledged (:meth:`flush`)."""
        forms = read(tx) if isinstance(tx, str) else tx
        ops = parse_tx(forms)  # once, for the record and for whether a report will come
        sent = self.send_raw(self._codec.encode(transaction_to_avro(forms, self._source, ops)))
        sent.tempids = named_tempids(ops)
        return sent

    def send_raw(self, value: bytes) -> Sent:
        """Queue bytes as they are (tests use it to send bad input)."""
        sent = Sent(time.time_ns() // 1_000_000)

        def acknowledged(error: Any, message: Any) -> None:
            if error is None:
                sent.offset = message.offset()

        while True:
            try:
                self._producer.produce(self.topic, value, on_delivery=acknowledged)
                return sent
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
