"""Semantic checks after parsing: range restriction and input binding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from workers.datalog.ast import Constant, Pattern, Query, Term, Variable
from workers.db.values import is_value, type_name
from workers.edn import intern
from workers.errors import ErrorCode, QueryError


def check_query(query: Query) -> Query:
    """Refuse a query whose ``:find`` variables are not bound by ``:where`` (unsafe)."""
    bound = set(query.variables)
    for variable in query.find:
        if variable in query.inputs:
            raise QueryError(f":find {variable} is an :in variable; returning inputs is not "
                             "supported yet", code=ErrorCode.QUERY_UNSUPPORTED, form=str(variable))
        if variable not in bound:
            raise QueryError(f"unsafe query: :find {variable} does not occur in any :where "
                             "pattern", code=ErrorCode.QUERY_UNSAFE, form=str(variable))
    return query


def bind_inputs(query: Query, inputs: Sequence[Any]) -> Query:
    """Substitute the ``:in`` scalars by their values: the result has no inputs left."""
    if len(inputs) != len(query.inputs):
        names = " ".join(str(v) for v in query.inputs) or "none"
        raise QueryError(f"query takes {len(query.inputs)} input(s) ({names}) after $, "
                         f"got {len(inputs)}", code=ErrorCode.QUERY_INPUTS, form=tuple(inputs))
    values: dict[Variable, Any] = {}
    for variable, value in zip(query.inputs, inputs, strict=True):
        value = intern(value)
        if not is_value(value):
            raise QueryError(f"input {variable} must be a scalar value, got {type_name(value)}",
                             code=ErrorCode.QUERY_INPUTS, form=value)
        values[variable] = value

    def substitute(term: Term) -> Term:
        return Constant(values[term]) if isinstance(term, Variable) and term in values else term

    where = tuple(Pattern(substitute(p.e), substitute(p.a), substitute(p.v), source=p.source)
                  for p in query.where)
    return replace(query, where=where, inputs=())
