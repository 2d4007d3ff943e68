"""Semantic checks after parsing (safety, rules) and the binding of ``:in`` values.

Safety (range restriction) is what lets deltalog evaluate bottom-up: every variable a
predicate, a function's arguments, a negation or ``:find`` uses must be bound by a *positive*
clause — a data pattern, a rule call, a function's result, or an ``or`` all of whose branches
bind it.  A rule's head variables must be bound by its own body, or be *required*
(``(name [?p] ...)``): then every call must bind them, and the call binds its other
arguments only once they are (as a function binds its result once its arguments are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from workers.datalog.ast import (
    Aggregate,
    BindColl,
    Binding,
    BindRel,
    BindScalar,
    BindTuple,
    Blank,
    Clause,
    Constant,
    FnBinding,
    InColl,
    InRel,
    InRules,
    InScalar,
    InSource,
    InTuple,
    Not,
    Or,
    Pattern,
    Predicate,
    Pull,
    PullPattern,
    Query,
    Rule,
    RuleCall,
    Term,
    Variable,
    binding_terms,
    is_flat_binding,
    walk,
)
from workers.datalog.lookup_refs import (
    collection_of_refs,
    expand_lookup_refs,
    renamed_in_patterns,
)
from workers.datalog.parser import frozen, is_lookup_ref, parse_rules
from workers.datalog.pull import parse_pattern
from workers.datalog.sources import (
    bind_sources,
    database_source,
    database_variables,
    unbound_source,
)
from workers.db.tx import LookupRef
from workers.db.values import is_value, type_name
from workers.edn import intern, show
from workers.errors import ErrorCode, QueryError


def check_query(query: Query) -> Query:
    """Refuse an unsafe query (see the module doc); ``:in`` variables count as bound."""
    inputs = {v for b in query.inputs if not isinstance(b, InRules | InSource)
              for v in binding_terms(_as_binding(b)) if isinstance(v, Variable)}
    if not any(isinstance(b, InRules) for b in query.inputs):
        query = _with_rules(query)
    where = joined_nots(query.where, inputs)
    if where != query.where:
        query = replace(query, where=where)
    bound = check_clauses(query.where, inputs)
    # What bind_inputs substitutes by one value: scalars and the positions of a flat tuple.
    in_scalars = {b.var for b in query.inputs if isinstance(b, InScalar)}
    scalars = in_scalars | {v for b in query.inputs if isinstance(b, InTuple)
                            and is_flat_binding(_as_binding(b)) for v in b.vars
                            if isinstance(v, Variable)}
    for aggregate in query.aggregates:
        if isinstance(aggregate.n, Variable) and aggregate.n not in scalars:
            raise QueryError(f":find {aggregate.name}: {aggregate.n} must be an :in scalar "
                             "(the number of values to keep)", form=aggregate.source)
    # A pattern variable is replaced by the pattern it is given, never bound by a clause; it
    # may be returned (Datascript's [:find ?pattern (pull ?e ?pattern) ...]).
    elsewhere = {*query.variables, *(a.n for a in query.aggregates)}
    for pull in query.pulls:
        if isinstance(pull.pattern, Variable) and (pull.pattern not in in_scalars
                                                   or pull.pattern in elsewhere):
            raise QueryError(f"{show(pull.source)}: the pattern {pull.pattern} must be an :in "
                             "scalar used by pull only (the pattern is given with the query's "
                             "inputs)", code=ErrorCode.QUERY_INPUTS, form=pull.source)
    for variable in query.find_variables + query.with_:
        if variable not in bound:
            raise QueryError(f"unsafe query: :find {variable} does not occur in any :where "
                             "pattern", code=ErrorCode.QUERY_UNSAFE, form=str(variable))
    return query


def _with_rules(query: Query) -> Query:
    """The query with its rules checked and its rule calls knowing their required
    positions (the same query when there is nothing to add)."""
    rules, where = check_rules(query.rules, query.where)
    if (rules, where) == (query.rules, query.where):
        return query
    return replace(query, rules=rules, where=where)


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
    if isinstance(clause, Pattern):
        return set(clause.variables)
    if isinstance(clause, RuleCall):  # once its required arguments are bound
        return set(clause.variables) if set(clause.inputs) <= bound else set()
    if isinstance(clause, FnBinding):
        return set(clause.outputs) if set(clause.inputs) <= bound else set()
    if isinstance(clause, Or) and set(clause.required) <= bound:
        return set.intersection(*(bound_by(b, bound) for b in clause.branches)) & \
            set(clause.variables)
    return set()


def check_clauses(clauses: Sequence[Clause], outer: set[Variable]) -> set[Variable]:
    """Check every clause of a conjunction; return the variables it binds."""
    bound = bound_by(clauses, outer)
    for clause in clauses:
        if isinstance(clause, Or) and (clause.join is None or clause.required):
            around = bound_by([c for c in clauses if c is not clause], outer)
            if clause.join is None:
                _check_free_variables(clause, around)
            _check_bound(clause, clause.required, around)
        _check_clause(clause, bound)
    return bound


def _check_free_variables(clause: Or, outside: set[Variable]) -> None:
    """Datascript's rule for ``or`` ("same set of free vars"): every branch uses the same
    *free* variables — those not bound outside the ``or`` (by ``:in`` or, in any order, by the
    clauses around it); a bound one may appear in some branches only."""
    free = [{v for c in branch for v in c.variables} - outside for branch in clause.branches]
    if any(f != free[0] for f in free):
        shown = " ".join("#{" + " ".join(sorted(map(str, f))) + "}" for f in free)
        raise QueryError(f"All clauses in 'or' must use same set of free vars, had [{shown}] "
                         f"in {show(clause.source)}: every branch must use the same free "
                         "variables (those not bound outside it); use or-join to name the "
                         "shared ones", code=ErrorCode.QUERY_UNSAFE, form=clause.source)


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
    elif isinstance(clause, RuleCall):
        _check_required(clause, bound)
    _check_bound(clause, needed, bound)


def _check_bound(clause: Clause, needed: Sequence[Variable], bound: set[Variable]) -> None:
    missing = [str(v) for v in needed if v not in bound]
    if missing:
        raise QueryError(f"Insufficient bindings: #{{{' '.join(missing)}}} not bound in "
                         f"{show(clause.source)} (unsafe query: no data pattern, rule call or "
                         "function binds it)",
                         code=ErrorCode.QUERY_UNSAFE, form=clause.source)


def joined_nots(clauses: tuple[Clause, ...], outer: set[Variable]) -> tuple[Clause, ...]:
    """Datascript's ``not``: it joins the enclosing clauses on those of its variables they
    bind, and the others are its own (``(not [?e :friend ?f] [?f :tag "x"])``: no ``?f``
    at all) — a ``not-join`` on the bound ones; a ``not`` none of whose variables is bound
    is refused, as Datascript refuses it (``outer``: the variables bound around
    ``clauses``)."""
    bound = bound_by(clauses, outer)
    out: list[Clause] = []
    for clause in clauses:
        if isinstance(clause, Not):
            join = clause.join
            if join is None:
                join = tuple(v for v in clause.variables if v in bound)
                if not join and clause.variables:
                    names = " ".join(sorted(map(str, clause.variables)))
                    raise QueryError(f"Insufficient bindings: none of #{{{names}}} is bound in "
                                     f"{show(clause.source)} (unsafe query: no clause around "
                                     "the not binds any of its variables)",
                                     code=ErrorCode.QUERY_UNSAFE, form=clause.source)
            inner = joined_nots(clause.clauses, set(join))
            clause = replace(clause, clauses=inner,
                             join=clause.join if join == clause.variables else join)
        elif isinstance(clause, Or):
            around = bound & set(clause.variables)
            clause = replace(clause, branches=tuple(joined_nots(b, around)
                                                    for b in clause.branches))
        out.append(clause)
    return tuple(out)


def _check_or(clause: Or, bound: set[Variable]) -> tuple[Variable, ...]:
    """The join variables a branch does not bind itself must be bound around the ``or``."""
    join = set(clause.variables)
    needed: set[Variable] = set()
    for branch in clause.branches:
        binds = check_clauses(branch, bound & join)
        needed |= join - binds
    return tuple(v for v in clause.variables if v in needed)


def _check_required(call: RuleCall, bound: set[Variable]) -> None:
    """Datomic's required-binding error: a call leaves a ``[?p]`` head variable unbound."""
    missing = [str(v) for v in call.inputs if v not in bound]
    missing += ["_" for i in call.required if isinstance(call.args[i], Blank)]
    if missing:
        raise QueryError(f"{show(call.source)}: rule {call.name} requires {', '.join(missing)} "
                         "to be bound by the caller (its head marks the argument [?var], or "
                         "its body cannot bind it); bind it with a data pattern, a function or "
                         "an :in input in the same clauses", code=ErrorCode.QUERY_UNSAFE,
                         form=call.source)


