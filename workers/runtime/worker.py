"""The worker: the transaction log in, its queries' changes out, exactly once, in a fleet.

Every worker reads the whole transaction log (the shared arrangements are rebuilt from it);
the queries are shared out by the consumer group on ``deltalog.queries``
(:mod:`workers.runtime.ownership`): a worker keeps live only the queries of the partitions it
owns.  The worker's *position* is the last transaction its arrangements include.

The worker is made of parts, each in its own module, and this module is the loop that asks
them: the queries' lifecycle (:mod:`workers.runtime.query_lifecycle`: taken up from their committed
progress, in the states of :mod:`workers.runtime.queries`), the tick's Kafka transaction
(:mod:`workers.runtime.tick_writer`), the transaction log's dead letters
(:mod:`workers.runtime.dead_letters`), and the engine's role in a Spark state a fleet shares
(:mod:`workers.runtime.engine_role`).  What it reads and writes outside itself comes through
its :class:`~workers.runtime.ports.Ports` (Kafka, or the fakes of :mod:`workers.testing`).

Start, in numbered steps:

1. create the fixed topics if missing;
2. ``init_transactions``: abort what a previous incarnation left open, fence it; then end
   what it may have left hanging on any topic the workers write (``workers.kafka.hanging``);
3. load the newest snapshot from the shared store at or before the fleet's committed
   progress and no later than the transaction log's committed dead letters (the position;
   the log after it is read tick by tick);
4. join the group and wait for the first assignment.

One tick:

1. apply ownership changes: drop the queries of revoked partitions, take new registrations;
2. poll a batch of transactions (bounded by count, bytes and wait; never past a waiting
   query's progress) — none in a tick that took registrations up: it commits them at the
   position, and the next tick applies what was sent meanwhile;
3. decode them and apply them as one engine tick (:mod:`workers.runtime.batch`); refused
   or undecodable records become dead letters, exactly once
   (:mod:`workers.runtime.dead_letters`).  A tick whose
   delta is larger than ``tick_max_datoms`` is stepped in pieces: the first is held like a
   whole tick, the others are written as they are computed, so an enormous change (a hub
   retracted) is never in memory whole.  A follower of a shared Spark state steps its
   writer's versions instead; one further behind than its writer keeps them follows anew
   from the newest, and owns its queries anew in this tick (:meth:`Worker._own_anew`);
4. in one Kafka transaction: snapshot rows, change rows, the new weights of the rows they
   touch in each view topic (ending with the view's marker), dead letters, every live query's
   progress, and the group's metadata (``send_offsets_to_transaction``: a worker that lost
   its partitions cannot commit) — commit.  A transaction that fails is abandoned with
   its producer and its held output carried into the next tick, and every registered
   query is owned anew then, caught up from its committed progress (the sweep may have
   aborted a tick seen committed whose markers the broker skipped: docs/pipeline.md,
   "PostgreSQL"; :mod:`workers.runtime.tick_writer`);
5. resume the waiting queries the position has reached; snapshot the database if the
   interval has elapsed.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Sequence

from workers import metrics
from workers.config import WorkerConfig
from workers.engine import Engine
from workers.kafka.closing import Closing
from workers.kafka.source import TxRecord
from workers.kafka.topics import Topics
from workers.runtime.backpressure import TickSize, resident_bytes
from workers.runtime.batch import BatchApplier
from workers.runtime.checkpoint import Snapshots, SnapshotStore
from workers.runtime.dead_letters import DeadLetters, snapshot_bound
from workers.runtime.engine_role import EngineRole
from workers.runtime.faults import crash_point
from workers.runtime.observe import StateGauges
from workers.runtime.ownership import Polled
from workers.runtime.phases import TickPhases
from workers.runtime.pieces import Pieces
from workers.runtime.ports import Group, KafkaPorts, Ports, Source
from workers.runtime.queries import OwnedQueries
from workers.runtime.query_lifecycle import QueryLifecycle
from workers.runtime.tick_writer import TickOutput, TickWriter
from workers.runtime.views import ViewWrites
from workers.zset import add_into

log = logging.getLogger(__name__)
POLL_S = 0.2  # one wait for the group while starting
THROTTLE_PAUSE_S = 0.05  # pause per tick while over the memory ceiling


class Worker(Closing):
    """One worker process: shared arrangements, the queries it owns, one tx log.  Its Kafka
    clients close with it (``with Worker(config) as worker``); ``ports``: the Kafka it
    talks to (the fakes of :mod:`workers.testing` in unit tests)."""

    def __init__(self, config: WorkerConfig, ports: Ports | None = None) -> None:
        self.config = config
        self.topics = Topics(config.topic_prefix, config.view_tombstones_ms)
        self._role = EngineRole(config)  # the engine, made in the group if the fleet shares it
        self.snapshots = Snapshots(SnapshotStore.at(config.snapshot_store()),
                                   config.snapshot_interval_s)
        self._clients = contextlib.ExitStack()  # closed last opened first: the group first
        self._ports = ports or KafkaPorts(config, self.topics)
        self._clients.callback(self._ports.close)  # the admin client: closed last
        self._queries = OwnedQueries()
        views = ViewWrites()
        self._dead_letters = DeadLetters(config, self.topics.tx, self._ports.source)
        self._phases = TickPhases()
        self._writer = TickWriter(self._ports, self._queries, views, self._dead_letters,
                                  self._phases)
        self._clients.callback(self._writer.close)
        self._clients.callback(self._phases.close)
        self._batches = BatchApplier(config, self._role, self._dead_letters, self._phases)
        self._lifecycle = QueryLifecycle(config, self.topics, self._ports, self._role,
                                         self._queries, views, self._dead_letters, self._writer)
        self._pending = TickOutput()  # a lost tick's output, sent again with the next one
        self.committed = -1  # the position: last transaction the arrangements include
        self._source: Source | None = None  # None: not reading the log yet (start)
        self._group: Group | None = None  # None: not in the workers' group yet (start)
        limit = None if config.memory_limit_mb is None else config.memory_limit_mb << 20
        # a tick's transaction open a third of the coordinator's timeout makes ticks smaller
        self._tick_size = TickSize(config.tick_max_tx, limit,
                                   open_s=config.transaction_timeout_ms / 3000)
        self._state_gauges = StateGauges()
        self._applied_s = 0.0  # when the last applied transaction was appended to the log
        metrics.MEMORY_LIMIT.set(limit or 0)

    @property
    def engine(self) -> Engine:
        """The engine (a shared state's worker makes it in the group: :mod:`engine_role`)."""
        return self._role.engine

    # -- start ---------------------------------------------------------------------------

    def start(self) -> None:
        config = self.config
        self._ports.ensure_topics()  # Step 1
        self._writer.start()  # Step 2
        self._clients.callback(self._close_source)  # closed after the group
        if not self._role.shared:  # a shared state is the fleet's database: no snapshot to load
            state = self.snapshots.load(at_most=snapshot_bound(self._lifecycle.progress()),
                                        dictionary=self.engine.dictionary)  # Step 3
            if state is not None:
                self.engine.restore(state, adopt=True)  # read for this engine alone
                log.info("loaded snapshot at tx %d", state.tx)
                self.committed = state.tx
            self._start_reading()
        group = self._group = self._clients.enter_context(self._ports.group())  # Step 4
        deadline = time.monotonic() + 2 * config.session_timeout_ms / 1000
        polled = []  # a shared state's worker: until its engine exists
        while time.monotonic() < deadline and (not group.assigned_once or group.catching_up):
            polled.append(group.poll(POLL_S))
            if group.assigned_once:
                self._make_engine(group)
            polled = self._own(polled, group)
        self._make_engine(group)  # given nothing yet (KIP-848 may not say so): it follows
        self._own(polled, group)
        metrics.LAST_TX.set(self.committed)
        log.info("worker %s started at tx %d owning %d queries (strategy %s, executor %s)",
                 config.worker_id, self.committed, len(self._queries), config.strategy,
                 config.executor)

    def _make_engine(self, group: Group) -> None:
        """A shared state's worker makes its engine once: the writer if it owns queries
        partition 0, else a follower (:mod:`workers.runtime.engine_role`)."""
        if not self._role.made:
            self.committed = self._role.make(writing=0 in group.owned).tx
            self._start_reading()

    def _own(self, polled: list[Polled], group: Group) -> list[Polled]:
        """Take up what the group gave, once the engine exists; what is left to take."""
        if not self._role.made:
            return polled
        for each in polled:
            self._lifecycle.own(each, group, self.committed, self._pending)
        return []

    def _start_reading(self) -> None:
        """Read the transaction log after the position (a follower of a shared state reads
        it only to know its lag, until it writes the state)."""
        self.engine.seek(self.committed)
        self._close_source()
        self._source = self._ports.source(self.committed + 1)

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
        source, group = self._source, self._group
        assert source is not None and group is not None, "start() first"
        started = time.perf_counter()
        self._phases.begin()
        output, self._pending = self._pending, TickOutput()
        taken_up = self._lifecycle.own(group.poll(), group, self.committed, output)  # Step 1
        config = self.config
        until = self._queries.waits_for()
        tick_tx = self._throttled()
        # A tick that takes queries up commits them at the position, without the
        # transactions sent meanwhile: the moved queries produce again one engine step
        # sooner (docs/fleet.md, "Takeover time"); the next tick applies those.
        following = self._role.following
        batch = [] if taken_up or following else source.next_batch(  # Step 2
            tick_tx, config.tick_max_bytes, config.tick_max_wait_s, until=until)
        self._phases.mark("poll")
        if batch:
            self._phases.queued(batch[0].appended_s)
        if following:  # Step 3
            rest = Pieces(iter(()))
            changes = {} if taken_up else self._role.follow(self._dead_letters)
            if changes is None:
                self._own_anew(group, output)
            else:
                for query, rows in changes.items():
                    add_into(output.changes.setdefault(query, {}), rows)
        else:
            rest = self._batches.apply(batch, output)
        letters = self._dead_letters.due(batch)
        moved = self.engine.tx != self.committed  # a follower's step moves it, batch or not
        if not (batch or moved or output or letters):
            self._queries.live_as_is()  # queries taken up with nothing to write are live as is
            self.engine.idle()
            if following and self._dead_letters.writing:
                self._lead()  # at its writer's newest version, with nothing to write
            elif following:  # a follower waits for its writer's next version
                time.sleep(config.tick_max_wait_s)
            elif self.committed >= 0:  # a catch-up's last ticks may have come in one interval
                self._maybe_snapshot()
            return False
        tx_last = self.engine.tx
        opened = time.perf_counter()
        committed = self._writer.commit(output, rest, letters, self.committed + 1, tx_last,
                                        group)  # Step 4
        if not committed:
            self._pending = output
        self._tick_size.closed(time.perf_counter() - opened, committed, len(batch) >= tick_tx)
        if committed:
            self._phases.committed(tx_last)
        self.committed = tx_last
        self._lifecycle.resume_waiting(self.committed, self._pending)  # Step 5
        if following and self._dead_letters.writing:
            self._lead()
        self._observe(batch)
        if committed:
            metrics.TICKS.inc()
            metrics.TICK_SECONDS.observe(time.perf_counter() - started)
            self._maybe_snapshot()
        return True

    def _own_anew(self, group: Group, output: TickOutput) -> None:
        """A follower that fell further behind than its writer keeps versions follows anew
        from the newest: every query it registered is owned anew in this tick, at that
        version's position, caught up from its committed progress and view like a query
        taken over — before this tick's commit writes their progress."""
        again = self._queries.lose_all()
        if again:
            log.info("queries %s owned anew (the shared Spark state followed anew)",
                     ", ".join(again))
        self._lifecycle.own(Polled(), group, self.engine.tx, output)

    def _throttled(self) -> int:
        """Back-pressure: the transactions this tick may take, fewer (and a pause) while the
        process is over its memory ceiling (:mod:`workers.runtime.backpressure`)."""
        resident = resident_bytes()
        tick_tx = self._tick_size.next(resident)
        metrics.MEMORY_BYTES.set(resident)
        metrics.TICK_LIMIT_TX.set(tick_tx)
        metrics.THROTTLED.set(int(self._tick_size.throttled))
        if self._tick_size.throttled:
            gc.collect()
            time.sleep(THROTTLE_PAUSE_S)  # consume slower while over the memory ceiling
        return tick_tx

    def _lead(self) -> None:
        """A follower owning the queries topic's partition 0 writes the shared state from
        here on, reading the log after its position, once it can
        (:meth:`~workers.runtime.engine_role.EngineRole.lead`)."""
        if self._role.lead(self.committed):
            self._start_reading()

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
        group = self._group
        if self._source is None or group is None or not group.assigned_once:
            return False, "starting: not in the workers' group yet"
        if group.catching_up:
            return False, "reading the registrations of newly owned queries"
        if self._queries.taken_up_s is not None:
            return False, "taking queries up: their progress, views, first tick"
        if waiting := self._queries.waiting():
            return False, f"{waiting} queries wait for the log to reach their progress"
        lag = self.lag()
        if lag > self.config.ready_lag_tx:
            return False, f"{lag} transactions behind the log"
        return True, f"caught up (lag {lag}), {len(self._queries.registered())} queries"

    # -- snapshots and shutdown ------------------------------------------------------------

    def _maybe_snapshot(self) -> None:
        if self._role.shared:  # the shared state is the fleet's database, kept where it is
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
