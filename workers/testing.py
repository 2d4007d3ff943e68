"""Test helpers shipped with the package: an independent from-scratch oracle.

Nothing here shares code with the planner, the tries or the executors: queries are
evaluated by nested loops over a plain list of datoms, and transactions by a direct reading
of Datomic's rules.  Incremental results are checked against these (integrating a query's
changes must equal re-running it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from workers.datalog import Blank, Constant, Pattern, Variable, compile_query
from workers.edn import keyword

Datom = tuple[Any, Any, Any]
Row = tuple[Any, ...]


def evaluate_from_scratch(query: Any, datoms: Iterable[Datom],
                          inputs: Sequence[Any] = ()) -> dict[Row, int]:
    """The query's result ``{row: 1}`` on a set of datoms, by backtracking over patterns."""
    compiled = compile_query(query, inputs)
    datoms = list(datoms)
    rows: set[Row] = set()

    def solve(i: int, binding: dict[Variable, Any]) -> None:
        if i == len(compiled.where):
            rows.add(tuple(binding[v] for v in compiled.find))
            return
        for datom in datoms:
            extended = _unify(compiled.where[i], datom, binding)
            if extended is not None:
                solve(i + 1, extended)

    solve(0, {})
    return dict.fromkeys(rows, 1)


def _unify(pattern: Pattern, datom: Datom,
           binding: dict[Variable, Any]) -> dict[Variable, Any] | None:
    extended = dict(binding)
    for term, value in zip(pattern.terms, datom, strict=True):
        if isinstance(term, Blank):
            continue
        if isinstance(term, Constant):
            if not _same(term.value, value):
                return None
        elif term in extended:
            if not _same(extended[term], value):
                return None
        else:
            extended[term] = value
    return extended


def _same(a: Any, b: Any) -> bool:
    return bool(a == b)


class ReferenceDb:
    """A set of datoms changed by transactions as Datomic defines them (the oracle's data).

    Supports ``:db/add``, ``:db/retract`` and ``:db/retractEntity`` ops, and cardinality-one
    attributes given up front.  Returns False (and changes nothing) for a refused tx.
    """

    def __init__(self, cardinality_one: Iterable[Any] = ()) -> None:
        self.datoms: set[Datom] = set()
        self.cardinality_one = set(cardinality_one)

    def transact(self, ops: Sequence[Sequence[Any]]) -> bool:
        adds: set[Datom] = set()
        retracts: set[Datom] = set()
        for op in ops:
            if op[0] == keyword("db/add"):
                adds.add((op[1], op[2], op[3]))
            elif op[0] == keyword("db/retract"):
                retracts.add((op[1], op[2], op[3]))
            else:
                retracts |= {d for d in self.datoms if d[0] == op[1]}
        if adds & retracts:
            return False
        one_values: dict[tuple[Any, Any], Any] = {}
        for e, a, v in adds:
            if a in self.cardinality_one:
                if one_values.setdefault((e, a), v) != v:
                    return False
                retracts |= {d for d in self.datoms if d[:2] == (e, a) and d[2] != v}
        self.datoms = (self.datoms - retracts) | adds
        return True
