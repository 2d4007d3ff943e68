"""Stream operators over Z-sets (DBSP): ``integrate``, ``differentiate``, ``distinct``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from workers.zset.zset import ZSet, add, add_into, neg

T = TypeVar("T")

__all__ = ["differentiate", "distinct_change", "integrate", "is_set"]


def integrate(stream: Sequence[Mapping[T, int]]) -> list[ZSet[T]]:
    """Running sums: ``integrate(d)[t] = d[0] + ... + d[t]``."""
    total: ZSet[T] = {}
    out = []
    for change in stream:
        add_into(total, change)
        out.append(dict(total))
    return out


def differentiate(stream: Sequence[Mapping[T, int]]) -> list[ZSet[T]]:
    """Per-step changes: ``differentiate(a)[t] = a[t] - a[t-1]`` (``a[-1] = 0``).

    Inverse of :func:`integrate`: ``integrate(differentiate(a)) == a``.
    """
    previous: Mapping[T, int] = {}
    out = []
    for state in stream:
        out.append(add(state, neg(previous)))
        previous = state
    return out


def distinct_change(before: int, delta: int) -> int:
    """The set change of one element whose derivation count moves from ``before`` by ``delta``.

    ``distinct(x) = 1 if x > 0 else 0``, so the change is ``distinct(before + delta) -
    distinct(before)``: +1 when the element enters the set, -1 when it leaves, else 0.
    """
    return (before + delta > 0) - (before > 0)


def is_set(zset: Mapping[T, int]) -> bool:
    """True when every weight is 1 — the Z-set is a set (a database state or a query result)."""
    return all(weight == 1 for weight in zset.values())
