"""A checked query → :class:`QueryPlan`: its body planned by the flat planner (data
patterns only) or as a program of derived relations, and its ``:find`` as data."""

from __future__ import annotations

from workers.datalog.ast import Aggregate, Constant, Pull, PullPattern, Query
from workers.plan.ir import Find, FindColumn, QueryPlan
from workers.plan.order import AttributeStats, no_stats
from workers.plan.planner import plan_query
from workers.plan.rules import plan_rules


def query_plan(query: Query, strategy: str = "delta",
               stats: AttributeStats = no_stats) -> QueryPlan:
    """Plan ``query`` (inputs already bound) for ``strategy``."""
    body = (plan_query(query, strategy, stats) if query.is_flat
            else plan_rules(query, strategy, stats))
    return QueryPlan(body, find_of(query))


def find_of(query: Query) -> Find:
    """The ``:find`` clause over the query's basis (find variables, then ``:with``)."""
    basis = query.basis
    columns = []
    for element in query.find:
        if isinstance(element, Aggregate):
            n = element.n.value if isinstance(element.n, Constant) else None
            columns.append(FindColumn(basis.index(element.var), element.fn, n))
        elif isinstance(element, Pull):
            assert isinstance(element.pattern, PullPattern), "inputs are bound"
            columns.append(FindColumn(basis.index(element.var), pull=element.pattern))
        else:
            columns.append(FindColumn(basis.index(element)))
    return Find(tuple(columns), tuple(v.name for v in query.with_), query.find_spec,
                query.keys)
