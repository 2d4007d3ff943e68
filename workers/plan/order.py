"""Variable and pattern ordering heuristics (pure functions over the AST and statistics)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from workers.datalog.ast import Constant, Pattern, Variable

# (distinct entities, distinct values) of an attribute, from the shared arrangements.
AttributeStats = Callable[[Any], tuple[int, int]]
UNKNOWN_SIZE = 1 << 30


def no_stats(_attribute: Any) -> tuple[int, int]:
    return (UNKNOWN_SIZE, UNKNOWN_SIZE)


def estimate(pattern: Pattern, variable: Variable, stats: AttributeStats) -> int:
    """How many values ``pattern`` may propose for ``variable`` with nothing else bound."""
    if isinstance(pattern.e, Constant) or isinstance(pattern.v, Constant):
        return 1
    if not isinstance(pattern.a, Constant):
        return UNKNOWN_SIZE
    entities, values = stats(pattern.a.value)
    return entities if pattern.e == variable else values


def next_variable(literals: Sequence[Any], bound: Collection[Variable],
                  stats: AttributeStats) -> Variable | None:
    """The next unbound variable of ``literals`` (generators with ``.variables``) to bind.

    The one constrained by the most literals that already have a bound variable (so it is
    intersected, not enumerated), then the smallest estimate, then first mention.
    """
    pending = [v for v in dict.fromkeys(v for g in literals for v in g.variables)
               if v not in bound]
    if not pending:
        return None

    def score(variable: Variable) -> tuple[int, int, int]:
        touching = [g for g in literals if variable in g.variables]
        connected = sum(any(v in bound for v in g.variables) for g in touching)
        smallest = min(estimate(g, variable, stats) if isinstance(g, Pattern) else UNKNOWN_SIZE
                       for g in touching)
        return (-connected, smallest, pending.index(variable))

    return min(pending, key=score)


def connected_pattern_order(patterns: Sequence[Pattern], first: int) -> tuple[int, ...]:
    """Pattern indices starting at ``first``; next is the first one sharing a bound variable."""
    order = [first]
    bound = set(patterns[first].variables)
    remaining = [i for i in range(len(patterns)) if i != first]
    while remaining:
        following = next((i for i in remaining if bound & set(patterns[i].variables)),
                         remaining[0])
        order.append(following)
        bound.update(patterns[following].variables)
        remaining.remove(following)
    return tuple(order)
