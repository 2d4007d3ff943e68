"""What a worker reads and writes outside itself, as one object it is given.

A worker's parts never open a Kafka client themselves: they ask their :class:`Ports` for the
transaction log (a :class:`Source`), a transactional producer (a :class:`Sink`), the
workers' group (a :class:`Group`), and what other workers committed (progress, views, change
streams) — so that the tick loop and the queries' lifecycle run, in the unit tests, over the
in-memory fakes of :mod:`workers.testing`, which keep these same contracts.
:class:`KafkaPorts` is the real thing: the clients of :mod:`workers.kafka` and the fencing of
:mod:`workers.runtime.fencing`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, Self

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from workers.config import WorkerConfig
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.clients import progress_table
from workers.kafka.closing import Closing
from workers.kafka.compacted import CompactedReader
from workers.kafka.messages import row_from_avro
from workers.kafka.sink import ResultSink
from workers.kafka.source import TxRecord, TxSource
from workers.kafka.topics import Topics, create, ensure_topics
from workers.kafka.views import View, read_views
from workers.runtime import fencing
from workers.runtime.ownership import Ownership, Polled
from workers.runtime.process import transactional_id
from workers.zset import ZSet, add_into
from workers.zset.row import Row

log = logging.getLogger("workers.runtime.worker")  # the worker's log, whichever part writes
OnHeld = Callable[[set[str]], None]  # the writers named so far, of a read held up
OnHanging = Callable[[set[str], list[TopicPartition]], None]  # ... and the partitions held


class Source(Protocol):
    """The transaction log read in ticks (:class:`~workers.kafka.source.TxSource`)."""

    def next_batch(self, max_count: int, max_bytes: int, max_wait_s: float,
                   until: int | None = None) -> list[TxRecord]: ...

    def end(self) -> int: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...


OpenSource = Callable[[int], Source]  # the transaction log from a position


class Sink(Protocol):
    """One Kafka transaction per tick (:class:`~workers.kafka.sink.ResultSink`); its calls
    raise :class:`~workers.kafka.sink.TransactionFailed` when the transaction is lost."""

    worker: str  # its transactional id
    written: set[str]  # the topics the transaction of the moment wrote to

    def init(self) -> None: ...

    def begin(self) -> None: ...

    def change(self, query: str, registration: int, row: Row, weight: int, tx_first: int,
               tx_last: int, snapshot: bool = False) -> bytes: ...

    def change_and_view(self, query: str, registration: int, row: Row, weight: int,
                        view_weight: int, tx_first: int, tx_last: int) -> None: ...

    def view(self, query: str, registration: int, row: Row, weight: int, tx_last: int,
             key: bytes | None = None) -> None: ...

    def view_marker(self, query: str, registration: int, tx_last: int) -> None: ...

    def progress(self, query: str, registration: int, tx_last: int) -> None: ...

    def dead_letter(self, topic: str, partition: int, offset: int, code: str, reason: str,
                    payload: bytes) -> None: ...

    def report(self, tx: int, tempids: Mapping[Any, int]) -> None: ...

    def send_offsets(self, offsets: list[Any], group_metadata: Any) -> None: ...

    def commit(self) -> None: ...

    def worker_topics(self) -> set[str]: ...

    def sweep(self, topics: set[str]) -> None: ...

    def close(self) -> None: ...


class Group(Protocol):
    """This worker in the workers' group (:class:`~workers.runtime.ownership.Ownership`)."""

    owned: set[int]  # the queries topic's partitions owned now
    assigned_once: bool

    @property
    def catching_up(self) -> bool: ...

    def poll(self, timeout_s: float = 0.0) -> Polled: ...

    def offsets(self) -> list[Any]: ...

    def group_metadata(self) -> Any: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...


class Ports(Protocol):
    """Everything outside the worker: what it opens, reads, creates and fences."""

    def source(self, position: int) -> Source:
        """The transaction log from ``position`` (the next offset to read)."""
        ...

    def sink(self) -> Sink:
        """A new transactional producer under this worker's id (:meth:`Sink.init` not
        called yet)."""
        ...

    def group(self) -> Group:
        """Join the workers' group."""
        ...

    def ensure_topics(self) -> None: ...

    def create(self, topics: dict[str, dict[str, str]]) -> None:
        """Create the missing ``topics`` (name -> config)."""
        ...

    def progress(self, on_held: OnHeld, on_hanging: OnHanging) -> dict[str, dict[str, Any]]:
        """The committed progress table (:func:`~workers.kafka.clients.progress_table`)."""
        ...

    def views(self, queries: Sequence[str], on_hanging: Callable[[list[TopicPartition]], None]
              ) -> dict[str, View]:
        """The committed views (:func:`~workers.kafka.views.read_views`)."""
        ...

    def integrated_view(self, query: str) -> ZSet[Row]:
        """What a query's committed change stream integrates to."""
        ...

    def members(self) -> set[str] | None:
        """The transactional ids of the group's members (None: unknown)."""
        ...

    def fence_absent(self, writers: set[str]) -> None: ...

    def unstick(self, writers: set[str], held: list[TopicPartition]) -> None: ...

    def close(self) -> None: ...


class KafkaPorts(Closing):
    """The worker's Kafka: its admin client (closed with it) and the clients it opens."""

    def __init__(self, config: WorkerConfig, topics: Topics) -> None:
        self._config = config
        self._topics = topics
        self._closing = contextlib.ExitStack()
        self._admin = self._closing.enter_context(AdminClient(config.kafka()))
        self._change_codec = AvroCodec("result_change", registry_for(config.registry_url))

    def source(self, position: int) -> TxSource:
        return TxSource(self._config, self._topics.tx, position)

    def sink(self) -> ResultSink:
        return ResultSink(self._config, self._topics, transactional_id(self._config.worker_id))

    def group(self) -> Ownership:
        return Ownership(self._config, self._topics.queries, self._admin)

    def ensure_topics(self) -> None:
        ensure_topics(self._admin, self._topics, self._config.query_partitions)

    def create(self, topics: dict[str, dict[str, str]]) -> None:
        create(self._admin, topics)

    def progress(self, on_held: OnHeld, on_hanging: OnHanging) -> dict[str, dict[str, Any]]:
        return progress_table(self._config, on_held=on_held, on_hanging=on_hanging)

    def views(self, queries: Sequence[str], on_hanging: Callable[[list[TopicPartition]], None]
              ) -> dict[str, View]:
        return read_views(self._config, queries, on_hanging=on_hanging)

    def integrated_view(self, query: str) -> ZSet[Row]:
        """For a query caught up before it had a view topic (an upgrade): exact only while
        the stream is complete; retention having deleted its beginning is logged as an
        error."""
        topic = self._topics.results(query)
        view: ZSet[Row] = {}
        with CompactedReader(self._config, topic) as reader:
            if any(low > 0 for low in reader.low_watermarks()):
                log.error("query %s: the beginning of %s was deleted before its view was "
                          "built: its catch-up starts from what remains", query, topic,
                          extra={"query": query})
            for record in reader.catch_up():
                change = self._change_codec.decode(record.value or b"")
                add_into(view, {row_from_avro(change["values"]): change["weight"]})
        return view

    def members(self) -> set[str] | None:
        return fencing.members(self._config, self._admin)

    def fence_absent(self, writers: set[str]) -> None:
        fencing.fence_absent(self._config, self._admin, writers)

    def unstick(self, writers: set[str], held: list[TopicPartition]) -> None:
        fencing.unstick(self._config, writers, held)

    def close(self) -> None:
        """Close the admin client (the clients it opened are closed by their users)."""
        self._closing.close()
