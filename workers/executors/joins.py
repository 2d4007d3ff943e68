"""Where the join programs of derived relations run: the two questions DRed asks.

``run``: the rows a join program derives from rows handed in over its seed variables;
``derivable``: which of the given head rows the (support) program can still derive;
``witnessed``: which of the given rows have one output row of the (witness) program that a
test accepts — the existence question, so the local join stops at the first;
``per_fact``: whether a small join is cheap enough for a delete's support check, which
runs one per over-delete round (a function call here, a job on Spark; the name is from the
per-fact proofs it replaced).
:class:`LocalJoins` answers with GenericJoin over the in-memory arrangements;
:class:`~workers.executors.spark.rules.SparkJoins` with Spark SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.executors.extenders import Relations, Row
from workers.executors.generic_join import (
    CompiledProgram,
    compile_program,
    count_support,
    run,
    witnessed,
)
from workers.executors.work import Work
from workers.plan.ir import JoinProgram


class Joins(Protocol):
    per_fact: bool

    def run(self, program: JoinProgram, rows: Mapping[Row, int],
            work: Work) -> dict[Row, int]: ...

    def derivable(self, program: JoinProgram, rows: Iterable[Row], work: Work) -> set[Row]: ...

    def witnessed(self, program: JoinProgram, rows: Iterable[Row],
                  accept: Callable[[Row], bool], work: Work) -> set[Row]: ...


class LocalJoins:
    """GenericJoin in process; each program is compiled once (the tries are updated in
    place, so a compiled program stays valid)."""

    per_fact = True

    def __init__(self, db: ArrangementRegistry, delta: MemoryArrangement,
                 relations: Relations) -> None:
        self._db, self._delta, self._relations = db, delta, relations
        self._compiled: dict[int, CompiledProgram] = {}

    def compiled(self, program: JoinProgram) -> CompiledProgram:
        found = self._compiled.get(id(program))
        if found is None:
            found = compile_program(program, self._db, self._delta, self._relations)
            self._compiled[id(program)] = found
        return found

    def run(self, program: JoinProgram, rows: Mapping[Row, int], work: Work) -> dict[Row, int]:
        return run(self.compiled(program), dict(rows), work)

    def derivable(self, program: JoinProgram, rows: Iterable[Row], work: Work) -> set[Row]:
        """Depth first, stopping at each row's first derivation; a program of checks alone
        (a rule reading only a datom per head) is one pass over the rows, without a search
        per row (a delete's support check asks it of every candidate)."""
        compiled = self.compiled(program)
        if not compiled.levels:
            return set(run(compiled, dict.fromkeys(rows, 1), work))
        return {row for row in rows if count_support(compiled, row, 1, work)}

    def witnessed(self, program: JoinProgram, rows: Iterable[Row],
                  accept: Callable[[Row], bool], work: Work) -> set[Row]:
        """Depth first, stopping at each row's first accepted output row."""
        compiled = self.compiled(program)
        return {row for row in rows if witnessed(compiled, row, accept, work)}