def check_rules(rules: Sequence[Rule], where: Sequence[Clause]
                ) -> tuple[tuple[Rule, ...], tuple[Clause, ...]]:
    """Rule calls name defined rules with the right arity; every head variable is bound by
    the rule's body or required of the caller (``[?p]``).  Returns the rules and ``where``
    with each call knowing the positions its rule requires bound."""
    arity: dict[str, tuple[int, tuple[int, ...]]] = {}
    for rule in rules:
        shape = (len(rule.params), rule.required)
        if arity.setdefault(rule.name, shape) != shape:
            raise QueryError(f"rule {rule.name} is defined with {arity[rule.name][0]} and "
                             f"{len(rule.params)} parameters, or with different required "
                             "ones", form=rule.source)
    bodies = [*where, *(c for rule in rules for c in rule.body)]
    for clause in walk(tuple(bodies)):
        if isinstance(clause, RuleCall):
            if clause.name not in arity:
                defined = ", ".join(sorted(arity)) or "none"
                raise QueryError(f"Unknown rule '{clause.name} in {show(clause.source)} "
                                 f"(rules defined: {defined})", form=clause.source)
            if len(clause.args) != arity[clause.name][0]:
                raise QueryError(f"{show(clause.source)}: rule {clause.name} takes "
                                 f"{arity[clause.name][0]} argument(s), got {len(clause.args)}",
                                 form=clause.source)
    required = _required_positions(rules, {name: shape[1] for name, shape in arity.items()})
    rules = tuple(replace(r, body=_resolved(r.body, required), required=required[r.name])
                  for r in rules)
    rules = tuple(replace(r, body=joined_nots(r.body, set(r.params))) for r in rules)
    for rule in rules:
        check_clauses(rule.body, {rule.params[i] for i in rule.required})
    return rules, _resolved(tuple(where), required)


