"""Z-sets: finite maps from elements to non-zero integer weights.

A Z-set is a plain ``dict[T, int]``.  The invariant — no zero weights — is established by
:func:`consolidate` and kept by every function here; everything else in deltalog builds
Z-sets through these functions, so a zero weight never escapes.

Algebra (DBSP): Z-sets form an abelian group under pointwise ``+``; ``-a`` negates weights;
a database state is a Z-set whose weights are all 1 (a set); a change is any Z-set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias, TypeVar

T = TypeVar("T")

# ``ZSet[T]``: a plain ``dict[T, int]`` with no zero weights (``ZSet[Row]`` for rows,
# ``ZSet[Datom]`` for datoms); an alias, so no Z-set is ever anything but a dict.
ZSet: TypeAlias = dict[T, int]

__all__ = ["ZSet", "add", "add_into", "consolidate", "neg", "scale", "signed"]


def consolidate(pairs: Iterable[tuple[T, int]]) -> ZSet[T]:
    """Sum the weights of equal elements and drop zeros: the one way to build a Z-set."""
    out: ZSet[T] = {}
    for element, weight in pairs:
        out[element] = out.get(element, 0) + weight
    return {element: weight for element, weight in out.items() if weight}


def add_into(target: ZSet[T], other: Mapping[T, int]) -> ZSet[T]:
    """``target += other`` in place, dropping elements whose weight becomes zero."""
    for element, weight in other.items():
        total = target.get(element, 0) + weight
        if total:
            target[element] = total
        else:
            target.pop(element, None)
    return target


def add(a: Mapping[T, int], b: Mapping[T, int]) -> ZSet[T]:
    """``a + b``."""
    return add_into(dict(a), b)


def neg(a: Mapping[T, int]) -> ZSet[T]:
    """``-a``."""
    return {element: -weight for element, weight in a.items()}


def scale(a: Mapping[T, int], factor: int) -> ZSet[T]:
    """``factor · a`` (zero gives the empty Z-set)."""
    if not factor:
        return {}
    return {element: weight * factor for element, weight in a.items()}


def signed(weight: int) -> str:
    """A weight as a change shows it: ``+``/``-`` for one copy, ``+2``/``-3`` for several
    (a bag's rows come and go several at a time)."""
    sign = "+" if weight > 0 else "-"
    return sign if abs(weight) == 1 else f"{sign}{abs(weight)}"
