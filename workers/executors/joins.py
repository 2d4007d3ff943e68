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
from typing import Any, Protocol

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.executors.extenders import Candidates, Extender, Relations
from workers.executors.generic_join import (
    CompiledProgram,
    compile_program,
    count_support,
    run,
    witnessed,
)
from workers.executors.work import Work
from workers.plan.ir import JoinProgram
from workers.zset import ZSet
from workers.zset.row import Row


class Joins(Protocol):
    per_fact: bool

    def run(self, program: JoinProgram, rows: Mapping[Row, int],
            work: Work) -> ZSet[Row]: ...

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

    def run(self, program: JoinProgram, rows: Mapping[Row, int], work: Work) -> ZSet[Row]:
        return run(self.compiled(program), dict(rows), work)

    def derivable(self, program: JoinProgram, rows: Iterable[Row], work: Work) -> set[Row]:
        """Depth first, stopping at each row's first derivation; a program of checks alone
        (a rule reading only a datom per head) is one pass over the rows, without a search
        per row (a delete's support check asks it of every candidate); a program of one
        level, the rows at once (:func:`witnessed_at_once`, every row accepted)."""
        compiled = self.compiled(program)
        if not compiled.levels:
            return set(run(compiled, dict.fromkeys(rows, 1), work))
        level = _one_level(compiled)
        if level is not None:
            return witnessed_at_once(level, rows, _any, work)
        return {row for row in rows if count_support(compiled, row, 1, work)}

    def witnessed(self, program: JoinProgram, rows: Iterable[Row],
                  accept: Callable[[Row], bool], work: Work) -> set[Row]:
        """Depth first, stopping at each row's first accepted output row; a program of one
        level (a linear rule's witness) the whole round at once (:func:`witnessed_at_once`)."""
        compiled = self.compiled(program)
        level = _one_level(compiled) if compiled.identity else None
        if level is not None:
            return witnessed_at_once(level, rows, accept, work)
        return {row for row in rows if witnessed(compiled, row, accept, work)}


def _one_level(compiled: CompiledProgram) -> tuple[Extender, ...] | None:
    """The extenders of a program that binds one variable and does nothing else."""
    levels = compiled.levels
    if len(levels) == 1 and isinstance(levels[0], tuple) and not compiled.checks:
        return levels[0]
    return None


def _any(row: Row) -> bool:
    return True


def witnessed_at_once(extenders: tuple[Extender, ...], rows: Iterable[Row],
                      accept: Callable[[Row], bool], work: Work) -> set[Row]:
    """The rows with a value of the one variable left that every extender proposes (the
    weights' product positive) and ``accept`` holds for the row extended by it.

    Why not one GenericJoin search per row: a round's rows share most prefixes of one
    extender (a hub delete's candidates ``(u, b)`` all read ``u``'s successors), so each
    prefix is proposed once for the round, not once per row — a proposal merged with the
    tick's delta, ranked, intersected through the spine each time — and each row is one
    intersection of key sets in C.  An extender's proposals carry the weights it would
    multiply an intersection by (GenericJoin's contract: any extender may propose)."""
    # each extender's proposals by prefix, for this round: the state does not change in it
    memos: list[tuple[dict[Row, Candidates], Callable[[Row], Row], Callable[[Row], Candidates]]]
    memos = [({}, extender.prefix, extender.propose) for extender in extenders]
    found = set()
    intersections = proposed = 0
    for row in rows:
        intersections += 1
        proposals: list[Candidates] = []
        for memo, prefix_of, propose in memos:
            prefix = prefix_of(row)
            values = memo.get(prefix)
            if values is None:
                values = memo[prefix] = propose(row)
                proposed += len(values)
            proposals.append(values)
        common: Iterable[Any] = proposals[0].keys()
        for values in proposals[1:]:
            common = values.keys() & common  # in C, over the smaller side
        for value in common:
            weight = 1
            for values in proposals:
                weight *= values[value]
            if weight > 0 and accept(row + (value,)):
                found.add(row)
                break
    work.calls += intersections + sum(len(memo) for memo, _, _ in memos)
    work.elements += proposed
    return found
