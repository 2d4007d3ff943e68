"""Query AST → Plan: choose index orders, variable orders and each strategy's delta terms.

Delta terms (DESIGN §3), for patterns ``R_1..R_n`` and a tick's change ``Δ``::

    Δ(R_1 ⋈ .. ⋈ R_n) = Σ_i new(R_1..R_{i-1}) ⋈ ΔR_i ⋈ old(R_{i+1}..R_n)

``new = old + Δ``.  Term ``i`` is seeded by the tuples of ``ΔR_i`` (so its work starts from
the change, not the database) and binds the remaining variables with GenericJoin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workers.arrangements.keys import INDEX_ORDERS, IndexOrder
from workers.datalog.ast import Blank, Constant, Pattern, Query, Variable
from workers.edn import show
from workers.plan.ir import (
    BinaryTerm,
    DeltaTerm,
    ExtenderSpec,
    JoinProgram,
    Level,
    Plan,
    RecursiveStage,
    Role,
    Step,
    StepKind,
    Term,
)
from workers.plan.order import AttributeStats, connected_pattern_order, no_stats, variable_order

STRATEGIES = ("delta", "recursive", "binary")
RoleOf = dict[int, Role]


def plan_query(query: Query, strategy: str = "delta", stats: AttributeStats = no_stats) -> Plan:
    """Plan ``query`` (inputs already bound) for ``strategy``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}")
    patterns = query.where
    everything = range(len(patterns))
    terms_of = {"delta": _delta_terms, "binary": _binary_terms, "recursive": _recursive_stages}
    return Plan(
        find=tuple(v.name for v in query.find),
        patterns=tuple(_show_pattern(p) for p in patterns),
        attributes=_routing_attributes(patterns),
        strategy=strategy,
        full=_program(patterns, dict.fromkeys(everything, Role.OLD), None, (), query.find,
                      stats),
        support=_program(patterns, dict.fromkeys(everything, Role.OLD), None, query.find, (),
                         stats),
        terms=terms_of[strategy](query, stats),
    )


def _delta_terms(query: Query, stats: AttributeStats) -> tuple[Term, ...]:
    n = len(query.where)
    return tuple(DeltaTerm(i, _program(query.where, _alt_neu_roles(n, i), i, (), query.find,
                                       stats)) for i in range(n))


def _alt_neu_roles(n: int, i: int) -> RoleOf:
    """Patterns before ``i`` read ``new``, after ``i`` read ``old`` — no change counted twice."""
    return {j: Role.NEW if j < i else Role.OLD for j in range(n) if j != i}


def _binary_terms(query: Query, stats: AttributeStats) -> tuple[Term, ...]:
    patterns, n = query.where, len(query.where)
    terms: list[Term] = []
    for i in range(n):
        order = connected_pattern_order(patterns, i)
        roles = _alt_neu_roles(n, i)
        chain = [_program(patterns, {}, i, (), None, stats)]
        for j in order[1:]:
            bound = chain[-1].layout
            last = j == order[-1]
            chain.append(_program(patterns, {j: roles[j]}, None, _variables(bound),
                                  query.find if last else None, stats))
        if n == 1:
            chain = [_program(patterns, {}, i, (), query.find, stats)]
        terms.append(BinaryTerm(i, tuple(chain)))
    return tuple(terms)


def _recursive_stages(query: Query, stats: AttributeStats) -> tuple[Term, ...]:
    patterns = query.where
    order = connected_pattern_order(patterns, 0)
    stages: list[Term] = []
    seen: list[int] = []
    for k, j in enumerate(order):
        last = k == len(order) - 1
        columns = query.find if last else _variables_of(patterns, [*seen, j])
        previous = _variables_of(patterns, seen)
        extend = (_program(patterns, {j: Role.NEW}, None, previous, columns, stats)
                  if seen else None)
        seeded = _program(patterns, dict.fromkeys(seen, Role.OLD), j, (), columns, stats)
        stages.append(RecursiveStage(j, extend, seeded))
        seen.append(j)
    return tuple(stages)


def _program(patterns: Sequence[Pattern], roles: RoleOf, seed: int | None,
             seed_vars: Sequence[Variable], output: Sequence[Variable] | None,
             stats: AttributeStats) -> JoinProgram:
    """One GenericJoin over ``roles``' patterns, seeded by pattern ``seed``'s delta or by rows
    over ``seed_vars``; ``output`` None keeps every column."""
    seed_spec = None
    if seed is not None:
        seed_vars = patterns[seed].variables
        seed_spec = _extender(patterns[seed], seed, Role.DELTA, {}, seed_vars)
    slots = {v: i for i, v in enumerate(seed_vars)}
    participants = [patterns[j] for j in roles]
    checks = tuple(_extender(patterns[j], j, role, slots, ())
                   for j, role in roles.items() if set(patterns[j].variables) <= set(slots))
    levels = []
    for variable in variable_order(participants, slots, stats):
        extenders = []
        for j, role in roles.items():
            pattern = patterns[j]
            if variable in pattern.variables:
                later = [v for v in pattern.variables if v not in slots and v != variable]
                extenders.append(_extender(pattern, j, role, slots, (variable,), not later))
        levels.append(Level(variable.name, tuple(extenders)))
        slots[variable] = len(slots)
    columns = list(slots) if output is None else list(output)
    return JoinProgram(seed_spec, tuple(v.name for v in seed_vars), checks, tuple(levels),
                       tuple(slots[v] for v in columns))


def _extender(pattern: Pattern, index: int, role: Role, slots: dict[Variable, int],
              binds: Sequence[Variable], weighted: bool = True) -> ExtenderSpec:
    """Read ``pattern`` through the index that looks up the most bound positions first."""
    best: tuple[tuple[int, ...], IndexOrder, tuple[Step, ...]] | None = None
    for order in INDEX_ORDERS:
        steps = _steps(pattern, order, slots, binds)
        score = _score(steps)
        if best is None or score > best[0]:
            best = (score, order, steps)
    assert best is not None
    _, order, steps = best
    return ExtenderSpec(index, role, order, steps, weighted)  # type: ignore[arg-type]


def _steps(pattern: Pattern, order: IndexOrder, slots: dict[Variable, int],
           binds: Sequence[Variable]) -> tuple[Step, ...]:
    steps: list[Step] = []
    seen: set[Variable] = set()
    for position in order.positions:
        term = pattern.terms[position]
        if isinstance(term, Constant):
            steps.append(Step(StepKind.CONST, term.value))
        elif isinstance(term, Blank) or (term not in slots and term not in binds):
            steps.append(Step(StepKind.FREE))
        elif term in slots:
            steps.append(Step(StepKind.BOUND, slots[term]))
        elif term in seen:
            steps.append(Step(StepKind.SAME, list(binds).index(term)))
        else:
            seen.add(term)
            steps.append(Step(StepKind.BIND, list(binds).index(term)))
    return tuple(steps)


KEYED = (StepKind.CONST, StepKind.BOUND)


def _score(steps: Sequence[Step]) -> tuple[int, ...]:
    """Prefer: more lookups before the first enumeration, fewer free scans before a bind,
    lookups as early as possible after it."""
    leading = next((d for d, s in enumerate(steps) if s.kind not in KEYED), len(steps))
    first_bind = next((d for d, s in enumerate(steps) if s.kind is StepKind.BIND), len(steps))
    free_before = sum(s.kind is StepKind.FREE for s in steps[:first_bind])
    keyed_depths = [-d for d, s in enumerate(steps) if s.kind in KEYED or s.kind is StepKind.SAME]
    return (leading, -free_before, *sorted(keyed_depths, reverse=True))


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
