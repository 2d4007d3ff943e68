"""The aggregate functions: one group's value from the bag of its aggregated variable.

A bag is a multiset ``value_key(value) → multiplicity`` (:mod:`workers.zset.row`), so
``1``, ``1.0`` and ``true`` are three values of it (``count-distinct`` 3, ``distinct`` a
:class:`~workers.zset.row.ValueSet` of three).  Every aggregate is a function of the bag:
``min``/``max`` survive the retraction of the current extreme (the next one is in the bag);
``median``, ``variance`` and ``(min n ?x)`` are recomputed from the bag of a changed group
only (:mod:`workers.find.grouping` keeps the bags).
"""

from __future__ import annotations

import heapq
import math
from fractions import Fraction
from typing import Any

from workers.datalog.functions import FUNCTIONS, call, sort_key
from workers.zset import ZSet
from workers.zset.row import Row, ValueSet

Bag = ZSet[Row]  # value_key(value) -> multiplicity: 1, 1.0 and true are three keys


def aggregate_value(fn: str, bag: Bag, n: int | None = None) -> Any:
    """The aggregate of a non-empty multiset ``value_key(value) → multiplicity``.

    Raises :class:`CallFailed` when it cannot be computed (``sum`` of strings, the mean of
    two middle keywords): the group then has no row, as a failed call binds nothing.
    """
    return call(_aggregate, (fn, bag, n))


def _aggregate(fn: str, bag: Bag, n: int | None) -> Any:
    if fn == "count":
        return sum(bag.values())
    if fn == "count-distinct":
        return len(bag)
    counted: list[tuple[Any, int]] = [(k[0], m) for k, m in bag.items()]
    if fn == "distinct":
        return ValueSet(v for v, _ in counted)
    if n is not None:  # (min n ?x) / (max n ?x): ascending, duplicates kept (Datascript)
        pick = heapq.nsmallest if fn == "min" else heapq.nlargest
        ordered = [v for v, m in sorted(pick(n, counted, key=_by_value), key=_by_value)
                   for _ in range(m)]
        return tuple(ordered[:n] if fn == "min" else ordered[max(len(ordered) - n, 0):])
    if fn == "min":
        return min(counted, key=_by_value)[0]
    if fn == "max":
        return max(counted, key=_by_value)[0]
    if fn == "median":
        return _median(counted)
    size, total = sum(bag.values()), _sum(counted)
    if fn == "sum":
        return total
    if fn == "avg":
        return total / size
    variance = _variance(counted, size, total)
    return variance if fn == "variance" else math.sqrt(variance)


def _by_value(counted: tuple[Any, int]) -> tuple[Any, ...]:
    return sort_key(counted[0])


def _sum(counted: list[tuple[Any, int]]) -> Any:
    """Exact for longs; for doubles ``fsum``, so the order the bag was built in is moot."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v, _ in counted):
        if not all(isinstance(v, float | int) and not isinstance(v, bool) for v, _ in counted):
            raise TypeError("sum of a non-number")
        return math.fsum(v * m for v, m in counted)
    return sum(v * m for v, m in counted)


def _variance(counted: list[tuple[Any, int]], size: int, total: Any) -> float:
    """Population variance ``(n·Σx² − (Σx)²) / n²``, computed exactly then rounded once."""
    squares = sum(Fraction(v) ** 2 * m for v, m in counted)
    return float((size * squares - Fraction(total) ** 2) / size ** 2)


def _median(counted: list[tuple[Any, int]]) -> Any:
    """The middle value; for an even count the mean of the two middle ones (by ``/``)."""
    size = sum(m for _, m in counted)
    wanted = sorted({(size - 1) // 2, size // 2})  # positions in the sorted bag
    middle: list[Any] = []
    seen = 0
    for value, multiplicity in sorted(counted, key=_by_value):
        seen += multiplicity
        while wanted and wanted[0] < seen:
            middle.append(value)
            wanted.pop(0)
        if not wanted:
            break
    return middle[0] if size % 2 else FUNCTIONS["/"](FUNCTIONS["+"](*middle), 2)