def _required_positions(rules: Sequence[Rule], written: dict[str, tuple[int, ...]]
                        ) -> dict[str, tuple[int, ...]]:
    """The argument positions of each rule a call must bind: those written ``[?p]``, and
    those its body cannot bind by itself (``[(big ?x) [(> ?x 10)]]`` needs ``?x``, as
    Datomic evaluates it only when called with ``?x`` bound) — grown to a fixpoint, since a
    body's own calls bind less when their rules require more."""
    required = {name: set(positions) for name, positions in written.items()}
    while True:
        current = {name: tuple(sorted(p)) for name, p in required.items()}
        grew = False
        for rule in rules:
            body = _resolved(rule.body, current)
            needed = _needed(rule.params, body, required[rule.name])
            if not needed <= required[rule.name]:
                required[rule.name] |= needed
                grew = True
        if not grew:
            return current


def _needed(params: tuple[Variable, ...], body: tuple[Clause, ...], given: set[int]
            ) -> set[int]:
    """A small set of head positions which, bound with ``given``, let the body bind every
    head variable: each one it cannot bind, then without those the others make redundant."""
    def binds_all(positions: set[int]) -> bool:
        return set(params) <= bound_by(body, {params[i] for i in positions})

    extra: set[int] = set()
    for i, param in enumerate(params):
        if i not in given and param not in bound_by(body, {params[j] for j in given | extra}):
            extra.add(i)
    for i in sorted(extra):
        if binds_all(given | extra - {i}):
            extra.discard(i)
    return given | extra


