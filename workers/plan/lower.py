"""A query with ``or``, ``not`` and rules → a stratified program of derived relations.

Each rule name becomes a relation (one rule per definition); each ``or`` a relation over
its join variables with one rule per branch; each ``not`` a relation over its join
variables, read through a negation; the query itself the relation ``query`` over its basis
(find variables, then ``:with``).  A sub-body (a branch, a negated body) that does not bind
its join variables by itself — ``(not [(> ?age 30)])`` — gets the positive clauses around it
prepended, so every relation is range-restricted and can be kept bottom-up (a magic-set
style rewrite, done only where needed).  Variables local to an ``or-join``/``not-join`` are
renamed apart.

A rule whose calls must bind some arguments (written ``(name [?p] ...)``, or that its body
cannot bind: ``[(big ?x) [(> ?x 10)]]``) is kept by magic sets: a relation ``magic:name``
over those arguments gets one rule per call site — the call's arguments at those positions,
derived from the clauses that bind them before the call (sideways information passing) —
and every rule of ``name`` starts with ``magic:name``.  So the rule is kept, bottom-up and
incrementally like any other, for exactly the values it is called with; a recursive call
inside the rule demands the next values from the current ones::

    descendant([?a], ?d) :- [?m :parent ?a], descendant(?m, ?d)
    →  rule:descendant(?a, ?d) :- magic:descendant(?a), [?m :parent ?a], rule:descendant(?m, ?d)
       magic:descendant(?m)    :- magic:descendant(?a), [?m :parent ?a]

Relations are grouped into strata (strongly connected components of the dependency graph,
dependencies first); a negation inside a component — a relation that depends on its own
negation — is refused: the rules are not stratifiable.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count

from workers.datalog.ast import (
    BindScalar,
    Clause,
    Constant,
    FnBinding,
    Not,
    Or,
    Pattern,
    Predicate,
    Query,
    Rule,
    RuleCall,
    Term,
    Variable,
    flat_bindings,
    renamed,
)
from workers.datalog.check import bound_by
from workers.edn import show
from workers.errors import ErrorCode, QueryError
from workers.plan.body import Atom, Literal, Negation

ROOT = "query"
# A relation over no variable holds the one tuple (true,): its rules bind a unit column.
ZERO_ARITY = (Constant(True),)
UNIT = Variable("?#unit")


@dataclass(frozen=True, slots=True)
class DerivedRule:
    head: tuple[Term, ...]
    body: tuple[Literal, ...]
    source: str


@dataclass(slots=True)
class Program:
    """Derived relations by name (rules in definition order) and their strata."""

    relations: dict[str, list[DerivedRule]] = field(default_factory=dict)
    strata: list[tuple[str, ...]] = field(default_factory=list)


def lower(query: Query) -> Program:
    """The stratified program of a (bound, checked) query."""
    lowering = _Lowering(query.rules)
    lowering.define(ROOT, query.basis, query.where, (), "the query")
    program = Program(lowering.relations)
    program.strata = _strata(lowering.relations)
    return program


class _Lowering:
    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = rules
        self.relations: dict[str, list[DerivedRule]] = {}
        self._fresh = count(1)

    def define(self, name: str, head: Sequence[Term], clauses: Sequence[Clause],
               context: Sequence[Literal], source: str,
               demand: tuple[Literal, ...] = ()) -> None:
        """Add one rule ``name(head) :- demand, context, clauses`` (context only when
        needed; ``demand``, the magic atom of a rule with required arguments, always)."""
        head_vars = {t for t in head if isinstance(t, Variable)}
        demanded = {v for lit in demand for v in lit.variables}
        prefix = demand + (() if head_vars <= bound_by(clauses, demanded) else tuple(context))
        body = prefix + self.body(clauses, prefix)
        unbound = head_vars - _bound(body)
        if unbound:
            names = ", ".join(sorted(str(v) for v in unbound))
            raise QueryError(f"{source}: nothing around it binds {names}; bind it with a data "
                             "pattern or a rule call in the same clause or next to it",
                             code=ErrorCode.QUERY_UNSUPPORTED, form=source)
        if not head:
            head, body = (UNIT,), body + (FnBinding("ground", ZERO_ARITY, BindScalar(UNIT)),)
        self.relations.setdefault(name, []).append(DerivedRule(tuple(head), body, source))

    def body(self, clauses: Sequence[Clause],
             outer: tuple[Literal, ...] = ()) -> tuple[Literal, ...]:
        """Lower a conjunction; a nested ``or``/``not`` may borrow, as context, what
        ``outer`` and the conjunction's positive clauses (and the ``or``s before it) bind."""
        calls = [c for c in clauses if isinstance(c, RuleCall)]
        literals: list[Literal] = [literal for c in clauses if not isinstance(c, Not | Or)
                                   for literal in self._positive(c)]
        ors = sorted((c for c in clauses if isinstance(c, Or)),
                     key=lambda o: not _self_sufficient(o))
        for either in ors:
            literals.append(self._or(either, _placeable(outer + tuple(literals))))
        context = _placeable(outer + tuple(literals))
        for clause in clauses:
            if isinstance(clause, Not):
                literals.append(self._not(clause, context))
        for call in calls:
            if call.required:
                self._demand(call, outer, literals, calls)
        return tuple(literals)

    def _demand(self, call: RuleCall, outer: tuple[Literal, ...], literals: list[Literal],
                calls: list[RuleCall]) -> None:
        """Magic sets: add ``magic:name(required args) :- what binds them before the call``
        (the sideways-passed bindings), so the rule is kept for the demanded values only —
        which also evaluates a rule whose body needs its head bound."""
        inputs = {Atom(_rule_relation(c.name), c.args): set(c.inputs) for c in calls}
        own = Atom(_rule_relation(call.name), call.args)
        context = _sideways(outer, [lit for lit in literals if lit != own], inputs,
                            set(call.inputs))
        head: list[Term] = []
        grounds: list[Literal] = []
        for position in call.required:
            term = call.args[position]
            if isinstance(term, Constant):
                fresh = Variable(f"?#demand{next(self._fresh)}")
                grounds.append(FnBinding("ground", (term,), BindScalar(fresh)))
                term = fresh
            head.append(term)
        source = show(call.source)
        body = context + tuple(grounds)
        if not {t for t in head if isinstance(t, Variable)} <= _bound(body):
            raise AssertionError(f"{source}: its required arguments are unbound (the safety "
                                 "check should have refused the query)")
        self.relations.setdefault(_magic_relation(call.name), []).append(
            DerivedRule(tuple(head), body, f"the call {source}"))

    def _positive(self, clause: Clause) -> tuple[Literal, ...]:
        """A positive clause's literals: itself, or a nested binding form taken apart."""
        if isinstance(clause, RuleCall):
            self._rule(clause.name)
            return (Atom(_rule_relation(clause.name), clause.args),)
        if isinstance(clause, FnBinding):
            return flat_bindings(clause, self._fresh)
        assert isinstance(clause, Pattern | Predicate)
        return (clause,)

    def _rule(self, name: str) -> None:
        relation = _rule_relation(name)
        if relation in self.relations:
            return
        self.relations[relation] = []  # defined before its body, so recursion stops here
        for rule in self.rules:
            if rule.name == name:
                demand = (Atom(_magic_relation(name),
                                    tuple(rule.params[i] for i in rule.required)),) \
                    if rule.required else ()
                self.define(relation, rule.params, rule.body, (), show(rule.source), demand)

    def _or(self, clause: Or, context: tuple[Literal, ...]) -> Atom:
        name = f"or{next(self._fresh)}"
        join = clause.variables
        for branch in clause.branches:
            self.define(name, join, _rename_locals(branch, join, self._fresh), context,
                        show(clause.source))
        return Atom(name, tuple(join) or ZERO_ARITY)

    def _not(self, clause: Not, context: tuple[Literal, ...]) -> Negation:
        name = f"not{next(self._fresh)}"
        join = clause.variables
        self.define(name, join, _rename_locals(clause.clauses, join, self._fresh), context,
                    show(clause.source))
        return Negation(name, tuple(join) or ZERO_ARITY)


