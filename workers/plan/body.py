"""One conjunctive body → one :class:`JoinProgram` (GenericJoin with its ops placed).

A body is a list of literals: data patterns and derived-relation atoms (generators, which
propose and intersect values), negations, predicates and function bindings.  Generators are
extended one variable at a time in a greedy order; every other literal becomes an op placed
as soon as its variables are bound (a function binding as soon as its arguments are, after
which its outputs count as bound).  A generator all of whose variables get bound by
functions instead of levels is checked right there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Any

from workers.arrangements.keys import INDEX_ORDERS, IndexOrder
from workers.datalog.ast import (
    BindColl,
    BindRel,
    BindScalar,
    Blank,
    Constant,
    FnBinding,
    Pattern,
    Predicate,
    Term,
    Variable,
    binding_terms,
    variables_of,
)
from workers.plan.ir import (
    DATOMS,
    Absent,
    Compute,
    ExtenderSpec,
    Filter,
    JoinProgram,
    Level,
    Op,
    Role,
    Step,
    StepKind,
)
from workers.plan.order import AttributeStats, next_variable


@dataclass(frozen=True, slots=True)
class Atom:
    """A derived relation read positively: ``relation(terms)``."""

    relation: str
    terms: tuple[Term, ...]

    @property
    def variables(self) -> tuple[Variable, ...]:
        return variables_of(self.terms)


@dataclass(frozen=True, slots=True)
class Negation:
    """``not relation(terms)``: every variable bound elsewhere."""

    relation: str
    terms: tuple[Term, ...]

    @property
    def variables(self) -> tuple[Variable, ...]:
        return variables_of(self.terms)


Literal = Pattern | Atom | Negation | Predicate | FnBinding
RoleOf = dict[int, Role]
KEYED = (StepKind.CONST, StepKind.BOUND)
SHAPES = {BindScalar: "scalar", BindColl: "coll", BindRel: "rel"}


def relation_of(literal: Literal) -> tuple[str, tuple[Term, ...]]:
    """The relation a generator or negation reads, and its terms."""
    if isinstance(literal, Pattern):
        return DATOMS, literal.terms
    assert isinstance(literal, Atom | Negation)
    return literal.relation, literal.terms


def program(literals: Sequence[Literal], roles: RoleOf, seed: int | None,
            seed_vars: Sequence[Variable], output: Sequence[Variable] | None,
            stats: AttributeStats) -> JoinProgram:
    """One GenericJoin over the generators and negations in ``roles`` (and every predicate
    and function binding), seeded by pattern ``seed``'s delta or by rows over
    ``seed_vars``; ``output`` None keeps every column."""
    seed_spec = None
    if seed is not None:
        seed_vars = literals[seed].variables
        seed_spec = extender(literals[seed], seed, Role.DELTA, {}, seed_vars)
    slots = {v: i for i, v in enumerate(seed_vars)}
    generators = [j for j in roles if not isinstance(literals[j], Negation)]
    pending = [j for j in roles if isinstance(literals[j], Negation)] + \
        [j for j, lit in enumerate(literals) if isinstance(lit, Predicate | FnBinding)]
    checks = tuple(extender(literals[j], j, roles[j], slots, ())
                   for j in generators if set(literals[j].variables) <= set(slots))
    applied = {j for j in generators if set(literals[j].variables) <= set(slots)}
    ops: list[Op] = []
    _place_ready(literals, roles, pending, applied, generators, slots, ops)
    while True:
        variable = next_variable([literals[j] for j in generators], slots, stats)
        if variable is None:
            break
        extenders = []
        for j in generators:
            if variable in literals[j].variables:
                later = [v for v in literals[j].variables if v not in slots and v != variable]
                extenders.append(extender(literals[j], j, roles[j], slots, (variable,),
                                          not later))
                if not later:
                    applied.add(j)
        ops.append(Level(variable.name, tuple(extenders)))
        slots[variable] = len(slots)
        _place_ready(literals, roles, pending, applied, generators, slots, ops)
    if pending:
        raise AssertionError(f"unplaceable literals {pending} (the safety check should "
                             "have refused the query)")
    columns = list(slots) if output is None else list(output)
    return JoinProgram(seed_spec, tuple(v.name for v in seed_vars), checks, tuple(ops),
                       tuple(slots[v] for v in columns))


def _place_ready(literals: Sequence[Literal], roles: RoleOf, pending: list[int],
                 applied: set[int], generators: list[int], slots: dict[Variable, int],
                 ops: list[Op]) -> None:
    """Append every op whose variables are bound, until none is left ready."""
    progress = True
    while progress:
        progress = False
        for j in list(pending):
            literal = literals[j]
            needs = literal.inputs if isinstance(literal, FnBinding) else literal.variables
            if not set(needs) <= set(slots):
                continue
            pending.remove(j)
            progress = True
            if isinstance(literal, FnBinding):
                ops.append(_compute(literal, slots))
                for j2 in generators:
                    if j2 not in applied and set(literals[j2].variables) <= set(slots):
                        applied.add(j2)
                        ops.append(extender(literals[j2], j2, roles[j2], slots, ()))
            elif isinstance(literal, Predicate):
                ops.append(Filter(literal.fn, tuple(_arg(t, slots) for t in literal.args)))
            else:
                ops.append(Absent(extender(literal, j, roles[j], slots, ())))


def _arg(term: Term, slots: Mapping[Variable, int]) -> Step:
    if isinstance(term, Variable):
        return Step(StepKind.BOUND, slots[term])
    assert isinstance(term, Constant)
    return Step(StepKind.CONST, term.value)


def _compute(literal: FnBinding, slots: dict[Variable, int]) -> Compute:
    """The function's op; its new output variables get slots."""
    targets: list[Step] = []
    outputs: list[Variable] = []
    for target in binding_terms(literal.binding):
        if isinstance(target, Blank):
            targets.append(Step(StepKind.FREE))
        elif target in slots:
            targets.append(Step(StepKind.BOUND, slots[target]))
        elif target in outputs:
            targets.append(Step(StepKind.SAME, outputs.index(target)))
        else:
            targets.append(Step(StepKind.BIND, len(outputs)))
            outputs.append(target)
    op = Compute(literal.fn, tuple(_arg(t, slots) for t in literal.args),
                 SHAPES.get(type(literal.binding), "tuple"), tuple(targets),
                 tuple(v.name for v in outputs))
    for variable in outputs:
        slots[variable] = len(slots)
    return op