def _resolved(clauses: tuple[Clause, ...], required: dict[str, tuple[int, ...]]
              ) -> tuple[Clause, ...]:
    """``clauses`` with every rule call (nested ones too) given its required positions."""
    out: list[Clause] = []
    for clause in clauses:
        if isinstance(clause, RuleCall):
            clause = replace(clause, required=required[clause.name])
        elif isinstance(clause, Not):
            clause = replace(clause, clauses=_resolved(clause.clauses, required))
        elif isinstance(clause, Or):
            clause = replace(clause, branches=tuple(_resolved(b, required)
                                                    for b in clause.branches))
        out.append(clause)
    return tuple(out)


def bind_inputs(query: Query, inputs: Sequence[Any]) -> Query:
    """Bind the ``:in`` values: scalars and tuples become constants, collections and
    relations ``ground`` clauses, ``%`` the rule set.  The result has no inputs left."""
    database = database_source(query.inputs, inputs)
    bindings = query.inputs[1:] if database is not None else query.inputs
    if len(inputs) != len(bindings):
        names = " ".join(_input_name(b) for b in query.inputs) or "none"
        raise QueryError(f"query takes {len(query.inputs)} input(s) ({names}) after $, "
                         f"got {len(inputs)}", code=ErrorCode.QUERY_INPUTS, form=tuple(inputs))
    values: dict[Variable, Any] = {}
    patterns: dict[Variable, PullPattern | Variable] = {
        p.pattern: p.pattern for p in query.pulls if isinstance(p.pattern, Variable)}
    grounds: list[Clause] = []
    entities: dict[Variable, Variable] = {}  # lookup refs' variables -> their entities'
    rules = query.rules
    # The variables whose values are looked up as datoms: by a pattern, or pulled.
    matched = {v for c in walk(query.where) if isinstance(c, Pattern) for v in c.variables}
    matched |= {p.var for p in query.pulls}
    matched |= database_variables(query.where, database)
    sources: dict[str, Any] = {}
    for binding, value in zip(bindings, inputs, strict=True):
        value = intern(value)
        if isinstance(binding, InSource):
            sources[binding.name] = value
        elif isinstance(binding, InRules):
            rules = rules + parse_rules(value)
        elif isinstance(binding, InScalar) and binding.var in patterns:
            patterns[binding.var] = parse_pattern(value, f"input {binding.var}")
            if binding.var in query.basis:  # returned too: the pattern as a value
                values[binding.var] = _scalar(binding.var, value)
        elif isinstance(binding, InScalar) and binding.var in matched and is_lookup_ref(value):
            clauses, entities[binding.var] = collection_of_refs(  # a collection of one
                binding.var, (LookupRef(value[0], value[1]),), len(entities) + 1)
            grounds += clauses
        elif isinstance(binding, InScalar):
            values[binding.var] = _scalar(binding.var, value, binding.var in matched)
        elif isinstance(binding, InTuple) and is_flat_binding(_as_binding(binding)):
            items = _sequence(_as_binding(binding), value, len(binding.vars))
            for target, item in zip(binding.vars, items, strict=True):
                if isinstance(target, Variable):
                    values[target] = _scalar(target, item, target in matched)
        elif isinstance(binding, InColl) and isinstance(binding.var, Variable) and (
                binding.var in matched and _all_refs(value)):
            clauses, entities[binding.var] = collection_of_refs(
                binding.var, tuple(LookupRef(x[0], x[1]) for x in value), len(entities) + 1)
            grounds += clauses
        else:
            grounds.append(_ground(binding, value, matched))
    # An input returned by :find is a one-row relation too; the clauses see its constant.
    grounds += [FnBinding("ground", (Constant(_as_written(values[v])),), BindScalar(v),
                          source=f"input {v}") for v in query.basis if v in values]

    def substitute(term: Term) -> Term:
        return Constant(values[term]) if isinstance(term, Variable) and term in values else term

    sourced = bind_sources(query.where, sources, database, substitute,
                           lambda v, x: _scalar(v, x, v in matched))
    where = expand_lookup_refs(tuple(grounds) + renamed_in_patterns(
        tuple(_substitute(c, substitute) for c in sourced), entities))
    find = tuple(_bind_n(e, substitute) if isinstance(e, Aggregate)
                 else replace(e, pattern=patterns[e.pattern])
                 if isinstance(e, Pull) and isinstance(e.pattern, Variable) else e
                 for e in query.find)
    find = tuple(replace(e, var=entities[e.var]) if isinstance(e, Pull) and e.var in entities
                 else e for e in find)
    bound = replace(query, find=find, where=where, inputs=(), rules=rules)
    for rule in rules:
        if (sourced_rule := unbound_source(rule.body)) is not None:
            raise QueryError(f"rule {rule.name}: {show(sourced_rule.source)} names a source: a "
                             "rule reads the database $ only", code=ErrorCode.QUERY_UNSUPPORTED,
                             form=sourced_rule.source)
    if any(isinstance(b, InRules) for b in query.inputs):  # check_query could not see them
        bound = _with_rules(bound)
        check_clauses(bound.where, set())  # the calls now know what they require
    return bound


