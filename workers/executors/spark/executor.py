"""SparkExecutor: each tick one Spark job whose tasks run the local executors' code.

Per tick (DESIGN §3 and §5, the same algebra as the local executor), for every query it
steps at once — a job's floor per tick, not per query:

1. the driver ships the *tick* to ``shares`` tasks: the state's version (its manifest),
   the queries' plans with their constants' ids, and the tick's delta;
2. stage 1, ``mapInArrow`` over one partition per share: each task opens the state at that
   version (cached per Python worker, :mod:`~workers.executors.spark.cache`) and derives
   each query's derivation change of its share of every term's seed rows (:mod:`tasks`),
   tagged with the query's number;
3. a shuffle by query and row brings every copy of a row to one task; stage 2 sums them
   and computes ``distinct`` against the same state — ``[before + d > 0] - [before > 0]``;
4. one ``toArrow`` collects the set changes (value ids, decoded by the engine).

A tick smaller than ``split_datoms`` skips the split: one task does both stages' work, so
a small tick is one stage of one task — the floor of a Spark job.  Under ``executor=spark``
that task is the one that reads what the driver normalises the tick against
(:meth:`read_and_step`): it steps by the delta it assumes, and :meth:`steps` uses its rows
when the driver's delta is that one — a small tick is then one job in all.

An evaluation (a bootstrap) is one stage: each task derives the result's rows of its share
of the first variable's values; the driver takes their union.  A join program of derived
relations (:mod:`~workers.executors.spark.rules`) is one stage over shares of its rows.

The state is written by the driver, not by this executor: one batch file per tick, by the
:class:`~workers.executors.spark.versions.StateVersions` it reads its versions from (moved
by the engine's database, or under ``auto`` by the backend mirroring the arrangements).  It
is built from the shared arrangements on first use, so an ``auto`` engine that never needs
Spark never writes it.
Its compaction is a Spark job too (:func:`tasks.compact`, one task per bucket of
entities), run from the store's background thread: the driver never sums the database.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.arrangements.batch import Ids, Ints
from workers.arrangements.delta import DatomColumns, TickDelta
from workers.db.bulk import Events
from workers.executors.extenders import Relations
from workers.executors.spark import tasks
from workers.executors.spark.codec import (
    QUERY,
    WEIGHT,
    by_query,
    column,
    datoms_of,
    schema,
    to_rows,
)
from workers.executors.spark.jobs import JobGroups
from workers.executors.spark.requests import (
    Compaction,
    Fetch,
    Rows,
    Speculation,
    Tick,
    constants,
    tuples,
)
from workers.executors.spark.shared import StateFollower
from workers.executors.spark.speculation import Ahead, PulledAhead, Speculated
from workers.executors.spark.state import Manifest, Part
from workers.executors.spark.versions import StateVersions
from workers.executors.vectorised import Frame, consolidated
from workers.executors.work import Work
from workers.plan.ir import JoinProgram, Plan
from workers.pull.maintain import PullReads
from workers.zset import ZSet
from workers.zset.row import Row

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# A tick of fewer datoms is stepped by one task in one stage: splitting it would add a stage
# (a shuffle) that costs more than the work it shares out (docs/spark.md).
SPLIT_DATOMS = 10_000
# A compaction writes a bucket of the base per this many datoms (at least one per share): a
# task sums its bucket in memory.
BUCKET_DATOMS = 4_000_000
Counted = TypeVar("Counted", ZSet[Row], Frame)


@dataclass(frozen=True, slots=True)
class SparkPlan:
    """A plan for this executor: binding it costs nothing (its tasks bind it to the state
    they open); a step reads its delta as columns (a big tick's are never arranged into
    dict tries on the driver)."""

    plan: Plan


class SparkExecutor:
    """Runs plans on Spark over the state files it keeps in step with the arrangements."""

    name = "spark"

    def __init__(self, session: SparkSession, db: ArrangementRegistry,
                 jobs: JobGroups | None = None, location: str | None = None,
                 shares: int | None = None, share: bool = False, retain_seconds: float = 0.0,
                 opened: StateFollower | None = None, follows: bool = False) -> None:
        """``share``: other engines follow the state (:mod:`shared`), whose replaced files
        are kept ``retain_seconds``; ``opened``: a shared state found at ``location``, which
        this executor ``follows`` (another engine writes it) or writes on from its newest
        version (its writer before stopped there)."""
        self.session, self.db = session, db
        self.jobs = jobs or JobGroups(session)
        self._compaction_jobs = JobGroups(session)  # apart: they run beside the steps
        # The state's versions: this executor reads them, and runs the store's jobs.
        self.state = StateVersions(db, location, self._compact, self._index, share,
                                   retain_seconds, opened, follows)
        self.shares = shares or int(session.conf.get("spark.sql.shuffle.partitions") or 1)
        self.split_datoms = SPLIT_DATOMS
        self._ahead = Ahead()  # a small tick's step done with its read (:mod:`speculation`)

    def prepare(self, plan: Plan) -> SparkPlan:
        return SparkPlan(plan)

    def step(self, prepared: SparkPlan, delta: TickDelta) -> tuple[ZSet[Row], Work]:
        """One query's set changes of the tick (:meth:`steps` of one)."""
        return self.steps([prepared], delta)[0]

    def steps(self, prepared: Sequence[SparkPlan], tick_delta: TickDelta
              ) -> list[tuple[ZSet[Row], Work]]:
        """The tick's set changes of several queries and their work, all in one job (a
        job's floor per tick, not per query): a small tick one task, a large one two stages
        (derive by share, then distinct by query and row)."""
        plans = tuple(each.plan for each in prepared)
        delta = tick_delta.columns()
        works = [Work() for _ in plans]
        manifest = self.state.manifest()
        ahead = self._ahead.step((manifest.epoch, manifest.version), plans, delta)
        if ahead is not None:
            speculated, positions = ahead
            for work in works:
                work.seconds += speculated.seconds / len(works)
            return [(_counted(speculated.rows[i], work, speculated.works[i]), work)
                    for i, work in zip(positions, works, strict=True)]
        what = f"step of {len(plans)} queries" if len(plans) > 1 else f"step of {plans[0].find}"
        if len(delta) < self.split_datoms:
            tick = self._tick(plans, delta, 1)
            with self.jobs.action(what):
                table = self._shares(1).mapInArrow(partial(tasks.step, tick),
                                                   schema(tick.width, tagged=True)).toArrow()
        else:
            tick = self._tick(plans, delta, self.shares)
            with self.jobs.action(what):
                derived = self._shares(tick.shares).mapInArrow(
                    partial(tasks.derive, tick), schema(tick.width, tagged=True))
                by_row = derived.repartition(tick.shares, QUERY,
                                             *map(column, range(tick.width)))
                table = by_row.mapInArrow(partial(tasks.distinguish, tick),
                                          schema(tick.width, tagged=True)).toArrow()
        return [(_counted(to_rows(part, len(plan.find)), work, tick.counters.of(query)), work)
                for query, (part, plan, work) in enumerate(zip(
                    by_query(table, len(plans)), plans, works, strict=True))]

    def evaluate(self, prepared: SparkPlan) -> tuple[Frame, Work]:
        """The full result over the current state: one job, one stage.  Its rows stay
        columns, as the vectorised executor's (the engine decodes a column at a time)."""
        plan = prepared.plan
        # A program without levels derives its rows from the empty row alone: one share.
        shares = self.shares if plan.full.levels else 1
        tick = self._tick((plan,), _columns(MemoryArrangement()), shares)
        width = len(plan.full.output)
        with self.jobs.action(f"evaluation of {plan.find}"):
            table = self._shares(shares).mapInArrow(partial(tasks.evaluate, tick),
                                                    schema(width)).toArrow()
        # a row several tasks derive (from several first-level values) is one row, of weight 1
        rows = consolidated([table.column(column(i)).to_numpy() for i in range(width)],
                            table.column(WEIGHT).to_numpy())
        work = Work()
        return _counted(Frame(rows.columns, np.ones(len(rows), np.int64), rows.origin), work,
                        tick.counters.of(0)), work

    def run_rows(self, program: JoinProgram, rows: Mapping[Row, int], delta: MemoryArrangement,
                 derived: Relations, work: Work) -> ZSet[Row]:
        """Rows over the program's seed variables through its checks and levels (GenericJoin
        levels only: the caller runs the other ops), reading derived relations too."""
        task = Rows(self.state.manifest(), program, constants(program, self.db.ids),
                    _columns(delta), self.shares, dict(rows), tuples(derived),
                    self.jobs.counters(1))
        width = len(program.output)
        with self.jobs.action(f"join from {program.seed_vars}"):
            table = self._shares(task.shares).mapInArrow(partial(tasks.join, task),
                                                         schema(width)).toArrow()
        return _counted(to_rows(table, width), work, task.counters.of(0))

    def forget_step(self) -> None:
        """Drop a step done ahead by :meth:`read_and_step` and not used, and what its pulls
        read: the tick it was for is over (or reads anew)."""
        self._ahead.forget()

    def fetch(self, forward: Ints, backward: Ints, pairs: Ints, triples: Ints,
              hops: int = 0, attributes: Ints | None = None) -> tuple[Ids, Ids, Ids]:
        """The datoms of the entities ``forward`` and those pointing at the ids ``backward``
        (then ``hops`` more steps along what they hold), those under the ``(e, a)`` rows of
        ``pairs``, the present ones of the ``(e, a, v)`` rows of ``triples`` and every datom
        of the ``attributes``, in no order: one job, keyed by entity over the shares when the
        request is large (or names attributes) — or none, when the tick's step was done ahead
        and read it already (pulls)."""
        manifest = self.state.manifest()
        ahead = self._ahead.read((manifest.epoch, manifest.version), forward, backward, pairs,
                                 triples, hops)
        if attributes is None and ahead is not None:
            return ahead
        wanted = np.zeros(0, np.int64) if attributes is None else attributes
        size = len(forward) + len(backward) + len(pairs) + len(triples)
        shares = self.shares if hops == 0 and (size >= self.split_datoms or len(wanted)) else 1
        request = Fetch(manifest, forward, backward, hops, shares, pairs, triples, wanted)
        with self.jobs.action(f"read of {size} entities"):
            table = self._shares(shares).mapInArrow(partial(tasks.fetch, request),
                                                    schema(3)).toArrow()
        return datoms_of(table)

    def read_and_step(self, read: tuple[Ints, Ints, Ints, Ints], events: Events,
                      plans: tuple[Plan, ...], pulls: PullReads | None = None
                      ) -> tuple[Ids, Ids, Ids]:
        """:meth:`fetch` of ``read`` (``forward, backward, pairs, triples``, no hops), in
        one task that also steps ``plans`` by the delta it assumes from ``events``
        (:func:`~workers.db.bulk.assumed_delta`) and reads what their ``pulls`` will read
        after it: a small tick's only job when the driver's normalisation then finds that
        delta — :meth:`steps` uses the rows kept here, :meth:`fetch` the pulls' read."""
        tick = self._tick(plans, _columns(MemoryArrangement()), 1, least_width=3)
        forward, backward, pairs, triples = read
        request = Speculation(tick, Fetch(tick.manifest, forward, backward, 0, 1, pairs,
                                          triples), events, pulls)
        started = time.perf_counter()
        with self.jobs.action(f"read and step of {len(plans)} queries"):
            table = self._shares(1).mapInArrow(partial(tasks.speculate, request),
                                               schema(tick.width, tagged=True)).toArrow()
        *parts, read, assumed, after = by_query(table, len(plans) + 3)
        delta = DatomColumns(*datoms_of(assumed), assumed.column(WEIGHT).to_numpy())
        rows = [to_rows(part, len(plan.find)) for part, plan in zip(parts, plans,
                                                                          strict=True)]
        pulled = None if pulls is None else PulledAhead(
            (tick.manifest.epoch, tick.manifest.version + 1),
            pulls.seeds(lambda query, c: np.array([row[c] for row in rows[query]], np.int64),
                        delta), pulls.hops, datoms_of(after))
        self._ahead.keep(Speculated(
            (tick.manifest.epoch, tick.manifest.version), plans, delta, rows,
            [tick.counters.of(query) for query in range(len(plans))],
            time.perf_counter() - started, pulled))
        return datoms_of(read)

    def statistics(self) -> dict[int, tuple[int, int]]:
        """Per attribute id, its distinct entities and distinct values (the planner's): one
        task per share, so that the evaluation a plan is made for finds the state open in
        every Python worker (a worker would otherwise open its copy in the evaluation, on
        the bootstrap's critical path: 1.2 s at 10^7 datoms)."""
        with self.jobs.action("attribute statistics"):
            table = self._shares(self.shares).mapInArrow(
                partial(tasks.statistics, self.state.manifest()), schema(3)).toArrow()
        a, entities, values = (table.column(column(i)).to_pylist() for i in range(3))
        return {x: (n, m) for x, n, m in zip(a, entities, values, strict=True)}

    def _compact(self, manifest: Manifest, stem: str) -> tuple[Part, ...]:
        """The store's compactor: one Spark job, a task per bucket of entities."""
        rows = manifest.base_rows + sum(b.rows for b in manifest.batches)
        request = Compaction(manifest, stem, max(self.shares, -(-rows // BUCKET_DATOMS)))
        with self._compaction_jobs.action(f"compaction of version {manifest.version}"):
            table = self._shares(request.buckets).mapInArrow(
                partial(tasks.compact, request), schema(1)).toArrow()
        buckets, sizes = table.column(column(0)).to_pylist(), table.column("w").to_pylist()
        return tuple(Part(request.name(b), manifest.version, n)
                     for b, n in sorted(zip(buckets, sizes, strict=True)))

    def _index(self, manifest: Manifest, name: str) -> None:
        """The store's indexer: one Spark job of one task."""
        with self._compaction_jobs.action(f"index of version {manifest.base_version}"):
            self._shares(1).mapInArrow(partial(tasks.index, manifest, name),
                                       schema(1)).toArrow()

    def _tick(self, plans: tuple[Plan, ...], delta: DatomColumns, shares: int,
              least_width: int = 0) -> Tick:
        return Tick(self.state.manifest(), plans, constants(plans, self.db.ids), delta, shares,
                    self.jobs.counters(len(plans)), least_width)

    def _shares(self, count: int) -> DataFrame:
        """One row per share, each in a partition of its own."""
        return self.session.range(0, count, 1, count)


def _columns(delta: MemoryArrangement) -> DatomColumns:
    return DatomColumns.of(dict(delta.datoms()))


def _counted(rows: Counted, work: Work, tasks_work: Work | None) -> Counted:
    """``rows``, with the work that made them added to ``work``: what the tasks counted, or
    (no counters) one call and the rows."""
    work.add(Work(1, len(rows)) if tasks_work is None else tasks_work)
    return rows