def _self_sufficient(clause: Or) -> bool:
    """Every branch binds the join variables by itself."""
    return all(set(clause.variables) <= bound_by(b, set()) for b in clause.branches)


def _bound(literals: Sequence[Literal]) -> set[Variable]:
    """The variables the literals bind (generators; functions once their inputs are)."""
    bound = {v for lit in literals if isinstance(lit, Pattern | Atom) for v in lit.variables}
    functions = [lit for lit in literals if isinstance(lit, FnBinding)]
    while True:
        more = {v for f in functions if set(f.inputs) <= bound for v in f.outputs} - bound
        if not more:
            return bound
        bound |= more


def _placeable(literals: tuple[Literal, ...]) -> tuple[Literal, ...]:
    """The literals usable as context: those whose variables the generators bind."""
    bound = _bound(literals)
    return tuple(lit for lit in literals
                 if set(lit.inputs if isinstance(lit, FnBinding) else lit.variables) <= bound)


def _rule_relation(name: str) -> str:
    return f"rule:{name}"


def _magic_relation(name: str) -> str:
    """The values a rule's required arguments are called with (magic sets)."""
    return f"magic:{name}"


def _sideways(outer: tuple[Literal, ...], literals: Sequence[Literal],
              inputs: dict[Atom, set[Variable]], wanted: set[Variable]) -> tuple[Literal, ...]:
    """The literals that bind ``wanted`` without the call: those evaluable before it
    (a greedy order in which a rule call waits for its required arguments, a function for
    its arguments, a predicate for its variables; negations are left out), kept only when
    connected to ``wanted`` through shared variables, so the magic rule joins no more than
    it needs."""
    bound = _bound(outer)
    placed = list(outer)
    pending = [lit for lit in literals if not isinstance(lit, Negation)]
    while not wanted <= bound:
        ready = [lit for lit in pending if _ready(lit, bound, inputs)]
        if not ready:
            break
        for lit in ready:
            pending.remove(lit)
            placed.append(lit)
            bound |= _bound((lit,))
    kept: list[Literal] = []
    connected = set(wanted)
    grew = True
    while grew:
        grew = False
        for literal in placed:
            if literal not in kept and connected & set(literal.variables):
                kept.append(literal)
                connected |= set(literal.variables)
                grew = True
    return tuple(kept)


