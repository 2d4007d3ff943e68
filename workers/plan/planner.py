"""Query AST → Plan: choose index orders, variable orders and each strategy's delta terms.

Delta terms (DESIGN §3), for patterns ``R_1..R_n`` and a tick's change ``Δ``::

    Δ(R_1 ⋈ .. ⋈ R_n) = Σ_i new(R_1..R_{i-1}) ⋈ ΔR_i ⋈ old(R_{i+1}..R_n)

``new = old + Δ``.  Term ``i`` is seeded by the tuples of ``ΔR_i`` (so its work starts from
the change, not the database) and binds the remaining variables with GenericJoin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workers.datalog.ast import Blank, Constant, Pattern, Query, Variable
from workers.edn import show
from workers.plan.body import RoleOf, program
from workers.plan.ir import (
    BinaryTerm,
    DeltaTerm,
    Plan,
    RecursiveStage,
    Role,
    Term,
)
from workers.plan.order import AttributeStats, connected_pattern_order, no_stats

STRATEGIES = ("delta", "recursive", "binary")


def plan_query(query: Query, strategy: str = "delta", stats: AttributeStats = no_stats) -> Plan:
    """Plan ``query`` (inputs already bound) for ``strategy``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}")
    patterns = _patterns(query)
    everything = range(len(patterns))
    terms_of = {"delta": _delta_terms, "binary": _binary_terms, "recursive": _recursive_stages}
    return Plan(
        find=tuple(v.name for v in query.basis),
        patterns=tuple(_show_pattern(p) for p in patterns),
        attributes=_routing_attributes(patterns),
        strategy=strategy,
        full=program(patterns, dict.fromkeys(everything, Role.OLD), None, (), query.basis,
                      stats),
        support=program(patterns, dict.fromkeys(everything, Role.OLD), None, query.basis, (),
                         stats),
        terms=terms_of[strategy](query, stats),
    )


def _delta_terms(query: Query, stats: AttributeStats) -> tuple[Term, ...]:
    n = len(_patterns(query))
    return tuple(DeltaTerm(i, program(_patterns(query), _alt_neu_roles(n, i), i, (), query.basis,
                                       stats)) for i in range(n))


def _alt_neu_roles(n: int, i: int) -> RoleOf:
    """Patterns before ``i`` read ``new``, after ``i`` read ``old`` — no change counted twice."""
    return {j: Role.NEW if j < i else Role.OLD for j in range(n) if j != i}


def _binary_terms(query: Query, stats: AttributeStats) -> tuple[Term, ...]:
    patterns = _patterns(query)
    n = len(patterns)
    terms: list[Term] = []
    for i in range(n):
        order = connected_pattern_order(patterns, i)
        roles = _alt_neu_roles(n, i)
        chain = [program(patterns, {}, i, (), None, stats)]
        for j in order[1:]:
            bound = chain[-1].layout
            last = j == order[-1]
            chain.append(program(patterns, {j: roles[j]}, None, _variables(bound),
                                  query.basis if last else None, stats))
        if n == 1:
            chain = [program(patterns, {}, i, (), query.basis, stats)]
        terms.append(BinaryTerm(i, tuple(chain)))
    return tuple(terms)


def _recursive_stages(query: Query, stats: AttributeStats) -> tuple[Term, ...]:
    patterns = _patterns(query)
    order = connected_pattern_order(patterns, 0)
    stages: list[Term] = []
    seen: list[int] = []
    for k, j in enumerate(order):
        last = k == len(order) - 1
        columns = query.basis if last else _variables_of(patterns, [*seen, j])
        previous = _variables_of(patterns, seen)
        extend = (program(patterns, {j: Role.NEW}, None, previous, columns, stats)
                  if seen else None)
        seeded = program(patterns, dict.fromkeys(seen, Role.OLD), j, (), columns, stats)
        stages.append(RecursiveStage(j, extend, seeded))
        seen.append(j)
    return tuple(stages)


def _patterns(query: Query) -> tuple[Pattern, ...]:
    """A flat query's clauses, all data patterns."""
    assert query.is_flat
    return query.where  # type: ignore[return-value]


def _variables(names: Sequence[str]) -> tuple[Variable, ...]:
    return tuple(Variable(n) for n in names)


def _variables_of(patterns: Sequence[Pattern], indices: Sequence[int]) -> tuple[Variable, ...]:
    return tuple(dict.fromkeys(v for j in indices for v in patterns[j].variables))


def _routing_attributes(patterns: Sequence[Pattern]) -> tuple[Any, ...] | None:
    """The attributes whose datoms can change the result; None when some pattern has a
    variable attribute (every datom can)."""
    if any(not isinstance(p.a, Constant) for p in patterns):
        return None
    return tuple(dict.fromkeys(p.a.value for p in patterns))  # type: ignore[union-attr]


def _show_pattern(pattern: Pattern) -> str:
    def term(t: Any) -> str:
        return t.name if isinstance(t, Variable) else "_" if isinstance(t, Blank) else show(t.value)
    return "[" + " ".join(term(t) for t in pattern.terms) + "]"