def _no_refs(binding: InTuple | InColl | InRel, values: Sequence[Any]) -> None:
    """Lookup refs are joined in from a scalar input or a collection of them only."""
    if any(type(x) is LookupRef for x in values):
        raise QueryError(f"input {_input_name(binding)}: lookup refs are supported as a scalar "
                         "input or a collection of lookup refs only, not mixed with entity ids "
                         "or inside tuples; bind the entity with a data pattern instead",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=binding)


def _all_refs(value: Any) -> bool:
    """A collection whose every item is a lookup ref (not a map: its items are entries)."""
    return (isinstance(value, list | tuple | frozenset | set) and bool(value)
            and all(is_lookup_ref(x) for x in value))


def _as_written(value: Any) -> Any:
    """An input as :find returns it: a lookup ref as the vector it was."""
    return (value.attribute, value.value) if type(value) is LookupRef else value


def _bind_n(aggregate: Aggregate, substitute: Any) -> Aggregate:
    """``(min ?n ?x)`` with ``?n`` bound: the input must be a non-negative long."""
    if not isinstance(aggregate.n, Variable):
        return aggregate
    n = substitute(aggregate.n)
    if not isinstance(n.value, int) or isinstance(n.value, bool) or n.value < 0:
        raise QueryError(f"input {aggregate.n} of {aggregate.name} must be a non-negative "
                         f"long, got {show(n.value)}", code=ErrorCode.QUERY_INPUTS, form=n.value)
    return replace(aggregate, n=n)


def _input_name(binding: Any) -> str:
    if isinstance(binding, InRules):
        return "%"
    if isinstance(binding, InSource):
        return binding.name
    if isinstance(binding, InScalar):
        return str(binding.var)
    return _show_binding(_as_binding(binding))


def _show_binding(form: Any) -> str:
    """A binding form as written: ``[[?k ?v] ...]``."""
    if isinstance(form, Variable):
        return str(form)
    if isinstance(form, Blank):
        return "_"
    if isinstance(form, BindScalar):
        return _show_binding(form.var)
    if isinstance(form, BindColl):
        return f"[{_show_binding(form.var)} ...]"
    inner = " ".join(_show_binding(t) for t in form.vars)
    return f"[[{inner}]]" if isinstance(form, BindRel) else f"[{inner}]"


def _as_binding(binding: InScalar | InTuple | InColl | InRel) -> Binding:
    """An ``:in`` binding as the binding form it is written as."""
    if isinstance(binding, InScalar):
        return BindScalar(binding.var)
    if isinstance(binding, InColl):
        return BindColl(binding.var)
    return BindTuple(binding.vars) if isinstance(binding, InTuple) else BindRel(binding.vars)


