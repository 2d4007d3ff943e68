"""Semantic checks after parsing (safety, rules) and the binding of ``:in`` values.

Safety (range restriction) is what lets deltalog evaluate bottom-up: every variable a
predicate, a function's arguments, a negation or ``:find`` uses must be bound by a *positive*
clause — a data pattern, a rule call, a function's result, or an ``or`` all of whose branches
bind it.  A rule's head variables must be bound by its own body (rules are kept as derived
relations, not evaluated per call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from workers.datalog.ast import (
    BindColl,
    BindRel,
    Clause,
    Constant,
    FnBinding,
    InColl,
    InRel,
    InRules,
    InScalar,
    InTuple,
    Not,
    Or,
    Pattern,
    Predicate,
    Pull,
    Query,
    Rule,
    RuleCall,
    Term,
    Variable,
    walk,
)
from workers.datalog.parser import parse_rules
from workers.datalog.pull import PullPattern, parse_pattern
from workers.db.values import is_value, type_name
from workers.edn import intern, show
from workers.errors import ErrorCode, QueryError


def check_query(query: Query) -> Query:
    """Refuse an unsafe query (see the module doc); ``:in`` variables count as bound."""
    scalars = {b.var for b in query.inputs if isinstance(b, InScalar)}
    scalars |= {v for b in query.inputs if isinstance(b, InTuple) for v in b.vars
                if isinstance(v, Variable)}
    collections = {b.var for b in query.inputs if isinstance(b, InColl)}
    collections |= {v for b in query.inputs if isinstance(b, InRel) for v in b.vars
                    if isinstance(v, Variable)}
    bound = check_clauses(query.where, scalars | collections)
    for pull in query.pulls:
        if isinstance(pull.pattern, Variable) and (pull.pattern not in scalars
                                                   or pull.pattern in query.variables):
            raise QueryError(f"{show(pull.source)}: the pattern {pull.pattern} must be an :in "
                             "scalar used by pull only (the pattern is given with the query's "
                             "inputs)", code=ErrorCode.QUERY_INPUTS, form=pull.source)
    for variable in query.find_variables + query.with_:
        if variable in scalars:
            raise QueryError(f":find {variable} is an :in variable; returning inputs is not "
                             "supported", code=ErrorCode.QUERY_UNSUPPORTED, form=str(variable))
        if variable not in bound:
            raise QueryError(f"unsafe query: :find {variable} does not occur in any :where "
                             "pattern", code=ErrorCode.QUERY_UNSAFE, form=str(variable))
    if not any(isinstance(b, InRules) for b in query.inputs):
        check_rules(query.rules, query.where)
    return query


def bound_by(clauses: Sequence[Clause], outer: set[Variable]) -> set[Variable]:
    """The variables a conjunction binds, given those bound around it."""
    bound = set(outer)
    while True:
        before = len(bound)
        for clause in clauses:
            bound |= _binds(clause, bound)
        if len(bound) == before:
            return bound


def _binds(clause: Clause, bound: set[Variable]) -> set[Variable]:
    if isinstance(clause, Pattern | RuleCall):
        return set(clause.variables)
    if isinstance(clause, FnBinding):
        return set(clause.outputs) if set(clause.inputs) <= bound else set()
    if isinstance(clause, Or):
        return set.intersection(*(bound_by(b, bound) for b in clause.branches)) & \
            set(clause.variables)
    return set()


def check_clauses(clauses: Sequence[Clause], outer: set[Variable]) -> set[Variable]:
    """Check every clause of a conjunction; return the variables it binds."""
    bound = bound_by(clauses, outer)
    for clause in clauses:
        _check_clause(clause, bound)
    return bound


def _check_clause(clause: Clause, bound: set[Variable]) -> None:
    needed: tuple[Variable, ...] = ()
    if isinstance(clause, Predicate):
        needed = clause.variables
    elif isinstance(clause, FnBinding):
        needed = clause.inputs
    elif isinstance(clause, Not):
        needed = clause.variables
        check_clauses(clause.clauses, set(needed))
    elif isinstance(clause, Or):
        needed = _check_or(clause, bound)
    missing = [str(v) for v in needed if v not in bound]
    if missing:
        raise QueryError(f"unsafe query: {show(clause.source)} uses {', '.join(missing)}, "
                         "which no data pattern, rule call or function binds",
                         code=ErrorCode.QUERY_UNSAFE, form=clause.source)


def _check_or(clause: Or, bound: set[Variable]) -> tuple[Variable, ...]:
    """The join variables a branch does not bind itself must be bound around the ``or``."""
    join = set(clause.variables)
    needed: set[Variable] = set()
    for branch in clause.branches:
        uses = {v for c in branch for v in c.variables}
        if clause.join is None and uses != join:
            raise QueryError(f"{show(clause.source)}: every branch of (or ...) must use the "
                             "same variables (use or-join to name the shared ones)",
                             code=ErrorCode.QUERY_UNSAFE, form=clause.source)
        binds = check_clauses(branch, bound & join)
        needed |= join - binds
    return tuple(v for v in clause.variables if v in needed)


def check_rules(rules: Sequence[Rule], where: Sequence[Clause]) -> None:
    """Rule calls name defined rules with the right arity; heads are bound by bodies."""
    arity: dict[str, int] = {}
    for rule in rules:
        if arity.setdefault(rule.name, len(rule.params)) != len(rule.params):
            raise QueryError(f"rule {rule.name} is defined with {arity[rule.name]} and "
                             f"{len(rule.params)} parameters", form=rule.source)
        bound = check_clauses(rule.body, set())
        unbound = [str(p) for p in rule.params if p not in bound]
        if unbound:
            raise QueryError(f"unsafe rule {show(rule.source)}: {', '.join(unbound)} is not "
                             "bound by the rule's body (deltalog keeps rules as derived "
                             "relations, so each head variable must be bound by a data "
                             "pattern, rule call or function in the body)",
                             code=ErrorCode.QUERY_UNSAFE, form=rule.source)
    bodies = [*where, *(c for rule in rules for c in rule.body)]
    for clause in walk(tuple(bodies)):
        if isinstance(clause, RuleCall):
            if clause.name not in arity:
                defined = ", ".join(sorted(arity)) or "none"
                raise QueryError(f"{show(clause.source)}: no rule named {clause.name} "
                                 f"(rules defined: {defined})", form=clause.source)
            if len(clause.args) != arity[clause.name]:
                raise QueryError(f"{show(clause.source)}: rule {clause.name} takes "
                                 f"{arity[clause.name]} argument(s), got {len(clause.args)}",
                                 form=clause.source)


def bind_inputs(query: Query, inputs: Sequence[Any]) -> Query:
    """Bind the ``:in`` values: scalars and tuples become constants, collections and
    relations ``ground`` clauses, ``%`` the rule set.  The result has no inputs left."""
    if len(inputs) != len(query.inputs):
        names = " ".join(_input_name(b) for b in query.inputs) or "none"
        raise QueryError(f"query takes {len(query.inputs)} input(s) ({names}) after $, "
                         f"got {len(inputs)}", code=ErrorCode.QUERY_INPUTS, form=tuple(inputs))
    values: dict[Variable, Any] = {}
    patterns: dict[Variable, PullPattern | Variable] = {
        p.pattern: p.pattern for p in query.pulls if isinstance(p.pattern, Variable)}
    grounds: list[Clause] = []
    rules = query.rules
    for binding, value in zip(query.inputs, inputs, strict=True):
        value = intern(value)
        if isinstance(binding, InRules):
            rules = rules + parse_rules(value)
        elif isinstance(binding, InScalar) and binding.var in patterns:
            patterns[binding.var] = parse_pattern(value, f"input {binding.var}")
        elif isinstance(binding, InScalar):
            values[binding.var] = _scalar(binding.var, value)
        elif isinstance(binding, InTuple):
            for target, item in zip(binding.vars, _sequence(binding, value, len(binding.vars)),
                                    strict=True):
                if isinstance(target, Variable):
                    values[target] = _scalar(target, item)
        else:
            grounds.append(_ground(binding, value))

    def substitute(term: Term) -> Term:
        return Constant(values[term]) if isinstance(term, Variable) and term in values else term

    where = tuple(grounds) + tuple(_substitute(c, substitute) for c in query.where)
    find = tuple(replace(e, pattern=patterns[e.pattern])
                 if isinstance(e, Pull) and isinstance(e.pattern, Variable) else e
                 for e in query.find)
    bound = replace(query, find=find, where=where, inputs=(), rules=rules)
    if any(isinstance(b, InRules) for b in query.inputs):  # check_query could not see them
        check_rules(bound.rules, bound.where)
    return bound


def _input_name(binding: Any) -> str:
    if isinstance(binding, InRules):
        return "%"
    if isinstance(binding, InScalar | InColl):
        return str(binding.var) + (" ..." if isinstance(binding, InColl) else "")
    return "[" + " ".join(str(v) if isinstance(v, Variable) else "_" for v in binding.vars) + "]"


def _scalar(variable: Variable, value: Any) -> Any:
    if not is_value(value):
        raise QueryError(f"input {variable} must be a scalar value, got {type_name(value)}",
                         code=ErrorCode.QUERY_INPUTS, form=value)
    return value


def _sequence(binding: Any, value: Any, width: int | None = None) -> list[Any]:
    if not isinstance(value, list | tuple | frozenset | set):
        raise QueryError(f"input {_input_name(binding)} must be a collection, got "
                         f"{type_name(value)}", code=ErrorCode.QUERY_INPUTS, form=value)
    items = list(value)
    if width is not None and len(items) != width:
        raise QueryError(f"input {_input_name(binding)} takes {width} values, got "
                         f"{len(items)}", code=ErrorCode.QUERY_INPUTS, form=value)
    return items


def _ground(binding: InColl | InRel, value: Any) -> FnBinding:
    """A collection input is the constant relation ``[(ground value) binding]``."""
    if isinstance(binding, InColl):
        items = tuple(_scalar(binding.var, x) for x in _sequence(binding, value))
        return FnBinding("ground", (Constant(items),), BindColl(binding.var),
                         source=f"input {_input_name(binding)}")
    rows: list[tuple[Any, ...]] = []
    for row in _sequence(binding, value):
        values = _sequence(binding, row, len(binding.vars))
        rows.append(tuple(_scalar(v, x) if isinstance(v, Variable) else x
                          for v, x in zip(binding.vars, values, strict=True)))
    return FnBinding("ground", (Constant(tuple(rows)),), BindRel(binding.vars),
                     source=f"input {_input_name(binding)}")


def _substitute(clause: Clause, substitute: Any) -> Clause:
    if isinstance(clause, Pattern):
        return Pattern(substitute(clause.e), substitute(clause.a), substitute(clause.v),
                       source=clause.source)
    if isinstance(clause, Predicate | RuleCall):
        return replace(clause, args=tuple(substitute(a) for a in clause.args))
    if isinstance(clause, FnBinding):
        if any(isinstance(substitute(v), Constant) for v in clause.outputs):
            raise QueryError(f"{show(clause.source)} binds an :in variable; compare with "
                             "[(= ...)] instead", code=ErrorCode.QUERY_UNSUPPORTED,
                             form=clause.source)
        return replace(clause, args=tuple(substitute(a) for a in clause.args))
    if isinstance(clause, Not):
        return replace(clause, clauses=tuple(_substitute(c, substitute) for c in clause.clauses),
                       join=_kept(clause.join, substitute))
    assert isinstance(clause, Or)
    return replace(clause, join=_kept(clause.join, substitute),
                   branches=tuple(tuple(_substitute(c, substitute) for c in b)
                                  for b in clause.branches))


def _kept(join: tuple[Variable, ...] | None, substitute: Any) -> tuple[Variable, ...] | None:
    """A join list without the variables that became constants."""
    if join is None:
        return None
    return tuple(v for v in join if not isinstance(substitute(v), Constant))
