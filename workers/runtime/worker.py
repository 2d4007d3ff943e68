"""The worker: the transaction log in, every live query's changes out, exactly once.

Start (recovery), in numbered steps:

1. create the fixed topics if missing;
2. ``init_transactions``: abort what a previous incarnation left open, fence it;
3. read the progress table: ``committed`` = the last tx offset whose changes are committed;
4. load the newest snapshot at or before ``committed`` and replay the log up to it, with no
   query registered (nothing is emitted twice);
5. read the query table: a query whose progress names its registration resumes; any other
   is new and will emit its current result as snapshot rows.

One tick:

1. apply the registrations that arrived (new queries bootstrap, removed ones go);
2. poll a batch of transactions (bounded by count, bytes and wait);
3. decode them and apply them as one engine tick (each normalised after the ones before it,
   the queries stepped once with the summed delta); refused or undecodable records become
   dead letters;
4. in one Kafka transaction: snapshot rows, change rows, dead letters, and the progress of
   every live query (``tx_last``) — and of each registration refused in this tick, so a
   restart does not dead-letter it again; commit;
5. after the commit, snapshot the database if the interval has elapsed.

A failed commit ends the worker (``WorkersError``): its state is past the aborted tick, and
a restart recovers it exactly from the snapshot, the log and the committed progress.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient

from workers import metrics
from workers.config import WorkerConfig
from workers.engine import Engine
from workers.errors import WorkersError
from workers.kafka.avro import AvroCodec, DecodeError, registry_for
from workers.kafka.compacted import CompactedReader, KeyedRecord, latest
from workers.kafka.messages import Row, transaction_from_avro
from workers.kafka.sink import ResultSink
from workers.kafka.source import TxRecord, TxSource
from workers.kafka.topics import Topics, check_query_name, create, ensure_topics
from workers.runtime.checkpoint import SnapshotStore
from workers.runtime.faults import crash_point
from workers.runtime.registration import parse_registration
from workers.zset import add_into

log = logging.getLogger(__name__)
REPLAY_BATCH = 5000  # transactions per poll while replaying after a snapshot


@dataclass(slots=True)
class TickOutput:
    """What one tick will write."""

    snapshots: dict[str, dict[Row, int]] = field(default_factory=dict)
    changes: dict[str, dict[Row, int]] = field(default_factory=dict)
    dead_letters: list[tuple[str, int, str, str, bytes]] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)  # query -> registration offset


class Worker:
    """One worker process: shared arrangements, every registered query, one tx log."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.topics = Topics(config.topic_prefix)
        spark = None if config.executor == "local" else config.spark()
        self.engine = Engine(strategy=config.strategy, executor=config.executor, spark=spark,
                             auto=config.auto())
        self.snapshots = SnapshotStore(config.snapshot_dir)
        registry = registry_for(config.registry_url)
        self._tx_codec = AvroCodec("transaction", registry)
        self._registration_codec = AvroCodec("query_registration", registry)
        self._admin = AdminClient(config.kafka())
        self._sink = ResultSink(config, self.topics, f"deltalog-worker-{config.worker_id}")
        self._registrations: dict[str, int] = {}  # live query -> offset of its registration
        self._pending = TickOutput()
        self.committed = -1  # offset of the last transaction whose tick is committed
        self._last_snapshot = time.monotonic()
        self._source: TxSource | None = None
        self._queries: CompactedReader | None = None

    # -- start ---------------------------------------------------------------------------

    def start(self) -> None:
        ensure_topics(self._admin, self.topics)  # Step 1
        self._sink.init()  # Step 2
        progress = self._read_progress()  # Step 3
        self.committed = max((p["tx_last"] for p in progress.values()), default=-1)
        self._replay(self.committed)  # Step 4
        self._queries = CompactedReader(self.config, self.topics.queries)  # Step 5
        for record in latest(self._queries.catch_up()).values():
            resumed = progress.get(record.key, {}).get("registration") == record.offset
            self._register(record, resume=resumed)
        metrics.LAST_TX.set(self.committed)
        log.info("worker %s started at tx %d with %d queries (strategy %s, executor %s)",
                 self.config.worker_id, self.committed, len(self._registrations),
                 self.config.strategy, self.config.executor)

    def _read_progress(self) -> dict[str, dict[str, Any]]:
        codec = AvroCodec("progress")
        reader = CompactedReader(self.config, self.topics.progress)
        try:
            return {key: codec.decode(record.value)  # type: ignore[arg-type]
                    for key, record in latest(reader.catch_up()).items()}
        finally:
            reader.close()

    def _replay(self, committed: int) -> None:
        state = self.snapshots.latest(at_most=committed)
        if state is not None:
            self.engine.restore(state)
            log.info("loaded snapshot at tx %d", state.tx)
        start = state.tx + 1 if state is not None else 0
        self._source = TxSource(self.config, self.topics.tx, start)
        position = start - 1
        while position < committed:
            batch = self._source.next_batch(REPLAY_BATCH, 1 << 30, 1.0, until=committed)
            self._apply(batch, None)
            if batch:
                position = batch[-1].offset
        self.engine.tx = committed

    # -- ticks ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        self.start()
        try:
            while not stop.is_set():
                self.tick()
        finally:
            self.close()

    def tick(self) -> bool:
        """One tick; False when there was nothing to do."""
        assert self._source is not None and self._queries is not None
        started = time.perf_counter()
        output, self._pending = self._pending, TickOutput()
        for registration in self._queries.poll():  # Step 1
            self._register(registration, resume=False, output=output)
        config = self.config
        batch = self._source.next_batch(config.tick_max_tx, config.tick_max_bytes,  # Step 2
                                        config.tick_max_wait_s)
        self._apply(batch, output)  # Step 3
        if not batch and not output.snapshots and not output.dead_letters:
            return False
        tx_last = batch[-1].offset if batch else self.committed
        self._commit(output, self.committed + 1, tx_last)  # Step 4
        self.committed = tx_last
        metrics.TICKS.inc()
        metrics.LAST_TX.set(tx_last)
        metrics.TICK_SECONDS.observe(time.perf_counter() - started)
        self._maybe_snapshot()  # Step 5
        return True

    def _apply(self, batch: Sequence[TxRecord], output: TickOutput | None) -> None:
        """Apply a batch of transactions as one tick; ``output`` None while replaying
        (nothing is emitted).  Undecodable and refused ones become dead letters."""
        decoded: list[tuple[Any, int]] = []
        refused: list[tuple[TxRecord, WorkersError]] = []
        for record in batch:
            try:
                decoded.append((transaction_from_avro(self._tx_codec.decode(record.value)),
                                record.offset))
            except DecodeError as error:
                refused.append((record, error))
        changes, refusals = self.engine.transact_many(decoded)
        if batch:
            self.engine.tx = batch[-1].offset
        if output is None:
            return
        by_offset = {record.offset: record for record in batch}
        refused += [(by_offset[refusal.tx_id], refusal.error) for refusal in refusals]
        metrics.TX_CONSUMED.inc(len(batch) - len(refused))
        for record, err in sorted(refused, key=lambda pair: pair[0].offset):
            metrics.TX_REFUSED.labels(err.code.value).inc()
            output.dead_letters.append((self.topics.tx, record.offset, err.code.value, str(err),
                                        record.value))
        for query, rows in changes.items():
            add_into(output.changes.setdefault(query, {}), rows)

    def _commit(self, output: TickOutput, tx_first: int, tx_last: int) -> None:
        sink = self._sink
        sink.begin()
        for query, rows in output.snapshots.items():
            for row, weight in rows.items():
                sink.change(query, row, weight, self.committed, self.committed, snapshot=True)
        for query, rows in output.changes.items():
            for row, weight in rows.items():
                sink.change(query, row, weight, tx_first, tx_last)
                metrics.RESULT_ROWS.labels("+" if weight > 0 else "-").inc()
            crash_point("mid-produce")
        for topic, offset, code, reason, payload in output.dead_letters:
            sink.dead_letter(topic, 0, offset, code, reason, payload)
            metrics.DLQ_RECORDS.labels(code).inc()
        for query, registration in {**output.refused, **self._registrations}.items():
            sink.progress(query, registration, tx_last)
        crash_point("before-commit")
        try:
            sink.commit()
        except WorkersError:
            metrics.KAFKA_TRANSACTIONS.labels("failed").inc()
            raise
        metrics.KAFKA_TRANSACTIONS.labels("committed").inc()
        crash_point("after-commit")

    # -- queries -------------------------------------------------------------------------

    def _register(self, record: KeyedRecord, resume: bool,
                  output: TickOutput | None = None) -> None:
        """Apply one record of the query table (a tombstone unregisters)."""
        output = output if output is not None else self._pending
        name = record.key
        if name in self._registrations:
            self.engine.unregister(name)
            del self._registrations[name]
        if record.value is None:
            log.info("query %s removed", name)
        else:
            try:
                registration = parse_registration(self._registration_codec, record.value)
                check_query_name(name)
                rows = self.engine.register(name, registration.edn, registration.inputs,
                                            bootstrap=not resume)
            except WorkersError as err:
                log.warning("query %s refused: %s", name, err)
                if not resume:  # a refusal already committed is not dead-lettered again
                    output.dead_letters.append((self.topics.queries, record.offset,
                                                err.code.value, f"query {name}: {err}",
                                                record.value))
                    output.refused[name] = record.offset
            else:
                create(self._admin, {self.topics.results(name): {}})
                self._registrations[name] = record.offset
                if not resume:
                    output.snapshots[name] = rows
                log.info("query %s %s", name, "resumed" if resume else "registered")
        metrics.QUERIES.set(len(self._registrations))

    # -- snapshots and shutdown ------------------------------------------------------------

    def _maybe_snapshot(self) -> None:
        if time.monotonic() - self._last_snapshot < self.config.snapshot_interval_s:
            return
        with metrics.SNAPSHOT_SECONDS.time():
            self.snapshots.save(self.engine.state())
        crash_point("after-snapshot")
        self._last_snapshot = time.monotonic()

    def close(self) -> None:
        for client in (self._source, self._queries):
            if client is not None:
                client.close()
