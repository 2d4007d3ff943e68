"""The queries' lifecycle in a worker: taken up from their committed progress, dropped when
their partition moves.

The queries are shared out by the consumer group on ``deltalog.queries``
(:mod:`workers.runtime.ownership`): a worker keeps live only the queries of the partitions it
owns.  A query given to this worker resumes after its committed progress ``Q``; the state it
starts in (:mod:`workers.runtime.queries`, the one owner of the queries) says how:

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
change stream once (exact while its history is complete: ``Ports.integrated_view``).

A tick's ownership changes, in numbered steps (:meth:`QueryLifecycle.own`):

1. drop the queries of revoked partitions; partition 0 revoked, hand the log's dead letters
   (and a shared state's writing) over;
2. read the committed progress (a read held up by a dead worker's open transaction fences
   it), and, partition 0 just come here, take the log's dead letters up from theirs;
3. read the committed views of the registrations taken up (one reader), fencing the writers
   the progress names meanwhile;
4. register each in the engine in the state its progress gives, into the tick's output;
5. create the topics of the queries taken up.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from workers import metrics
from workers.config import WorkerConfig
from workers.errors import WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.compacted import KeyedRecord
from workers.kafka.registration import parse_registration
from workers.kafka.topics import Topics, check_query_name
from workers.kafka.views import View
from workers.runtime.dead_letters import DeadLetters
from workers.runtime.engine_role import EngineRole
from workers.runtime.observe import forget_query
from workers.runtime.ownership import Polled
from workers.runtime.ports import Group, OnHeld, Ports
from workers.runtime.queries import REGISTERED, OwnedQueries, OwnedQuery, QueryState
from workers.runtime.tick_writer import TickOutput, TickWriter
from workers.runtime.views import ViewWrites
from workers.zset import ZSet, add, neg
from workers.zset.row import Row

log = logging.getLogger("workers.runtime.worker")  # the worker's log, whichever part writes


class QueryLifecycle:
    """Takes queries up and drops them, over the state machine of :class:`OwnedQueries`."""

    def __init__(self, config: WorkerConfig, topics: Topics, ports: Ports, role: EngineRole,
                 queries: OwnedQueries, views: ViewWrites, dead_letters: DeadLetters,
                 writer: TickWriter) -> None:
        self._topics = topics
        self._ports = ports
        self._role = role
        self._queries = queries
        self._views = views
        self._dead_letters = dead_letters
        self._writer = writer
        self._registration_codec = AvroCodec("query_registration",
                                             registry_for(config.registry_url))

    def own(self, polled: Polled, group: Group, position: int, output: TickOutput) -> bool:
        """Drop the queries of revoked partitions; take the registrations that arrived.  The
        committed views of the queries to catch up are read together (one reader).  Whether
        any registration was taken up."""
        for query in self._queries:  # Step 1
            if query.partition in polled.revoked:
                self._drop(query.name, output)
        if 0 in polled.revoked:
            self._dead_letters.hand_over()
            self._role.hand_over()  # another worker writes the shared state now
        takes_dead_letters = 0 in group.owned and not self._dead_letters.writing
        records = self._queries.to_reown(group.owned) + polled.records
        if records or takes_dead_letters:
            self._take(records, takes_dead_letters, position, output)
        metrics.QUERIES.set(len(self._queries.registered()))
        return bool(records)

    def _take(self, records: list[KeyedRecord], dead_letters_too: bool, position: int,
              output: TickOutput) -> None:
        """Take up ``records`` of the queries table and, when partition 0 has just come
        here, the transaction log's dead letters, from the committed progress."""
        started = time.monotonic()
        self._queries.taking_up()
        fences: list[threading.Thread] = []  # overlapping the reads (_fencing)
        fenced: set[str] = set()

        def fence(writers: set[str]) -> None:
            if unfenced := writers - fenced - {self._writer.sink.worker}:
                fences.append(self._fencing(unfenced))
                fenced.update(unfenced)

        progress = self.progress(fence)  # Step 2
        read_s = time.monotonic() - started
        if dead_letters_too:
            self._dead_letters.take(progress, position)
            self._role.stamped(self._dead_letters)
            log.info("writing the tx log's dead letters after tx %d", self._dead_letters.done)
        if records:
            done = {record: _committed_progress(record, progress.get(record.key))
                    for record in records}
            writers = {p["worker"] for p in progress.values()}
            fence(writers)  # Step 3
            views = self._ports.views([record.key for record in records
                                       if record.value is not None],
                                      on_hanging=lambda held: self._writer.unstick(writers, held))
            viewed_s = time.monotonic() - started
            for record in records:  # Step 4
                self._register(record, done[record], views.get(record.key, View()), position,
                               output)
            log.info("took %d registrations up in %.2f s: progress read in %.2f s, committed "
                     "views in %.2f s (%d records)", len(records), time.monotonic() - started,
                     read_s, viewed_s - read_s, sum(v.records_read for v in views.values()))
            self._ports.create({topic: config for record in records  # Step 5
                                if record.key in self._queries
                                for topic, config in self._topics.of_query(record.key).items()})
        for thread in fences:
            thread.join()

    def progress(self, on_held: OnHeld | None = None) -> dict[str, dict[str, Any]]:
        """The committed progress table; a read held up by a dead worker's open transaction
        ends it (:mod:`workers.runtime.fencing`; ``on_held`` instead of :meth:`_fence`, given
        the writers).  The refusals whose dead letters it shows committed are forgotten."""
        progress = self._ports.progress(on_held or self._fence, self._writer.unstick)
        self._dead_letters.read(progress)
        return progress

    def _fence(self, writers: set[str]) -> None:
        """Fence the ``writers`` gone from the group, never this worker (not a member while
        it starts): fencing itself would cost its producer."""
        self._ports.fence_absent(writers - {self._writer.sink.worker})

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

    def _drop(self, name: str, output: TickOutput) -> None:
        if self._queries.drop(name) in REGISTERED:
            self._role.engine.unregister(name)
            self._views.forget(name)
            forget_query(name)
        output.drop(name)

    def _register(self, record: KeyedRecord, done: int | None, view: View, position: int,
                  output: TickOutput) -> None:
        """Apply one record of the query table (a tombstone unregisters); ``done`` is the
        committed progress of this registration (None: a new query), ``view`` what its view
        topic holds."""
        name = record.key
        self._drop(name, output)
        if record.value is None:
            log.info("query %s removed", name, extra={"query": name})
            return
        state = QueryState.taken_up(done, position)
        engine = self._role.engine
        try:
            registration = parse_registration(self._registration_codec, record.value)
            check_query_name(name)
            if state is QueryState.WAITING:
                engine.plan(registration.edn, registration.inputs)  # refuse it now
                self._queries.take(record, registration, done, position, view)
                log.info("query %s waits for tx %d", name, done, extra={"query": name})
                return
            rows = engine.register(name, registration.edn, registration.inputs,
                                   bootstrap=state is not QueryState.RESUMING
                                   or not view.of(record.offset))
        except WorkersError as err:
            log.warning("query %s refused: %s", name, err, extra={"query": name})
            if done is None:  # a refusal already committed is not dead-lettered again
                output.dead_letters.append((self._topics.queries, record.offset,
                                            err.code.value, f"query {name}: {err}",
                                            record.value))
                output.refused[name] = record.offset
            return
        query = self._queries.take(record, registration, done, position, view)
        self._views.own(name, engine.is_bag(name), view.rows)
        if query.state is QueryState.NEW:
            output.snapshots[name] = (position, rows)
            output.replaced[name] = (view.rows, rows)
            log.info("query %s registered", name, extra={"query": name})
        elif query.state is QueryState.CATCHING_UP:
            assert done is not None  # only a query with committed progress catches up
            self._catch_up(name, record.offset, done, view, rows, output)
        else:
            self._resumed(query, view, rows, output)

    def _catch_up(self, name: str, offset: int, done: int, view: View, rows: ZSet[Row],
                  output: TickOutput) -> None:
        """A query committed up to ``done``, at ``rows`` now: the difference from its
        committed view, as one change ``done + 1 ..`` the tick's last transaction."""
        committed = view.rows if view.of(offset) else self._ports.integrated_view(name)
        output.changes[name] = add(rows, neg(committed))
        output.first[name] = done + 1
        if not view.of(offset):
            output.replaced[name] = (view.rows, committed)
        log.info("query %s caught up from tx %d", name, done, extra={"query": name})

    def _resumed(self, query: OwnedQuery, view: View, rows: ZSet[Row],
                 output: TickOutput) -> None:
        """A query resumed as it was; its view is built from ``rows``, its current result,
        if its topic does not hold it yet (``view``: what the topic holds)."""
        name = query.name
        if not view.of(query.offset):
            output.replaced[name] = (view.rows, rows)
            log.info("query %s: its view is built from its current result", name,
                     extra={"query": name})
        log.info("query %s resumed", name, extra={"query": name})

    def resume_waiting(self, position: int, output: TickOutput) -> None:
        """The waiting queries the ``position`` has reached, registered into ``output``."""
        engine = self._role.engine
        for query, view in self._queries.reached(position):
            registration = query.registration
            catching_up = query.state is QueryState.CATCHING_UP  # a follower passed it
            rows = engine.register(query.name, registration.edn, registration.inputs,
                                   bootstrap=catching_up or not view.of(query.offset))
            self._views.own(query.name, engine.is_bag(query.name), view.rows)
            if catching_up:
                assert query.progress is not None
                self._catch_up(query.name, query.offset, query.progress, view, rows, output)
            else:
                self._resumed(query, view, rows, output)


def _committed_progress(record: KeyedRecord, progress: dict[str, Any] | None) -> int | None:
    """The last transaction committed for this very registration (None: a new query, or a
    progress left by an earlier registration of the same name)."""
    if progress is None or progress["registration"] != record.offset:
        return None
    return int(progress["tx_last"])
