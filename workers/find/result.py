"""A registered query's ``:find`` stage: which operator turns its basis changes into its
result changes (a grouping, a projection to a bag, or none: the basis is the result)."""

from __future__ import annotations

from workers.find.grouping import Aggregation
from workers.find.projection import Projection
from workers.plan.ir import Find


def result_of(find: Find) -> Aggregation | Projection | None:
    """How a query's basis changes become its result changes: grouped (aggregates),
    projected to a bag (``:with`` alone), or as they are (the basis is the result)."""
    if find.aggregated:
        return Aggregation(find.columns)
    if find.bag:
        return Projection(tuple(c.index for c in find.columns))
    return None
