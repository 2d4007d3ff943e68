"""``:with`` without an aggregate: the basis projected on the find variables, a bag."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workers.zset import ZSet
from workers.zset.row import Row
from workers.zset.zset import consolidate


@dataclass(frozen=True, slots=True)
class Projection:
    """``:with`` without an aggregate: the basis set projected on the find variables, a
    *bag* (Datomic: the ``:with`` variables are removed, "leaving a bag (not a set!)").

    Projection is linear — ``project(Δbasis)`` is the change of ``project(basis)`` — so it
    keeps no state; a row's weight is its multiplicity, and a tick's change may carry any
    weight (two Ivans arriving at once: ``{("Ivan",): +2}``).
    """

    columns: tuple[int, ...]

    def reset(self, basis: Mapping[Row, int]) -> ZSet[Row]:
        return self.step(basis)

    def step(self, changes: Mapping[Row, int]) -> ZSet[Row]:
        return consolidate((Row(row[i] for i in self.columns), weight)
                           for row, weight in changes.items())
