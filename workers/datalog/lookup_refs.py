"""Lookup refs in data patterns, as joins: a query stays exact as the unique value moves.

``[:p/email "a@x"]`` names the entity holding that value of a unique attribute — in a data
pattern (literal, or a scalar ``:in`` value substituted there).  Resolving it once, when the
query is registered, would leave a live view wrong after the value moves to another entity
or its entity is retracted; so each one becomes a fresh variable bound by one more pattern:

```
[[:p/email "a@x"] :p/name ?n]   ==>   [?#ref1 :p/email "a@x"] [?#ref1 :p/name ?n]
```

The extra pattern sits beside the one it serves (inside the same ``not`` or ``or`` branch,
whose join variables stay the ones written). An entity no datom names matches nothing: a
lookup ref naming no entity gives no rows (Datascript throws for a one-shot query).

A collection input of lookup refs ``[?e ...]`` binds ``?e`` to the refs as written (what
``:find ?e`` returns, as Datascript does) beside a fresh entity variable that the data
patterns and pulls read instead:

```
:in [?e ...] ← [[:p/email "a"] ...]   ==>   [(ground [[[:p/email "a"] :p/email "a"] ...])
                                               [[?e ?#attr1 ?#value1]]]
                                              [?#ref1 ?#attr1 ?#value1]   (?e → ?#ref1 in patterns)
```
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import count

from workers.datalog.ast import (
    BindRel,
    Clause,
    Constant,
    FnBinding,
    Not,
    Or,
    Pattern,
    Term,
    Variable,
)
from workers.db.tx import LookupRef


def expand_lookup_refs(clauses: tuple[Clause, ...]) -> tuple[Clause, ...]:
    """The clauses with each lookup-ref constant of a data pattern joined in (the module's
    rewrite); clauses without one are returned as they are."""
    return _expand(clauses, count(1))


def collection_of_refs(variable: Variable, refs: tuple[LookupRef, ...], number: int
                       ) -> tuple[tuple[Clause, Clause], Variable]:
    """A collection input of lookup refs bound to ``variable`` (the module's last rewrite):
    its ground and join clauses, and the entity variable patterns read instead."""
    entity = Variable(f"?#ref-in{number}")
    attribute, value = Variable(f"?#attr-in{number}"), Variable(f"?#value-in{number}")
    rows = tuple(((r.attribute, r.value), r.attribute, r.value) for r in refs)
    ground = FnBinding("ground", (Constant(rows),), BindRel((variable, attribute, value)),
                       source=f"input {variable}")
    return (ground, Pattern(entity, attribute, value, source=f"input {variable}")), entity


def renamed_in_patterns(clauses: tuple[Clause, ...], names: dict[Variable, Variable]
                        ) -> tuple[Clause, ...]:
    """The clauses with the variables of ``names`` renamed in their data patterns (and in
    the join lists of the ``not`` and ``or`` clauses holding them)."""
    def rename(term: Term) -> Term:
        return names.get(term, term) if isinstance(term, Variable) else term

    def joined(join: tuple[Variable, ...] | None) -> tuple[Variable, ...] | None:
        return None if join is None else tuple(names.get(v, v) for v in join)

    renamed: list[Clause] = []
    for clause in clauses:
        if isinstance(clause, Pattern):
            clause = Pattern(rename(clause.e), rename(clause.a), rename(clause.v),
                             source=clause.source)
        elif isinstance(clause, Not):
            clause = replace(clause, clauses=renamed_in_patterns(clause.clauses, names),
                             join=joined(clause.join))
        elif isinstance(clause, Or):
            clause = replace(clause, branches=tuple(renamed_in_patterns(b, names)
                                                    for b in clause.branches),
                             join=joined(clause.join), required=joined(clause.required) or ())
        renamed.append(clause)
    return tuple(renamed)


def _expand(clauses: tuple[Clause, ...], fresh: Iterator[int]) -> tuple[Clause, ...]:
    expanded: list[Clause] = []
    for clause in clauses:
        if isinstance(clause, Pattern) and any(_is_ref(t) for t in clause.terms):
            joins: list[Clause] = []
            e, a, v = (_joined(t, fresh, joins, clause.source) for t in clause.terms)
            pattern = Pattern(e, a, v, source=clause.source)
            expanded += [pattern, *joins]
        elif isinstance(clause, Not):
            inner = _expand(clause.clauses, fresh)
            join = clause.join if inner == clause.clauses else clause.variables
            expanded.append(replace(clause, clauses=inner, join=join))
        elif isinstance(clause, Or):
            branches = tuple(_expand(branch, fresh) for branch in clause.branches)
            join = clause.join if branches == clause.branches else clause.variables
            expanded.append(replace(clause, branches=branches, join=join))
        else:
            expanded.append(clause)
    return tuple(expanded)


def _joined(term: Term, fresh: Iterator[int], joins: list[Clause], source: object) -> Term:
    """A pattern's term, a lookup ref replaced by a fresh variable it joins in."""
    if not _is_ref(term):
        return term
    assert isinstance(term, Constant)
    variable = Variable(f"?#ref{next(fresh)}")
    ref: LookupRef = term.value
    joins.append(Pattern(variable, Constant(ref.attribute), Constant(ref.value), source=source))
    return variable


def _is_ref(term: Term) -> bool:
    return isinstance(term, Constant) and type(term.value) is LookupRef
