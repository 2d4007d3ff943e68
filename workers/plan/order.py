"""Variable and pattern ordering heuristics (pure functions over the AST and statistics)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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


def variable_order(patterns: Sequence[Pattern], bound: Iterable[Variable],
                   stats: AttributeStats) -> tuple[Variable, ...]:
    """Greedy order of the unbound variables of ``patterns``.

    Next is the variable constrained by the most patterns that already have a bound variable
    (so it is intersected, not enumerated), then the smallest estimate, then first mention.
    """
    bound = set(bound)
    pending = [v for v in dict.fromkeys(v for p in patterns for v in p.variables)
               if v not in bound]
    order: list[Variable] = []
    while pending:
        def score(variable: Variable) -> tuple[int, int, int]:
            touching = [p for p in patterns if variable in p.variables]
            connected = sum(any(v in bound for v in p.variables) for p in touching)
            smallest = min(estimate(p, variable, stats) for p in touching)
            return (-connected, smallest, pending.index(variable))

        best = min(pending, key=score)
        order.append(best)
        bound.add(best)
        pending.remove(best)
    return tuple(order)


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
