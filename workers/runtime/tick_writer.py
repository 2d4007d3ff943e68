"""One Kafka transaction per tick: a tick's output written whole or not at all.

A tick's transaction holds, in this order (:meth:`TickWriter.commit`):

1. sweep first what lost transactions may have left hanging, if that sweep failed before
   (a commit of this transactional id would end it as committed: :mod:`workers.kafka.hanging`);
2. every live query's progress — first, so that the coordinator registers the tick's
   partitions in one AddPartitionsToTxn: librdkafka registers together the partitions of
   the records produced within a millisecond of the first, and the progress, produced
   last, needed a second (1.59 → 1.04 a tick at half load, librdkafka's ``debug=eos``);
3. the snapshot rows of new queries (a registration's first record is a snapshot row, even
   of an empty result);
4. the views replaced (a registration, a rebuild), then the change rows with the new weights
   of the rows they touch in each view topic, then the rest of a tick in pieces, each piece
   computed as it is written; each view ends with its marker;
5. dead letters (the registrations refused, the log's: :mod:`workers.runtime.dead_letters`);
6. the group's metadata (``send_offsets_to_transaction``: a worker that lost its partitions
   cannot commit) — commit.

A transaction that fails is abandoned with its producer (a new one's ``init_transactions``
aborts it, and its sweep what the coordinator did not know of) and its held output carried
into the next tick, for the queries still owned then; a query that had pieces written is
owned anew instead, caught up from its committed progress like a query taken over
(:meth:`TickWriter._lost`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from confluent_kafka import TopicPartition

from workers import metrics
from workers.kafka.sink import TransactionFailed
from workers.kafka.views import MARKER
from workers.runtime.dead_letters import DeadLetters, Refused
from workers.runtime.faults import crash_point
from workers.runtime.phases import TickPhases
from workers.runtime.pieces import Pieces
from workers.runtime.ports import Group, Ports, Sink
from workers.runtime.queries import OwnedQueries
from workers.runtime.views import ViewWrites
from workers.zset import ZSet, add
from workers.zset.row import Row

log = logging.getLogger("workers.runtime.worker")  # the worker's log, whichever part writes
_ROWS_ADDED = metrics.RESULT_ROWS.labels("+")  # looked up once: labels() costs more than inc()
_ROWS_REMOVED = metrics.RESULT_ROWS.labels("-")


@dataclass(slots=True)
class TickOutput:
    """What one tick will write."""

    snapshots: dict[str, tuple[int, ZSet[Row]]] = field(default_factory=dict)  # at tx
    changes: dict[str, ZSet[Row]] = field(default_factory=dict)
    dead_letters: list[tuple[str, int, str, str, bytes]] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)  # query -> registration offset
    first: dict[str, int] = field(default_factory=dict)  # query -> tx_first of a catch-up
    # query -> (what its view topic holds, its view before ``changes``): the view is rewritten
    replaced: dict[str, tuple[ZSet[Row], ZSet[Row]]] = field(default_factory=dict)

    def drop(self, query: str) -> None:
        for table in (self.snapshots, self.changes, self.refused, self.first, self.replaced):
            table.pop(query, None)

    def __bool__(self) -> bool:
        """Whether there is anything to write."""
        return bool(self.snapshots or self.changes or self.replaced or self.dead_letters
                    or self.refused)


class TickWriter:
    """The transactional producer of the moment, and the topics it must sweep before its
    next commit."""

    def __init__(self, ports: Ports, queries: OwnedQueries, views: ViewWrites,
                 dead_letters: DeadLetters, phases: TickPhases) -> None:
        self._ports = ports
        self._queries = queries
        self._views = views
        self._dead_letters = dead_letters
        self._phases = phases
        self.sink: Sink = ports.sink()
        # The topics lost transactions wrote, to sweep before the next commit
        # (workers.kafka.hanging): a commit of this transactional id would end what they
        # may have left hanging as committed.
        self._unswept: set[str] = set()

    def start(self) -> None:
        """``init_transactions``: abort what a previous incarnation left open, fence it; then
        end what it may have left hanging on any topic the workers write.  Not a member of
        the group yet, this worker may be fenced meanwhile by one taking its queries up: then
        a new producer sweeps before the first commit."""
        self.sink.init()
        self._unswept = self.sink.worker_topics()
        self.sweep()

    def close(self) -> None:
        self.sink.close()  # the sink of the moment

    def commit(self, output: TickOutput, rest: Pieces, letters: list[tuple[Refused, bytes]],
               tx_first: int, tx_last: int, group: Group) -> bool:
        """Write the tick in one Kafka transaction — ``output``, then the ``rest`` of the
        change piece by piece, the transaction log's dead ``letters`` and their progress;
        False when the transaction is lost (``output`` is then to be sent again)."""
        sink = self.sink
        try:
            if self._unswept:  # Step 1: the sweep after a lost tick failed: now, or no commit
                sink.sweep(self._unswept)
                self._unswept = set()
            sink.begin()
            for query, registration in {**output.refused, **self._queries.registered()}.items():
                sink.progress(query, registration, tx_last)  # Step 2
            for query, (at, rows) in output.snapshots.items():  # Step 3
                registration = self._queries[query].offset
                # A registration's first record is a snapshot row, even when its result is
                # empty (the row of no values, weight 0): a reader from offset 0 can tell
                # that retention deleted nothing of its change stream (subscription.py).
                for row, weight in (rows or {MARKER: 0}).items():
                    sink.change(query, registration, row, weight, at, at, snapshot=True)
            for query, (held, view) in output.replaced.items():  # Step 4
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
            for topic, offset, code, reason, payload in output.dead_letters:  # Step 5
                sink.dead_letter(topic, 0, offset, code, reason, payload)
            dead_letters_done = self._dead_letters.write(sink, letters, tx_last)
            self._phases.mark("write")
            sink.send_offsets(group.offsets(), group.group_metadata())  # Step 6
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
        taken_up_s = self._queries.committed()
        if taken_up_s is not None:
            log.info("first tick after a take-up committed %.2f s after it began", taken_up_s)
        metrics.KAFKA_TRANSACTIONS.labels("committed").inc()
        for code in [letter[2] for letter in output.dead_letters] + [
                refused.code for refused, _ in letters]:
            metrics.DLQ_RECORDS.labels(code).inc()
        if dead_letters_done is not None:
            self._dead_letters.committed(dead_letters_done)
        crash_point("after-commit")
        return True

    def _write(self, query: str, rows: ZSet[Row], tx_first: int, tx_last: int,
               view: bool = True) -> None:
        """A query's change rows, and (``view``) the new weights of those rows in its view."""
        registration = self._queries[query].offset
        sink = self.sink
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

    def _write_view(self, query: str, weights: ZSet[Row], tx_last: int) -> None:
        registration = self._queries[query].offset
        for row, weight in weights.items():
            self.sink.view(query, registration, row, weight, tx_last)

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
        self._unswept |= self.sink.written
        self.sink = self._new_sink()
        self.sweep()
        for query in output.changes:
            output.first.setdefault(query, tx_first)
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

    def _new_sink(self) -> Sink:
        sink = self._ports.sink()
        sink.init()
        return sink

    def sweep(self) -> None:
        """End what a crash or lost transactions may have left hanging on the topics they
        wrote (``_unswept``); if that fails, the next commit tries first (a commit of this
        transactional id would end those records as committed)."""
        try:
            self.sink.sweep(self._unswept)
        except TransactionFailed as failure:
            log.warning("could not end what a crash or a lost transaction may have left "
                        "hanging on %d topics (tried again before the next commit): %s",
                        len(self._unswept), failure)
            self.sink = self._new_sink()
            return
        self._unswept = set()

    def unstick(self, writers: set[str], held: list[TopicPartition]) -> None:
        """End a hanging transaction that holds a read up (:mod:`workers.kafka.hanging`):
        its writer is this worker (whose sink has no transaction open while it reads), one
        the progress names, or a member of the group.  This worker's sweep covers every
        topic the workers write, and its queries are owned anew (:meth:`_reown_all`)."""
        self._unswept |= {tp.topic for tp in held}
        self.sweep()
        self._reown_all()
        others = writers | (self._ports.members() or set())
        self._ports.unstick(others - {self.sink.worker}, held)