def _ready(literal: Literal, bound: set[Variable], inputs: dict[Atom, set[Variable]]) -> bool:
    if isinstance(literal, FnBinding):
        return set(literal.inputs) <= bound
    if isinstance(literal, Predicate):
        return set(literal.variables) <= bound
    return inputs.get(literal, set()) <= bound if isinstance(literal, Atom) else True


def _rename_locals(clauses: Sequence[Clause], join: Sequence[Variable],
                   fresh: Iterator[int]) -> tuple[Clause, ...]:
    """Rename the variables of a sub-body that are not joined with its scope."""
    suffix = next(fresh)
    used = {v for c in clauses for v in _all_variables(c)}
    renames = {v: Variable(f"{v.name}#{suffix}") for v in used if v not in join}
    return tuple(renamed(c, renames) for c in clauses) if renames else tuple(clauses)


def _all_variables(clause: Clause) -> set[Variable]:
    if isinstance(clause, Not):
        return set(clause.join or ()) | {v for c in clause.clauses for v in _all_variables(c)}
    if isinstance(clause, Or):
        return set(clause.join or ()) | {v for b in clause.branches for c in b
                                         for v in _all_variables(c)}
    return set(clause.variables)


def _strata(relations: dict[str, list[DerivedRule]]) -> list[tuple[str, ...]]:
    """Strongly connected components in dependency order; refuse negative cycles."""
    edges = {name: [(lit.relation, isinstance(lit, Negation)) for rule in rules
                    for lit in rule.body if isinstance(lit, Atom | Negation)]
             for name, rules in relations.items()}
    components = _components({n: [d for d, _ in deps] for n, deps in edges.items()})
    for component in components:
        for name in component:
            for dependency, negated in edges[name]:
                if negated and dependency in component:
                    raise QueryError(f"the rules are not stratifiable: {_shown(name)} depends "
                                     f"on the negation of {_shown(dependency)}, which "
                                     f"depends on {_shown(name)}",
                                     code=ErrorCode.QUERY_UNSAFE, form=name)
    return components


def _shown(relation: str) -> str:
    return relation.removeprefix("rule:")


def _components(graph: dict[str, list[str]]) -> list[tuple[str, ...]]:
    """Tarjan's algorithm; components come out dependencies first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[tuple[str, ...]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            out.append(tuple(sorted(component)))

    for node in graph:
        if node not in index:
            visit(node)
    return out
