"""SparkExecutor: a strategy's terms and ``distinct`` as one Spark SQL query per step.

Per step (DESIGN §3, the same algebra as the local executor):

1. views: ``old = mirror.old()``, ``Δ`` = the tick's delta, ``new`` = ``old`` patched by ``Δ``;
2. derivation change ``D``: the union of the strategy's terms (``delta``: one GenericJoin
   per ΔR_i; ``binary``: left-deep chains; ``recursive``: each stage extends the running
   change), consolidated;
3. ``distinct``: ``before`` = each changed row's derivation count in ``old`` (the support
   program seeded by the rows of ``D``); the set change is
   ``[before + d > 0] - [before > 0]`` — a join and a column expression, not a UDF;
4. one ``toArrow`` collects the rows (value ids, decoded by the engine as the local
   executor's are); the rows BigJoin materialised on the way are released.

Spark has no index to look a prefix up in, so unlike the local executor its work per step
scans the relations the plan reads: it pays off on large ticks and bootstraps (see
``executors.dispatch`` for the policy and ``docs/spark.md`` for the measurements).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.arrangements.values import ValueIds
from workers.executors.extenders import Relations
from workers.executors.spark.frames import collect_rows, id_source
from workers.executors.spark.jobs import JobGroups
from workers.executors.spark.join import column, project, run, seed_rows, union
from workers.executors.spark.mirror import Datom, SparkMirror, patched
from workers.executors.spark.relations import Relation, relation, relation_column
from workers.executors.spark.sql import WEIGHT, Sql, conjunction
from workers.executors.work import Work
from workers.plan.ir import (
    DATOMS,
    BinaryTerm,
    DeltaTerm,
    ExtenderSpec,
    JoinProgram,
    Plan,
    Role,
    Term,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Row = tuple[Any, ...]
# A tick's step is many tiny stages: one shuffle partition, no whole-stage code generation
# (compiling a stage costs more than running it on a small delta) and no adaptive execution
# (it submits every stage as a job of its own).  Measured in docs/spark.md.
STEP_CONF = {"spark.sql.shuffle.partitions": "1", "spark.sql.codegen.wholeStage": "false",
             "spark.sql.adaptive.enabled": "false"}


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
    derived: Relations | None = None

    def relation(self, spec: ExtenderSpec) -> Relation:
        found = self.relations.get(spec)
        if found is None:
            table = self.tables[spec.role] if spec.relation == DATOMS else \
                self._derived(spec.relation, spec.role, len(spec.steps))
            found = relation(self.sql, spec, table, self.ids)
            self.relations[spec] = found
        return found

    def _derived(self, name: str, role: Role, arity: int) -> str:
        """A derived relation's tuples as a table (the driver holds them): ``old`` is its
        state, ``new`` the state with this tick's change so far."""
        assert self.derived is not None, f"no tuples for relation {name}"
        state, change = self.derived[name]
        rows = state.rows if role is Role.OLD else {
            row: 1 for row in {*state.rows, *change.rows}
            if state.weight(row) + change.weight(row) > 0}
        names = [relation_column(i) for i in range(arity)]
        return self.sql.source(id_source(self.sql.session, rows, names))


class SparkExecutor:
    """Runs plans on Spark over a mirror of the shared arrangements."""

    name = "spark"

    def __init__(self, session: SparkSession, db: ArrangementRegistry,
                 jobs: JobGroups | None = None) -> None:
        self.session = session
        self.mirror = SparkMirror(session, db)
        self.jobs = jobs or JobGroups(session)

    def prepare(self, plan: Plan, old: ArrangementRegistry,
                delta: MemoryArrangement) -> SparkPlan:
        if old is not self.mirror.db:
            raise ValueError("a SparkExecutor serves the state it mirrors")
        return SparkPlan(plan, delta)

    def step(self, prepared: SparkPlan, work: Work) -> dict[Row, int]:
        with self.jobs.action(f"step of {prepared.plan.find}"), self._conf(STEP_CONF):
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
        return self._collect(sql, out, len(find), work)

    def evaluate(self, prepared: SparkPlan, work: Work) -> dict[Row, int]:
        with self.jobs.action(f"evaluation of {prepared.plan.find}"):
            views = self._views(prepared.delta)
            full = prepared.plan.full
            out = run(views.sql, full, seed_rows(views.sql, full, views.relation),
                      views.relation)
            rows = self._collect(views.sql, out, len(full.output), work)
        return dict.fromkeys(rows, 1)

    def run_rows(self, program: JoinProgram, rows: Mapping[Row, int], delta: MemoryArrangement,
                 derived: Relations, work: Work) -> dict[Row, int]:
        """Rows over the program's seed variables through its checks and levels (GenericJoin
        levels only: the caller runs the other ops), reading derived relations too."""
        with self.jobs.action(f"join from {program.seed_vars}"), self._conf(STEP_CONF):
            views = self._views(delta, derived)
            names = [column(i) for i in range(len(program.seed_vars))]
            source = views.sql.source(id_source(self.session, rows, names))
            out = run(views.sql, program, source, views.relation)
            return self._collect(views.sql, out, len(program.output), work)

    def applied(self, delta: Mapping[Datom, int]) -> None:
        """The shared arrangements took ``delta``: keep the mirror in step."""
        self.mirror.apply(delta)

    def restored(self) -> None:
        """The shared arrangements were replaced by a snapshot."""
        self.mirror.reset()

    def _views(self, delta: MemoryArrangement, derived: Relations | None = None) -> Views:
        sql = Sql(self.session)
        old = self.mirror.old(sql)
        d = self.mirror.delta(sql, delta)
        tables = {Role.OLD: old, Role.DELTA: d, Role.NEW: patched(sql, old, d)}
        return Views(sql, tables, self.mirror.db.ids, {}, derived)

    def _collect(self, sql: Sql, final: str, width: int, work: Work) -> dict[Row, int]:
        try:
            rows = collect_rows(sql.run(final), width)
        finally:
            sql.release()
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