def extender(literal: Literal, index: int, role: Role, slots: Mapping[Variable, int],
             binds: Sequence[Variable], weighted: bool = True) -> ExtenderSpec:
    """Read a literal through the index that looks up the most bound positions first."""
    relation, terms = relation_of(literal)
    orders: Sequence[Any] = INDEX_ORDERS if relation == DATOMS else \
        _relation_orders(len(terms))
    best: tuple[tuple[int, ...], Any, tuple[Step, ...]] | None = None
    for order in orders:
        positions = order.positions if isinstance(order, IndexOrder) else order
        found = steps(terms, positions, slots, binds)
        score = _score(found)
        if best is None or score > best[0]:
            best = (score, order, found)
    assert best is not None
    _, order, chosen = best
    return ExtenderSpec(index, role, order, chosen, weighted, relation)


def _relation_orders(arity: int) -> Sequence[tuple[int, ...]]:
    """Column permutations a derived relation may be indexed by (all of them up to 4
    columns; beyond, each column first with the rest in order)."""
    if arity <= 4:
        return list(permutations(range(arity)))
    return [(i, *[j for j in range(arity) if j != i]) for i in range(arity)]


def steps(terms: Sequence[Term], positions: Sequence[int], slots: Mapping[Variable, int],
          binds: Sequence[Variable]) -> tuple[Step, ...]:
    """How a literal's terms are read in ``positions`` order: CONST, BOUND (a column of
    ``slots``), BIND/SAME (a column of ``binds``), FREE."""
    out: list[Step] = []
    seen: set[Variable] = set()
    for position in positions:
        term = terms[position]
        if isinstance(term, Constant):
            out.append(Step(StepKind.CONST, term.value))
        elif isinstance(term, Blank) or (term not in slots and term not in binds):
            out.append(Step(StepKind.FREE))
        elif term in slots:
            out.append(Step(StepKind.BOUND, slots[term]))
        elif term in seen:
            out.append(Step(StepKind.SAME, list(binds).index(term)))
        else:
            seen.add(term)
            out.append(Step(StepKind.BIND, list(binds).index(term)))
    return tuple(out)


def _score(steps: Sequence[Step]) -> tuple[int, ...]:
    """Prefer: more lookups before the first enumeration, fewer free scans before a bind,
    lookups as early as possible after it."""
    leading = next((d for d, s in enumerate(steps) if s.kind not in KEYED), len(steps))
    first_bind = next((d for d, s in enumerate(steps) if s.kind is StepKind.BIND), len(steps))
    free_before = sum(s.kind is StepKind.FREE for s in steps[:first_bind])
    keyed_depths = [-d for d, s in enumerate(steps) if s.kind in KEYED or s.kind is StepKind.SAME]
    return (leading, -free_before, *sorted(keyed_depths, reverse=True))
