"""The worker: the transaction log in, its queries' changes out, exactly once, in a fleet.

Every worker reads the whole transaction log (the shared arrangements are rebuilt from it);
the queries are shared out by the consumer group on ``deltalog.queries``
(:mod:`workers.runtime.ownership`): a worker keeps live only the queries of the partitions it
owns.  The worker's *position* is the last transaction its arrangements include.

Start, in numbered steps:

1. create the fixed topics if missing;
2. ``init_transactions``: abort what a previous incarnation left open, fence it; then end
   what it may have left hanging on any topic the workers write (``workers.kafka.hanging``);
3. load the newest snapshot from the shared store at or before the fleet's committed
   progress and no later than the transaction log's committed dead letters (the position;
   the log after it is read tick by tick);
4. join the group and wait for the first assignment.

A query given to this worker resumes after its committed progress ``Q``; the state it starts
in (:mod:`workers.runtime.queries`, the one owner of the queries) says how:

- *new* (no progress for this registration): it emits its current result as snapshot rows
  at the position;
- *resuming* (``Q`` = position): it resumes as it is;
- *waiting* (``Q`` > position, this worker is behind): ticks stop at ``Q`` until then;
- *catching up* (``Q`` < position: it comes from a worker that was behind, or this worker's
  transaction was lost): its committed view is read back from its view topic and the
  difference to the current result is emitted as one tick ``Q+1..position``.

Every query taken up has its view topic read (:mod:`workers.kafka.views`): it is the base of
a catch-up and of a bag's weights.  A view topic without this registration's view (a
registration that replaces another, a deployment from before view topics) is rebuilt in the
next tick: from the current result when ``Q`` = position or the query is new, else from the
change stream once (exact while its history is complete; :meth:`Worker._integrated_view`).

One tick:

1. apply ownership changes: drop the queries of revoked partitions, take new registrations;
2. poll a batch of transactions (bounded by count, bytes and wait; never past a waiting
   query's progress) — none in a tick that took registrations up: it commits them at the
   position, and the next tick applies what was sent meanwhile;
3. decode them and apply them as one engine tick; refused or undecodable records become
   dead letters, exactly once (see "Dead letters" below).  A tick whose
   delta is larger than ``tick_max_datoms`` is stepped in pieces: the first is held like a
   whole tick, the others are written as they are computed, so an enormous change (a hub
   retracted) is never in memory whole;
4. in one Kafka transaction: snapshot rows, change rows, the new weights of the rows they
   touch in each view topic (ending with the view's marker), dead letters, every live query's
   progress, and the group's metadata (``send_offsets_to_transaction``: a worker that lost
   its partitions cannot commit) — commit.  A transaction that fails is abandoned with
   its producer (a new one's ``init_transactions`` aborts it, and its sweep — over every
   topic the workers write — what the coordinator did not know of) and its held output
   carried into the next tick; every registered query is owned anew then, caught up from
   its committed progress like a query taken over (the sweep may have aborted a tick seen
   committed whose markers the broker skipped: docs/pipeline.md, "PostgreSQL");
5. resume the waiting queries the position has reached; snapshot the database if the
   interval has elapsed.

Dead letters of the transaction log are written by the owner of the queries topic's
partition 0, with their own progress ``D`` (the ``DEAD_LETTERS`` key of ``deltalog.progress``)
in the same Kafka transaction, so they change hands like a query: the new owner writes the
refusals after ``D`` and none before.  The transaction reports (``deltalog.reports``: the
ids a transaction's tempids were given) go the same way, under the same ``D``.  Every worker
keeps the refusals and reports it met after the committed ``D`` it last read (offset, code,
reason; the records themselves are read again from the log when needed), and starts from a
snapshot no later than ``D``: whichever worker takes partition 0 over knows every refusal and
report after ``D``.  (Under ``spark_sharing=fleet`` a follower does not normalise: a follower
taking partition 0 over writes the refusals its writer stamped, but not the reports between
``D`` and the hand-over.)
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from workers import metrics
from workers.collector import collector_paused
from workers.config import WorkerConfig
from workers.engine import Changes, Engine
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, DecodeError, registry_for
from workers.kafka.clients import progress_table
from workers.kafka.closing import Closing
from workers.kafka.compacted import CompactedReader, KeyedRecord
from workers.kafka.messages import Row, row_from_avro, transaction_from_avro
from workers.kafka.sink import ResultSink, TransactionFailed
from workers.kafka.source import TxRecord, TxSource
from workers.kafka.topics import Topics, check_query_name, create, ensure_topics
from workers.kafka.views import MARKER, View, read_views
from workers.runtime.backpressure import TickSize, resident_bytes
from workers.runtime.checkpoint import Snapshots, SnapshotStore
from workers.runtime.faults import crash_point
from workers.runtime.fencing import fence_absent, members, unstick
from workers.runtime.observe import StateGauges, forget_query, observe_steps
from workers.runtime.ownership import Ownership, Polled
from workers.runtime.phases import TickPhases
from workers.runtime.pieces import Pieces
from workers.runtime.process import transactional_id
from workers.runtime.queries import REGISTERED, OwnedQueries, OwnedQuery, QueryState
from workers.runtime.registration import parse_registration
from workers.runtime.views import ViewWrites
from workers.zset import add, add_into, neg

if TYPE_CHECKING:
    from workers.executors.spark import SparkSettings

log = logging.getLogger(__name__)
POLL_S = 0.2  # one wait for the group while starting
THROTTLE_PAUSE_S = 0.05  # pause per tick while over the memory ceiling
DEAD_LETTERS = "#tx-dead-letters"  # progress key of the tx log's dead letters (not a query name)
REREAD_TIMEOUT_S = 300.0  # reading refused records again from the log (outlasts a broker restart)
_ROWS_ADDED = metrics.RESULT_ROWS.labels("+")  # looked up once: labels() costs more than inc()
_ROWS_REMOVED = metrics.RESULT_ROWS.labels("-")


@dataclass(slots=True)
class TickOutput:
    """What one tick will write."""

    snapshots: dict[str, tuple[int, dict[Row, int]]] = field(default_factory=dict)  # at tx
    changes: dict[str, dict[Row, int]] = field(default_factory=dict)
    dead_letters: list[tuple[str, int, str, str, bytes]] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)  # query -> registration offset
    first: dict[str, int] = field(default_factory=dict)  # query -> tx_first of a catch-up
    # query -> (what its view topic holds, its view before ``changes``): the view is rewritten
    replaced: dict[str, tuple[dict[Row, int], dict[Row, int]]] = field(default_factory=dict)

    def drop(self, query: str) -> None:
        for table in (self.snapshots, self.changes, self.refused, self.first, self.replaced):
            table.pop(query, None)


@dataclass(frozen=True, slots=True)
class Refused:
    """A record of the transaction log refused (undecodable, or refused by the engine)."""

    offset: int
    code: str
    reason: str


class Worker(Closing):
    """One worker process: shared arrangements, the queries it owns, one tx log.  Its Kafka
    clients close with it (``with Worker(config) as worker``)."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.topics = Topics(config.topic_prefix, config.view_tombstones_ms)
        # A fleet sharing one Spark state: the engine writes it or follows it, as the
        # worker owns the queries topic's partition 0 or not — known once in the group.
        self.shared = config.spark_sharing == "fleet"
        self._spark = (None if config.executor == "local" and not self.shared
                       else config.spark())
        self.engine: Engine
        self._has_engine = not self.shared  # a shared state's worker makes it in the group
        if self._has_engine:
            self.engine = self._new_engine(self._spark)
        self.snapshots = Snapshots(SnapshotStore.at(config.snapshot_store()),
                                   config.snapshot_interval_s)
        registry = registry_for(config.registry_url)
        self._tx_codec = AvroCodec("transaction", registry)
        self._registration_codec = AvroCodec("query_registration", registry)
        self._change_codec = AvroCodec("result_change", registry)
        self._clients = contextlib.ExitStack()  # closed last opened first: the group first
        self._admin = self._clients.enter_context(AdminClient(config.kafka()))
        self._sink = ResultSink(config, self.topics, transactional_id(config.worker_id))
        self._clients.callback(lambda: self._sink.close())  # the sink of the moment
        self._queries = OwnedQueries()
        self._pending = TickOutput()
        # The topics lost transactions wrote, to sweep before the next commit
        # (workers.kafka.hanging): a commit of this transactional id would end what they
        # may have left hanging as committed.
        self._unswept: set[str] = set()
        self._refused: list[Refused] = []  # refusals after the last dead-letter progress read
        # Transaction reports (tempids' ids) after it, by transaction: written like dead letters
        self._reports: dict[int, dict[Any, int]] = {}
        self._dead_letters_done: int | None = None  # owner of partition 0: its D
        self._views = ViewWrites()
        self.committed = -1  # the position: last transaction the arrangements include
        self._source: TxSource | None = None
        self._ownership: Ownership | None = None
        limit = None if config.memory_limit_mb is None else config.memory_limit_mb << 20
        # a tick's transaction open a third of the coordinator's timeout makes ticks smaller
        self._tick_size = TickSize(config.tick_max_tx, limit,
                                   open_s=config.transaction_timeout_ms / 3000)
        self._state_gauges = StateGauges()
        self._phases = TickPhases()
        self._clients.callback(self._phases.close)
        self._applied_s = 0.0  # when the last applied transaction was appended to the log
        # When queries were last taken up, until a tick including them commits (not ready)
        self._taken_up_s: float | None = None
        metrics.MEMORY_LIMIT.set(limit or 0)

    def _new_engine(self, spark: SparkSettings | None) -> Engine:
        config = self.config
        return Engine(strategy=config.strategy, executor=config.executor, spark=spark,
                      auto=config.auto(), threads=config.step_threads)

    def _shared_engine(self, writing: bool) -> Engine:
        """The engine of a worker of a fleet sharing a Spark state: its writer (it takes up
        the state where its last writer stopped, or starts it), or a follower — which
        waits for the writer to start the state."""
        from workers.executors.spark.shared import shared_state_at  # PySpark only when asked

        assert self._spark is not None and self._spark.state is not None
        deadline = time.monotonic() + 2 * self.config.session_timeout_ms / 1000 + 60
        while not (started := shared_state_at(self._spark.state)) and not writing:
            if time.monotonic() > deadline:
                raise WorkersError(f"no writer started the shared Spark state at "
                                   f"{self._spark.state!r}: the worker owning the queries "
                                   "topic's partition 0 writes it", code=ErrorCode.SPARK)
            time.sleep(POLL_S)
        engine = self._new_engine(replace(self._spark, share=writing, follow=not writing))
        if not started:  # a new state: before the log's first transaction
            engine.seek(-1)
        log.info("%s the shared Spark state from tx %d", "writing" if writing else "following",
                 engine.tx)
        return engine

    def _new_sink(self) -> ResultSink:
        sink = ResultSink(self.config, self.topics, transactional_id(self.config.worker_id))
        sink.init()
        return sink

    # -- start ---------------------------------------------------------------------------

    def start(self) -> None:
        config = self.config
        ensure_topics(self._admin, self.topics, config.query_partitions)  # Step 1
        self._sink.init()  # Step 2
        # What a crash may have left hanging (workers.kafka.hanging), on every topic the
        # workers write.  Not a member of the group yet, this worker may be fenced meanwhile
        # by one taking its queries up: then a new producer sweeps before the first commit.
        self._unswept = self._sink.worker_topics()
        self._sweep()
        self._clients.callback(self._close_source)  # closed after the group
        if not self.shared:  # a shared state is the fleet's database: no snapshot to load
            state = self.snapshots.load(at_most=_snapshot_bound(self._progress()),  # Step 3
                                        dictionary=self.engine.dictionary)
            if state is not None:
                self.engine.restore(state, adopt=True)  # read for this engine alone
                log.info("loaded snapshot at tx %d", state.tx)
                self.committed = state.tx
            self._start_reading()
        self._ownership = self._clients.enter_context(
            Ownership(config, self.topics.queries, self._admin))  # Step 4
        deadline = time.monotonic() + 2 * config.session_timeout_ms / 1000
        polled: list[Polled] = []  # a shared state's worker: until its engine exists
        while time.monotonic() < deadline and (not self._ownership.assigned_once
                                               or self._ownership.catching_up):
            polled.append(self._ownership.poll(POLL_S))
            if not self._has_engine and self._ownership.assigned_once:
                self.engine = self._shared_engine(writing=0 in self._ownership.owned)
                self._has_engine = True
                self.committed = self.engine.tx
                self._start_reading()
            if self._has_engine:
                for each in polled:
                    self._own(each, self._pending)
                polled = []
        metrics.LAST_TX.set(self.committed)
        log.info("worker %s started at tx %d owning %d queries (strategy %s, executor %s)",
                 config.worker_id, self.committed, len(self._queries), config.strategy,
                 config.executor)

    def _start_reading(self) -> None:
        """Read the transaction log after the position (a follower of a shared state reads
        it only to know its lag, until it writes the state)."""
        self.engine.seek(self.committed)
        self._close_source()
        self._source = TxSource(self.config, self.topics.tx, self.committed + 1)

    def _close_source(self) -> None:
        if self._source is not None:
            self._source.close()

    # -- ticks ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Start, then tick until ``stop`` is set."""
        self.start()
        while not stop.is_set():
            self.tick()

    def tick(self) -> bool:
        """One tick; False when there was nothing to do."""
        assert self._source is not None and self._ownership is not None
        started = time.perf_counter()
        self._phases.begin()
        output, self._pending = self._pending, TickOutput()
        taken_up = self._own(self._ownership.poll(), output)  # Step 1
        config = self.config
        until = self._queries.waits_for()
        resident = resident_bytes()
        tick_tx = self._tick_size.next(resident)
        metrics.MEMORY_BYTES.set(resident)
        metrics.TICK_LIMIT_TX.set(tick_tx)
        metrics.THROTTLED.set(int(self._tick_size.throttled))
        if self._tick_size.throttled:
            gc.collect()
            time.sleep(THROTTLE_PAUSE_S)  # consume slower while over the memory ceiling
        # A tick that takes queries up commits them at the position, without the
        # transactions sent meanwhile: the moved queries produce again one engine step
        # sooner (docs/fleet.md, "Takeover time"); the next tick applies those.
        following = self.shared and self.engine.following
        batch = [] if taken_up or following else self._source.next_batch(  # Step 2
            tick_tx, config.tick_max_bytes, config.tick_max_wait_s, until=until)
        self._phases.mark("poll")
        if batch:
            self._phases.queued(batch[0].appended_s)
        if following:  # Step 3
            rest = Pieces(iter(())) if taken_up else self._follow(output)
        else:
            rest = self._apply(batch, output)
        letters = self._dead_letters(batch)
        moved = self.engine.tx != self.committed  # a follower's step moves it, batch or not
        if not (batch or moved or output.snapshots or output.changes or output.replaced
                or output.dead_letters or output.refused or letters):
            self._taken_up_s = None  # queries taken up with nothing to write are live as is
            self.engine.idle()
            if following and self._dead_letters_done is not None:
                self._lead()  # at its writer's newest version, with nothing to write
            elif following:  # a follower waits for its writer's next version
                time.sleep(config.tick_max_wait_s)
            elif self.committed >= 0:  # a catch-up's last ticks may have come in one interval
                self._maybe_snapshot()
            return False
        tx_last = self.engine.tx
        opened = time.perf_counter()
        committed = self._commit(output, rest, letters, self.committed + 1, tx_last)  # Step 4
        self._tick_size.closed(time.perf_counter() - opened, committed, len(batch) >= tick_tx)
        if committed:
            self._phases.committed(tx_last)
        self.committed = tx_last
        self._resume_waiting()  # Step 5
        if following and self._dead_letters_done is not None:
            self._lead()
        self._observe(batch)
        if committed:
            metrics.TICKS.inc()
            metrics.TICK_SECONDS.observe(time.perf_counter() - started)
            self._maybe_snapshot()
        return True

    def _apply(self, batch: Sequence[TxRecord], output: TickOutput) -> Pieces:
        """Apply a batch of transactions as one tick.  Undecodable and refused ones are kept
        for their dead letters (:meth:`_dead_letters`).  The first piece of the change goes
        into ``output``; the rest (a tick larger than ``tick_max_datoms``) are returned,
        computed as ``_commit`` writes them."""
        refused: list[tuple[TxRecord, WorkersError]] = []
        with collector_paused():  # the batch's forms are made and freed inside
            pieces, refusals = self.engine.transact_in_chunks(
                self._decoded(batch, refused), self.config.tick_max_datoms)
        self._phases.mark("normalise")
        self._reports.update(self.engine.tempids)
        stream = Pieces(self._observed(piece) for piece in pieces)
        if batch:
            self.engine.seek(batch[-1].offset)
        by_offset = {record.offset: record for record in batch}
        refused += [(by_offset[refusal.tx_id], refusal.error) for refusal in refusals]
        metrics.TX_CONSUMED.inc(len(batch) - len(refused))
        for record, err in sorted(refused, key=lambda pair: pair[0].offset):
            metrics.TX_REFUSED.labels(err.code.value).inc()
            self._refused.append(Refused(record.offset, err.code.value, str(err)))
        if self.shared:  # the state's next versions carry them (a writer taking over)
            self.engine.stamp_refusals([(r.offset, r.code, r.reason) for r in self._refused])
        for query, rows in stream.first().items():
            add_into(output.changes.setdefault(query, {}), rows)
        self._phases.mark("step")  # a tick in pieces steps the others in "write"
        return stream

    def _follow(self, output: TickOutput) -> Pieces:
        """Step 3 of a follower of a shared Spark state: its writer's versions since its own.
        Owning the queries topic's partition 0 (it is about to write the state), it writes
        the dead letters of the refusals its writer stamped and did not write."""
        for query, rows in self.engine.follow().items():
            add_into(output.changes.setdefault(query, {}), rows)
        if self._dead_letters_done is not None:
            self._stamped_refusals()
        return Pieces(iter(()))

    def _stamped_refusals(self) -> None:
        """The refusals the shared state's version is stamped with, after the committed
        dead letters: its last writer met them and did not write them."""
        done = self._dead_letters_done
        assert done is not None
        known = {refused.offset for refused in self._refused}
        self._refused += [Refused(*each) for each in self.engine.stamped_refusals()
                          if each[0] > done and each[0] not in known]
        self._refused.sort(key=lambda refused: refused.offset)

    def _lead(self) -> None:
        """A follower owning the queries topic's partition 0 writes the shared state from
        here on, reading the log after its position (at its writer's newest version; else
        it follows on and tries again after the next tick)."""
        if self.engine.lead():
            log.info("writing the shared Spark state from tx %d", self.committed)
            self._start_reading()

    def _decoded(self, batch: Sequence[TxRecord], refused: list[tuple[TxRecord, WorkersError]]
                 ) -> Iterator[tuple[Any, int]]:
        """The batch's transactions as forms with their offsets; the undecodable ones go to
        ``refused``."""
        for record in batch:
            try:
                yield (transaction_from_avro(self._tx_codec.decode(record.value)),
                       record.offset)
            except DecodeError as error:
                refused.append((record, error))

    def _dead_letters(self, batch: Sequence[TxRecord]) -> list[tuple[Refused, bytes]]:
        """The transaction log's dead letters this tick writes, with their records: as the
        owner of partition 0, every refusal after its dead-letter progress (those of a
        hand-over may precede this batch: their records are read again from the log)."""
        done = self._dead_letters_done
        if done is None:
            return []
        due = [refused for refused in self._refused if refused.offset > done]
        payloads = {record.offset: record.value for record in batch}
        missing = {refused.offset for refused in due} - payloads.keys()
        if missing:
            payloads |= self._reread(missing)
        return [(refused, payloads[refused.offset]) for refused in due]

    def _reread(self, offsets: set[int]) -> dict[int, bytes]:
        """The records of the transaction log at ``offsets``."""
        found: dict[int, bytes] = {}
        deadline = time.monotonic() + REREAD_TIMEOUT_S
        with TxSource(self.config, self.topics.tx, min(offsets)) as source:
            while len(found) < len(offsets):
                if time.monotonic() > deadline:
                    raise WorkersError(f"cannot read tx log records {sorted(offsets)} again",
                                       code=ErrorCode.KAFKA)
                found |= {record.offset: record.value for record in source.next_batch(
                    self.config.tick_max_tx, self.config.tick_max_bytes, POLL_S,
                    until=max(offsets)) if record.offset in offsets}
        return found

    def _observed(self, piece: Changes) -> Changes:
        observe_steps(self.engine.last_work)
        return piece

    def _commit(self, output: TickOutput, rest: Pieces,
                letters: list[tuple[Refused, bytes]], tx_first: int, tx_last: int) -> bool:
        """Write the tick in one Kafka transaction — ``output``, then the ``rest`` of the
        change piece by piece, the transaction log's dead ``letters`` and their progress;
        False when the transaction is lost."""
        assert self._ownership is not None
        sink = self._sink
        try:
            if self._unswept:  # the sweep after a lost tick failed: now, or no commit
                sink.sweep(self._unswept)
                self._unswept = set()
            sink.begin()
            for query, (at, rows) in output.snapshots.items():
                registration = self._queries[query].offset
                # A registration's first record is a snapshot row, even when its result is
                # empty (the row of no values, weight 0): a reader from offset 0 can tell
                # that retention deleted nothing of its change stream (subscription.py).
                for row, weight in (rows or {MARKER: 0}).items():
                    sink.change(query, registration, row, weight, at, at, snapshot=True)
            for query, (held, view) in output.replaced.items():
                self._write_view(query, self._views.replaced(
                    query, held, add(view, output.changes.get(query, {}))), tx_last)
            for query, rows in output.changes.items():
                self._write(query, rows, output.first.get(query, tx_first), tx_last,
                            view=query not in output.replaced)
            for piece in rest:
                for query, rows in piece.items():
                    self._write(query, rows, output.first.get(query, tx_first), tx_last)
            for query in sorted({*output.replaced, *output.changes, *rest.queries}):
                sink.view_marker(query, self._queries[query].offset, tx_last)
            for topic, offset, code, reason, payload in output.dead_letters:
                sink.dead_letter(topic, 0, offset, code, reason, payload)
            for refused, payload in letters:
                sink.dead_letter(self.topics.tx, 0, refused.offset, refused.code,
                                 refused.reason, payload)
            dead_letters_done = self._dead_letters_done
            if dead_letters_done is not None:
                for tx in sorted(tx for tx in self._reports if tx > dead_letters_done):
                    sink.report(tx, self._reports[tx])
                dead_letters_done = max(dead_letters_done, tx_last)
                sink.progress(DEAD_LETTERS, -1, dead_letters_done)
            for query, registration in {**output.refused, **self._queries.registered()}.items():
                sink.progress(query, registration, tx_last)
            self._phases.mark("write")
            sink.send_offsets(self._ownership.offsets(), self._ownership.group_metadata())
            self._phases.mark("offsets")
            crash_point("before-commit")
            sink.commit()
            self._phases.mark("commit")
        except TransactionFailed as error:
            metrics.KAFKA_TRANSACTIONS.labels("aborted").inc()
            self._views.aborted()
            self._lost(error, output, tx_first, rest.drain())
            return False
        self._views.committed()
        self._queries.committed()
        if self._taken_up_s is not None:
            log.info("first tick after a take-up committed %.2f s after it began",
                     time.monotonic() - self._taken_up_s)
            self._taken_up_s = None
        metrics.KAFKA_TRANSACTIONS.labels("committed").inc()
        for code in [letter[2] for letter in output.dead_letters] + [
                refused.code for refused, _ in letters]:
            metrics.DLQ_RECORDS.labels(code).inc()
        if dead_letters_done is not None:
            self._dead_letters_written(dead_letters_done)
        crash_point("after-commit")
        return True

    def _dead_letters_written(self, done: int) -> None:
        """The transaction log's dead letters are committed up to ``done``."""
        self._dead_letters_done = done
        self._forget_refused(done)

    def _forget_refused(self, done: int) -> None:
        """Refusals and reports up to ``done`` are committed."""
        self._refused = [refused for refused in self._refused if refused.offset > done]
        self._reports = {tx: tempids for tx, tempids in self._reports.items() if tx > done}

    def _write(self, query: str, rows: dict[Row, int], tx_first: int, tx_last: int,
               view: bool = True) -> None:
        """A query's change rows, and (``view``) the new weights of those rows in its view."""
        registration = self._queries[query].offset
        sink = self._sink
        if view:
            weights = self._views.changed(query, rows)
            for row, weight in rows.items():
                sink.change_and_view(query, registration, row, weight, weights[row], tx_first,
                                     tx_last)
        else:
            for row, weight in rows.items():
                sink.change(query, registration, row, weight, tx_first, tx_last)
        added = sum(weight > 0 for weight in rows.values())
        _ROWS_ADDED.inc(added)
        _ROWS_REMOVED.inc(len(rows) - added)
        crash_point("mid-produce")

    def _write_view(self, query: str, weights: dict[Row, int], tx_last: int) -> None:
        registration = self._queries[query].offset
        for row, weight in weights.items():
            self._sink.view(query, registration, row, weight, tx_last)

    def _lost(self, error: TransactionFailed, output: TickOutput, tx_first: int,
              streamed: set[str]) -> None:
        """A transaction that did not commit (the group rebalanced meanwhile, the broker
        went away, the coordinator timed it out): its held output is sent again with the
        next tick, for the queries still owned then — the next poll drops those that moved,
        and their new owner resumes from their committed progress.  The ``streamed`` queries
        (pieces written, not held) are owned anew: caught up from their committed view.  The
        producer is replaced, not just aborted: ``init_transactions`` of the new one ends the
        open transaction, and no state of the failure stays behind (librdkafka 2.16 can hang
        in ``send_offsets_to_transaction`` on a producer whose transaction failed around a
        rebalance or a broker restart — confluentinc/librdkafka#5456, #5511).  The failed one
        is let go, not closed: closing would abort its transaction first, while dropping the
        last reference destroys it without that call.  The new one then ends what the lost
        transaction may have left hanging (:mod:`workers.kafka.hanging`).  Even a transaction
        refused only for a stale generation is not aborted on its own producer: the abort
        bumps the producer's epoch, and its records still in flight then came back fenced, a
        fatal error for that producer that ended the worker (CI's chaos run of takeover4,
        docs/fleet.md).  The sweep covers every topic the workers write and every query is
        owned anew (:meth:`_reown_all`): an earlier tick this worker saw committed may hang
        too (the broker skipped its markers), and the sweep aborts it."""
        log.warning("tick not committed, sent again with the next one: %s", error,
                    extra={"tx_first": tx_first})
        self._unswept |= self._sink.written
        self._sink = self._new_sink()
        self._sweep()
        for query in output.changes:
            output.first.setdefault(query, tx_first)
        self._pending = output
        lost = self._queries.lose(streamed)
        if lost:
            log.warning("queries %s had pieces written: owned anew next tick", ", ".join(lost))
        self._reown_all()

    def _reown_all(self) -> None:
        """Every registered query owned anew next tick, caught up from its committed
        progress and view, after a sweep (which covers every topic the workers write): a
        tick this worker saw committed whose markers the broker skipped (Kafka 4.3.1 in a
        controlled shutdown of a one-node cluster: "Couldn't find leader endpoint ... these
        partitions are likely deleted already and hence can be skipped", then
        CompleteCommit) hangs like a lost one, and the sweep aborts it — on every partition,
        so that its changes, view rows and progress go together; the queries then redo it
        from what is committed (docs/pipeline.md, "PostgreSQL")."""
        again = self._queries.lose_all()
        if again:
            log.info("queries %s owned anew next tick (after a sweep)", ", ".join(again))

    def _sweep(self) -> None:
        """End what a crash or lost transactions may have left hanging on the topics they
        wrote (``_unswept``); if that fails, the next commit tries first (a commit of this
        transactional id would end those records as committed)."""
        try:
            self._sink.sweep(self._unswept)
        except TransactionFailed as failure:
            log.warning("could not end what a crash or a lost transaction may have left "
                        "hanging on %d topics (tried again before the next commit): %s",
                        len(self._unswept), failure)
            self._sink = self._new_sink()
            return
        self._unswept = set()

    def _observe(self, batch: Sequence[TxRecord]) -> None:
        """The gauges after a tick: position, lag (records and age), snapshot age, sizes."""
        lag = self.lag()
        if batch:
            self._applied_s = batch[-1].appended_s
        metrics.LAST_TX.set(self.committed)
        metrics.LAG_TX.set(lag)
        if self._applied_s:
            metrics.LAG_SECONDS.set(max(time.time() - self._applied_s, 0.0) if lag else 0.0)
        metrics.SNAPSHOT_AGE.set(self.snapshots.age_s())
        self._state_gauges.observe(self.engine.db, self.engine.datoms)

    def lag(self) -> int:
        """Transactions in the log not yet applied here."""
        assert self._source is not None
        return max(self._source.end() - (self.committed + 1), 0)

    def readiness(self) -> tuple[bool, str]:
        """Ready: owns its share and is caught up (see :mod:`workers.runtime.health`)."""
        ownership = self._ownership
        if self._source is None or ownership is None or not ownership.assigned_once:
            return False, "starting: not in the workers' group yet"
        if ownership.catching_up:
            return False, "reading the registrations of newly owned queries"
        if self._taken_up_s is not None:
            return False, "taking queries up: their progress, views, first tick"
        if waiting := self._queries.waiting():
            return False, f"{waiting} queries wait for the log to reach their progress"
        lag = self.lag()
        if lag > self.config.ready_lag_tx:
            return False, f"{lag} transactions behind the log"
        return True, f"caught up (lag {lag}), {len(self._queries.registered())} queries"

    # -- queries -------------------------------------------------------------------------

    def _own(self, polled: Polled, output: TickOutput) -> bool:
        """Drop the queries of revoked partitions; take the registrations that arrived.  The
        committed views of the queries to catch up are read together (one reader).  Whether
        any registration was taken up."""
        for query in self._queries:
            if query.partition in polled.revoked:
                self._drop(query.name, output)
        assert self._ownership is not None
        if 0 in polled.revoked:
            self._dead_letters_done = None
            if self.shared and not self.engine.following:  # another worker writes now
                self.engine.step_down()
                log.info("following the shared Spark state from tx %d", self.engine.tx)
        takes_dead_letters = 0 in self._ownership.owned and self._dead_letters_done is None
        records = self._queries.to_reown(self._ownership.owned) + polled.records
        if records or takes_dead_letters:
            self._take(records, takes_dead_letters, output)
        metrics.QUERIES.set(len(self._queries.registered()))
        return bool(records)

    def _take(self, records: list[KeyedRecord], dead_letters_too: bool,
              output: TickOutput) -> None:
        """Take up ``records`` of the queries table and, when partition 0 has just come
        here, the transaction log's dead letters, from the committed progress."""
        started = time.monotonic()
        self._taken_up_s = self._taken_up_s or started
        fences: list[threading.Thread] = []  # overlapping the reads (_fencing)
        fenced: set[str] = set()

        def fence(writers: set[str]) -> None:
            if unfenced := writers - fenced - {self._sink.worker}:
                fences.append(self._fencing(unfenced))
                fenced.update(unfenced)

        progress = self._progress(fence)
        read_s = time.monotonic() - started
        if dead_letters_too:
            dead_letters = progress.get(DEAD_LETTERS)
            self._dead_letters_written(self.committed if dead_letters is None
                                       else dead_letters["tx_last"])
            if self.shared:
                self._stamped_refusals()
            log.info("writing the tx log's dead letters after tx %d", self._dead_letters_done)
        if records:
            done = {record: _committed_progress(record, progress.get(record.key))
                    for record in records}
            writers = {p["worker"] for p in progress.values()}
            fence(writers)
            views = read_views(self.config, [record.key for record in records
                                             if record.value is not None],
                               on_hanging=lambda held: self._unstick(writers, held))
            viewed_s = time.monotonic() - started
            for record in records:
                self._register(record, done[record], views.get(record.key, View()), output)
            log.info("took %d registrations up in %.2f s: progress read in %.2f s, committed "
                     "views in %.2f s (%d records)", len(records), time.monotonic() - started,
                     read_s, viewed_s - read_s, sum(v.records_read for v in views.values()))
            create(self._admin, {topic: config for record in records
                                 if record.key in self._queries
                                 for topic, config in self.topics.of_query(record.key).items()})
        for thread in fences:
            thread.join()

    def _progress(self, on_held: Callable[[set[str]], None] | None = None
                  ) -> dict[str, dict[str, Any]]:
        """The committed progress table; a read held up by a dead worker's open transaction
        ends it (:mod:`workers.runtime.fencing`; ``on_held`` instead of :meth:`_fence`, given
        the writers).  The refusals whose dead letters it shows committed are forgotten."""
        progress = progress_table(self.config, on_held=on_held or self._fence,
                                  on_hanging=self._unstick)
        dead_letters = progress.get(DEAD_LETTERS)
        if dead_letters is not None and self._dead_letters_done is None:
            self._forget_refused(dead_letters["tx_last"])
        return progress

    def _fence(self, writers: set[str]) -> None:
        """Fence the ``writers`` gone from the group, never this worker (not a member while
        it starts): fencing itself would cost its producer."""
        fence_absent(self.config, self._admin, writers - {self._sink.worker})

    def _unstick(self, writers: set[str], held: list[TopicPartition]) -> None:
        """End a hanging transaction that holds a read up (:mod:`workers.kafka.hanging`):
        its writer is this worker (whose sink has no transaction open while it reads), one
        the progress names, or a member of the group.  This worker's sweep covers every
        topic the workers write, and its queries are owned anew (:meth:`_reown_all`)."""
        self._unswept |= {tp.topic for tp in held}
        self._sweep()
        self._reown_all()
        others = writers | (members(self.config, self._admin) or set())
        unstick(self.config, others - {self._sink.worker}, held)

    def _drop(self, name: str, output: TickOutput) -> None:
        if self._queries.drop(name) in REGISTERED:
            self.engine.unregister(name)
            self._views.forget(name)
            forget_query(name)
        output.drop(name)

    def _register(self, record: KeyedRecord, done: int | None, view: View,
                  output: TickOutput) -> None:
        """Apply one record of the query table (a tombstone unregisters); ``done`` is the
        committed progress of this registration (None: a new query), ``view`` what its view
        topic holds."""
        name = record.key
        self._drop(name, output)
        if record.value is None:
            log.info("query %s removed", name, extra={"query": name})
            return
        state = QueryState.taken_up(done, self.committed)
        try:
            registration = parse_registration(self._registration_codec, record.value)
            check_query_name(name)
            if state is QueryState.WAITING:
                self.engine.plan(registration.edn, registration.inputs)  # refuse it now
                self._queries.take(record, registration, done, self.committed, view)
                log.info("query %s waits for tx %d", name, done, extra={"query": name})
                return
            rows = self.engine.register(name, registration.edn, registration.inputs,
                                        bootstrap=state is not QueryState.RESUMING
                                        or not view.of(record.offset))
        except WorkersError as err:
            log.warning("query %s refused: %s", name, err, extra={"query": name})
            if done is None:  # a refusal already committed is not dead-lettered again
                output.dead_letters.append((self.topics.queries, record.offset,
                                            err.code.value, f"query {name}: {err}",
                                            record.value))
                output.refused[name] = record.offset
            return
        query = self._queries.take(record, registration, done, self.committed, view)
        self._views.own(name, self.engine.is_bag(name), view.rows)
        if query.state is QueryState.NEW:
            output.snapshots[name] = (self.committed, rows)
            output.replaced[name] = (view.rows, rows)
            log.info("query %s registered", name, extra={"query": name})
        elif query.state is QueryState.CATCHING_UP:
            assert done is not None  # only a query with committed progress catches up
            self._catch_up(name, record.offset, done, view, rows, output)
        else:
            self._resumed(query, view, rows, output)

    def _catch_up(self, name: str, offset: int, done: int, view: View, rows: dict[Row, int],
                  output: TickOutput) -> None:
        """A query committed up to ``done``, at ``rows`` now: the difference from its
        committed view, as one change ``done + 1 ..`` the tick's last transaction."""
        committed = view.rows if view.of(offset) else self._integrated_view(name)
        output.changes[name] = add(rows, neg(committed))
        output.first[name] = done + 1
        if not view.of(offset):
            output.replaced[name] = (view.rows, committed)
        log.info("query %s caught up from tx %d", name, done, extra={"query": name})

    def _resumed(self, query: OwnedQuery, view: View, rows: dict[Row, int],
                 output: TickOutput) -> None:
        """A query resumed as it was; its view is built from ``rows``, its current result,
        if its topic does not hold it yet (``view``: what the topic holds)."""
        name = query.name
        if not view.of(query.offset):
            output.replaced[name] = (view.rows, rows)
            log.info("query %s: its view is built from its current result", name,
                     extra={"query": name})
        log.info("query %s resumed", name, extra={"query": name})

    def _resume_waiting(self) -> None:
        for query, view in self._queries.reached(self.committed):
            registration = query.registration
            catching_up = query.state is QueryState.CATCHING_UP  # a follower passed it
            rows = self.engine.register(query.name, registration.edn, registration.inputs,
                                        bootstrap=catching_up or not view.of(query.offset))
            self._views.own(query.name, self.engine.is_bag(query.name), view.rows)
            if catching_up:
                assert query.progress is not None
                self._catch_up(query.name, query.offset, query.progress, view, rows,
                               self._pending)
            else:
                self._resumed(query, view, rows, self._pending)

    def _fencing(self, writers: set[str]) -> threading.Thread:
        """Fence the ``writers`` no longer in the group from a thread of their own, while a
        takeover reads on: the progress read once held up, else the views read from its start
        (:mod:`workers.kafka.views`: one reader for all the queries a takeover moves; a worker
        killed was most likely mid-tick, and its open transaction holds that read up once it
        reaches it).  The coordinator starts the abort at the fence's first request;
        librdkafka then waits a fixed 500 ms before asking again and returning, so a read that
        waited for the fence lost that too, while these go on as soon as the abort markers
        are written (they read up to the high watermark: a final state, as before)."""
        fencing = threading.Thread(target=self._fence, args=(writers,), name="deltalog-fence",
                                   daemon=True)
        fencing.start()
        return fencing

    def _integrated_view(self, name: str) -> dict[Row, int]:
        """A query's committed view as its change stream integrates to, for a query caught
        up before it had a view topic (an upgrade): exact only while the stream is complete;
        retention having deleted its beginning is logged as an error."""
        topic = self.topics.results(name)
        view: dict[Row, int] = {}
        with CompactedReader(self.config, topic) as reader:
            if any(low > 0 for low in reader.low_watermarks()):
                log.error("query %s: the beginning of %s was deleted before its view was "
                          "built: its catch-up starts from what remains", name, topic,
                          extra={"query": name})
            for record in reader.catch_up():
                change = self._change_codec.decode(record.value or b"")
                add_into(view, {row_from_avro(change["values"]): change["weight"]})
        return view

    # -- snapshots and shutdown ------------------------------------------------------------

    def _maybe_snapshot(self) -> None:
        if self.shared:  # the shared state is the fleet's database, kept where it is
            return
        started = time.perf_counter()
        if self.snapshots.save_if_due(self.committed,  # written at once: nothing to copy
                                      lambda: self.engine.state(shared=True)):
            metrics.SNAPSHOT_SECONDS.observe(time.perf_counter() - started)
            crash_point("after-snapshot")

    def close(self) -> None:
        """Leave the group (its queries move at once, not after the session timeout), then
        close the tx log's consumer, the producer and the admin client."""
        self._clients.close()



def _snapshot_bound(progress: dict[str, dict[str, Any]]) -> int:
    """The last snapshot a worker may start from: the last transaction any query committed
    (-1: none) — snapshots are written after committed ticks, so one beyond it was left by
    another log (a topic deleted and created again), and a fleet with no query yet replays
    the log — and no later than the committed dead letters, whose refusals after them a
    worker must have met itself (docs/fleet.md)."""
    bound = max((int(p["tx_last"]) for p in progress.values()), default=-1)
    dead_letters = progress.get(DEAD_LETTERS)
    return bound if dead_letters is None else min(bound, int(dead_letters["tx_last"]))


def _committed_progress(record: KeyedRecord, progress: dict[str, Any] | None) -> int | None:
    """The last transaction committed for this very registration (None: a new query, or a
    progress left by an earlier registration of the same name)."""
    if progress is None or progress["registration"] != record.offset:
        return None
    return int(progress["tx_last"])
