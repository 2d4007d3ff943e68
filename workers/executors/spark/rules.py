"""Derived relations on Spark: DRed's join programs, their GenericJoin levels in tasks.

The DRed control loop (:mod:`workers.executors.rules`) stays on the driver with the
query's relations; each join program it runs is cut into pieces: runs of GenericJoin
levels go to Spark (one job each: tasks run the local GenericJoin over shares of the rows,
reading the state's files and the derived relations' tuples shipped with the job), with
the checks and negations between them (they read the database, which the driver does not
hold); the predicates and function bindings run on the driver over the collected rows, with
the same code as the local executor (built-ins decode the value ids they read, and only the
driver holds the value dictionary).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.executors.extenders import Relations
from workers.executors.joins import LocalJoins
from workers.executors.spark.executor import SparkExecutor
from workers.executors.work import Work
from workers.plan.ir import Compute, ExtenderSpec, Filter, JoinProgram, Op, columns_added
from workers.zset import ZSet
from workers.zset.row import Row


@dataclass(frozen=True, slots=True)
class Piece:
    """Part of a program: ops that read the database or derived relations — GenericJoin
    levels, checks, negations — on Spark, or one op that reads values on the driver."""

    program: JoinProgram
    on_spark: bool


class SparkJoins:
    """:class:`~workers.executors.joins.Joins` with the levels on Spark."""

    per_fact = False

    def __init__(self, spark: SparkExecutor, old: ArrangementRegistry,
                 delta: MemoryArrangement, relations: Relations) -> None:
        self._spark, self._delta, self._relations = spark, delta, relations
        self._local = LocalJoins(old, delta, relations)
        self._pieces: dict[int, tuple[Piece, ...]] = {}

    def run(self, program: JoinProgram, rows: Mapping[Row, int], work: Work) -> ZSet[Row]:
        current = dict(rows)
        for piece in self._cut(program):
            if not current:
                return {}
            if piece.on_spark:
                current = self._spark.run_rows(piece.program, current, self._delta,
                                               self._relations, work)
            else:
                current = self._local.run(piece.program, current, work)
        out: ZSet[Row] = {}
        for row, weight in current.items():
            key = tuple(row[i] for i in program.output)
            out[key] = out.get(key, 0) + weight
        return {row: weight for row, weight in out.items() if weight}

    def derivable(self, program: JoinProgram, rows: Iterable[Row], work: Work) -> set[Row]:
        derived = self.run(program, dict.fromkeys(rows, 1), work)
        return {row for row, weight in derived.items() if weight > 0}

    def witnessed(self, program: JoinProgram, rows: Iterable[Row],
                  accept: Callable[[Row], bool], work: Work) -> set[Row]:
        """The seed columns of the accepted output rows (all listed: one job either way)."""
        width = len(program.seed_vars)
        return {row[:width] for row, weight in self.run(program, dict.fromkeys(rows, 1),
                                                        work).items()
                if weight > 0 and accept(row)}

    def _cut(self, program: JoinProgram) -> tuple[Piece, ...]:
        found = self._pieces.get(id(program))
        if found is None:
            found = self._pieces[id(program)] = tuple(_pieces(program))
        return found


def _pieces(program: JoinProgram) -> list[Piece]:
    """Consecutive ops that read the database as one Spark piece (the first carries the
    program's checks); each predicate or function binding a driver piece.  Each piece
    keeps all its columns."""
    pieces: list[Piece] = []
    layout = program.seed_vars
    levels: list[Op] = []
    checks = program.checks

    def flush() -> None:
        nonlocal layout, levels, checks
        if levels or checks:
            pieces.append(Piece(_keeping_all(layout, checks, tuple(levels)), on_spark=True))
            layout = pieces[-1].program.layout
        levels, checks = [], ()

    for op in program.levels:
        if not isinstance(op, Compute | Filter):  # they read values: on the driver
            levels.append(op)
            continue
        flush()
        pieces.append(Piece(_keeping_all(layout, (), (op,)), on_spark=False))
        layout = layout + columns_added(op)
    flush()
    return pieces


def _keeping_all(seed_vars: tuple[str, ...], checks: tuple[ExtenderSpec, ...],
                 ops: tuple[Op, ...]) -> JoinProgram:
    """A program from rows over ``seed_vars`` that outputs every column it has."""
    width = len(seed_vars) + sum(len(columns_added(op)) for op in ops)
    return JoinProgram(None, seed_vars, checks, ops, tuple(range(width)))