def _scalar(variable: Variable, value: Any, matched: bool = False) -> Any:
    """One value bound to ``variable``: a map or a collection too (Datascript's
    ``[(get ?m ?k) ?v]`` over a map input), made hashable as query constants are — but only
    a datom's kind of value where a data pattern ``matched`` it (no lookup refs)."""
    if is_value(value) or (not matched and isinstance(value, list | tuple | Mapping
                                                      | frozenset)):
        return frozen(value)
    if matched and is_lookup_ref(value):  # joined in by workers.datalog.lookup_refs
        return LookupRef(value[0], value[1])
    why = ": a data pattern matches it, and tuple values are not supported" if matched else ""
    raise QueryError(f"input {variable} must be a scalar value, got {type_name(value)}{why}",
                     code=ErrorCode.QUERY_INPUTS, form=value)


def _sequence(form: Binding, value: Any, width: int | None = None) -> list[Any]:
    """The items of a collection input bound to ``form`` (a map's are its ``[key value]``
    entries); errors worded as Datascript's."""
    if isinstance(value, Mapping):
        value = [(k, v) for k, v in value.items()]
    kind = "tuple" if isinstance(form, BindTuple) else "collection"
    if not isinstance(value, list | tuple | frozenset | set):
        raise QueryError(f"Cannot bind value {show(value)} to {kind} {_show_binding(form)}",
                         code=ErrorCode.QUERY_INPUTS, form=value)
    items = list(value)
    if width is not None and len(items) != width:
        which = "Not enough" if len(items) < width else "Too many"
        raise QueryError(f"{which} elements in a collection {show(value)} to bind tuple "
                         f"{_show_binding(form)}", code=ErrorCode.QUERY_INPUTS, form=value)
    return items


def _destructure(form: Any, value: Any, matched: set[Variable]) -> list[tuple[Any, ...]]:
    """Every way ``form`` binds ``value``: one tuple of values per binding, a value per
    variable or ``_`` of the form, in order (Datascript's nested in-bindings); ``matched``:
    the variables a data pattern matches."""
    if isinstance(form, Variable | Blank | BindScalar):
        target = form.var if isinstance(form, BindScalar) else form
        if isinstance(target, Variable):
            return [(_scalar(target, value, target in matched),)]
        return [(value,)]
    if isinstance(form, BindColl):
        return [row for item in _sequence(form, value) for row in
                _destructure(form.var, item, matched)]
    if isinstance(form, BindRel):
        return _destructure(BindColl(BindTuple(form.vars)), value, matched)
    rows: list[tuple[Any, ...]] = [()]
    for target, item in zip(form.vars, _sequence(form, value, len(form.vars)), strict=True):
        rows = [row + more for row in rows for more in _destructure(target, item, matched)]
    return rows


def _ground(binding: InTuple | InColl | InRel, value: Any, matched: set[Variable]
            ) -> FnBinding:
    """A collection input is the constant relation ``[(ground value) binding]``: a flat
    collection as it is, any other form as the relation of its variables' values."""
    form = _as_binding(binding)
    if isinstance(binding, InColl) and isinstance(binding.var, Variable):
        var = binding.var
        items = tuple(_scalar(var, x, var in matched) for x in _sequence(_as_binding(binding),
                                                                            value))
        _no_refs(binding, items)
        return FnBinding("ground", (Constant(items),), BindColl(binding.var),
                         source=f"input {_input_name(binding)}")
    terms = binding_terms(form)
    kept = [i for i, t in enumerate(terms) if isinstance(t, Variable)]
    rows = tuple(tuple(row[i] for i in kept) for row in _destructure(form, value, matched))
    _no_refs(binding, [x for row in rows for x in row])
    return FnBinding("ground", (Constant(rows),), BindRel(tuple(terms[i] for i in kept)),
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
                   required=_kept(clause.required, substitute) or (),
                   branches=tuple(tuple(_substitute(c, substitute) for c in b)
                                  for b in clause.branches))


def _kept(join: tuple[Variable, ...] | None, substitute: Any) -> tuple[Variable, ...] | None:
    """A join list without the variables that became constants."""
    if join is None:
        return None
    return tuple(v for v in join if not isinstance(substitute(v), Constant))
