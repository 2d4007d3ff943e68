"""SparkExecutor: a strategy's terms and ``distinct`` as one DataFrame, one action per step.

Per step (DESIGN §3, the same algebra as the local executor):

1. views: ``old = mirror.old()``, ``Δ`` = the tick's delta frame, ``new = old ∪ Δ``;
2. derivation change ``D``: the union of the strategy's terms (``delta``: one GenericJoin
   per ΔR_i; ``binary``: left-deep chains; ``recursive``: each stage extends the running
   change), consolidated;
3. ``distinct``: ``before`` = each changed row's derivation count in ``old`` (the support
   program seeded by the rows of ``D``); the set change is
   ``[before + d > 0] - [before > 0]`` — a join and a column expression, not a UDF;
4. one ``toArrow`` collects the rows, decoded from ids on the driver.

Spark has no index to look a prefix up in, so unlike the local executor its work per step
scans the relations the plan reads: it pays off on large ticks and bootstraps (see
``executors.dispatch`` for the policy and ``docs/spark.md`` for the measurements).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING, Any

from workers.arrangements import MemoryArrangement
from workers.executors.spark.frames import ValueIds, collect_rows
from workers.executors.spark.join import column, project, run, seed_rows, union
from workers.executors.spark.mirror import Datom, SparkMirror, patched
from workers.executors.spark.relations import Relation, relation
from workers.executors.spark.sql import WEIGHT, Sql, conjunction
from workers.executors.work import Work
from workers.plan.ir import BinaryTerm, DeltaTerm, ExtenderSpec, JoinProgram, Plan, Role, Term

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

Row = tuple[Any, ...]
Progress = Callable[[str], None]
log = logging.getLogger("deltalog.spark")
PROGRESS_INTERVAL_S = 5.0
# A tick's step is many tiny stages: one shuffle partition, and no whole-stage code
# generation (compiling each stage costs more than running it on a small delta).
STEP_CONF = {"spark.sql.shuffle.partitions": "1", "spark.sql.codegen.wholeStage": "false"}


@dataclass(frozen=True, slots=True)
class SparkPlan:
    plan: Plan
    delta: MemoryArrangement


@dataclass(frozen=True, slots=True)
class Views:
    """The tables one step reads, by role, and the relations read from them (each
    written once into the query, however many terms read it)."""

    sql: Sql
    tables: Mapping[Role, str]
    ids: ValueIds
    relations: dict[ExtenderSpec, Relation]

    def relation(self, spec: ExtenderSpec) -> Relation:
        found = self.relations.get(spec)
        if found is None:
            found = relation(self.sql, spec, self.tables[spec.role], self.ids)
            self.relations[spec] = found
        return found


class SparkExecutor:
    """Runs plans on Spark over a mirror of the shared arrangements."""

    name = "spark"

    def __init__(self, session: SparkSession, state: MemoryArrangement,
                 progress: Progress = log.info,
                 progress_interval_s: float = PROGRESS_INTERVAL_S) -> None:
        self.session = session
        self.ids = ValueIds()
        self.mirror = SparkMirror(session, self.ids, state)
        self.progress, self.progress_interval_s = progress, progress_interval_s
        self._groups = count()

    def prepare(self, plan: Plan, old: MemoryArrangement, delta: MemoryArrangement) -> SparkPlan:
        if old is not self.mirror.state:
            raise ValueError("a SparkExecutor serves the state it mirrors")
        return SparkPlan(plan, delta)

    def step(self, prepared: SparkPlan, work: Work) -> dict[Row, int]:
        with self._conf(STEP_CONF):
            return self._step(prepared, work)

    def _step(self, prepared: SparkPlan, work: Work) -> dict[Row, int]:
        views = self._views(prepared.delta)
        sql, plan = views.sql, prepared.plan
        find = range(len(plan.find))
        derivations = project(sql, union(sql, list(_terms(plan.terms, views))), find)
        rows = sql.add(f"SELECT {''.join(f'{column(i)}, ' for i in find)}1L AS {WEIGHT} "
                       f"FROM {derivations}")
        before = run(sql, plan.support, rows, views.relation, find)
        same = conjunction(f"d.{column(i)} = b.{column(i)}" for i in find)
        was = f"COALESCE(b.{WEIGHT}, 0)"
        change = (f"CAST({was} + d.{WEIGHT} > 0 AS BIGINT) - CAST({was} > 0 AS BIGINT)")
        columns = "".join(f"d.{column(i)}, " for i in find)
        changes = sql.add(f"SELECT {columns}{change} AS {WEIGHT} FROM {derivations} d "
                          f"LEFT JOIN {before} b ON {same}")
        out = sql.add(f"SELECT * FROM {changes} WHERE {WEIGHT} != 0")
        return self._collect(sql, out, len(find), work, f"step of {plan.find}")

    def evaluate(self, prepared: SparkPlan, work: Work) -> dict[Row, int]:
        views = self._views(prepared.delta)
        full = prepared.plan.full
        out = run(views.sql, full, seed_rows(views.sql, full, views.relation), views.relation)
        rows = self._collect(views.sql, out, len(full.output), work,
                             f"evaluation of {prepared.plan.find}")
        return dict.fromkeys(rows, 1)

    def applied(self, delta: Mapping[Datom, int]) -> None:
        """The shared arrangements took ``delta``: keep the mirror in step."""
        self.mirror.apply(delta)

    def restored(self) -> None:
        """The shared arrangements were replaced by a snapshot."""
        self.mirror.reset()

    def _views(self, delta: MemoryArrangement) -> Views:
        sql = Sql(self.session)
        old = self.mirror.old(sql)
        d = self.mirror.delta(sql, delta)
        tables = {Role.OLD: old, Role.DELTA: d, Role.NEW: patched(sql, old, d)}
        return Views(sql, tables, self.ids, {})

    def _collect(self, sql: Sql, final: str, width: int, work: Work,
                 what: str) -> dict[Row, int]:
        with self._reporting(what):
            rows = collect_rows(self.ids, sql.run(final), width)
        work.calls += 1
        work.elements += len(rows)
        return rows

    @contextmanager
    def _conf(self, settings: dict[str, str]) -> Iterator[None]:
        """Run the enclosed action with ``settings``, then restore the session's own."""
        conf = self.session.conf
        saved: dict[str, str | None] = {key: conf.get(key) for key in settings}
        for key, value in settings.items():
            conf.set(key, value)
        try:
            yield
        finally:
            for key, previous in saved.items():
                if previous is None:
                    conf.unset(key)
                else:
                    conf.set(key, previous)

    @contextmanager
    def _reporting(self, what: str) -> Iterator[None]:
        """Run the enclosed Spark action in its own job group, reporting its progress
        every ``progress_interval_s`` until it ends (long bootstraps say how far they are)."""
        if type(self.session).__module__.startswith("pyspark.sql.connect"):  # no tracker
            yield
            return
        context = self.session.sparkContext
        group = f"deltalog-{next(self._groups)}"
        context.setJobGroup(group, what)
        done = threading.Event()
        reporter = threading.Thread(target=self._report, args=(context, group, what, done),
                                    daemon=True)
        reporter.start()
        try:
            yield
        finally:
            done.set()
            reporter.join()

    def _report(self, context: SparkContext, group: str, what: str,
                done: threading.Event) -> None:
        tracker = context.statusTracker()
        while not done.wait(self.progress_interval_s):
            tasks = total = 0
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage in (info.stageIds if info else ()):
                    stage_info = tracker.getStageInfo(stage)
                    if stage_info is not None:
                        tasks += stage_info.numCompletedTasks
                        total += stage_info.numTasks
            self.progress(f"{what}: {tasks}/{total} Spark tasks done")


def _terms(terms: tuple[Term, ...], views: Views) -> Iterator[str]:
    """Each term's derivation change (a recursive stage replaces the running change)."""
    sql, relation_of = views.sql, views.relation
    running: str | None = None
    for term in terms:
        if isinstance(term, DeltaTerm):
            yield _seeded(term.program, views)
        elif isinstance(term, BinaryTerm):
            rows = _seeded(term.chain[0], views)
            for program in term.chain[1:]:
                rows = run(sql, program, rows, relation_of)
            yield rows
        else:
            seeded = _seeded(term.seeded, views)
            if running is not None and term.extend is not None:
                seeded = union(sql, [seeded, run(sql, term.extend, running, relation_of)])
            running = seeded
    if running is not None:
        yield running


def _seeded(program: JoinProgram, views: Views) -> str:
    return run(views.sql, program, seed_rows(views.sql, program, views.relation),
               views.relation)
