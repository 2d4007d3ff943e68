"""The database as a batch of transactions sees it before the batch is applied.

A tick of many transactions is stepped once, with the sum of their effective deltas, so
every query reads the state *before* the tick.  Yet each transaction must be normalised
against the state *after* the ones before it (``[:db/add 1 :age 31]`` replaces the age a
previous transaction of the same tick asserted).  :class:`PendingReader` answers the
normaliser's reads from the shared state plus the tick's pending delta, without writing
either: a datom is present when its summed weight is positive.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workers.arrangements.keys import IndexOrder
from workers.arrangements.memory import Datom, MemoryArrangement


class PendingReader:
    """``state + pending`` for the reads transaction normalisation makes."""

    __slots__ = ("pending", "state")

    def __init__(self, state: MemoryArrangement, pending: MemoryArrangement) -> None:
        self.state, self.pending = state, pending

    def has(self, datom: Datom) -> bool:
        return self.state.weight(datom) + self.pending.weight(datom) > 0

    def values(self, e: Any, a: Any) -> Iterator[Any]:
        return self._present(IndexOrder.EAV, e, a)

    def entity_datoms(self, e: Any) -> Iterator[Datom]:
        attributes = {**self.state.index(IndexOrder.EAV).get(e, {}),
                      **self.pending.index(IndexOrder.EAV).get(e, {})}
        for a in attributes:
            for v in self._present(IndexOrder.EAV, e, a):
                yield (e, a, v)

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]:
        for e in self._present(IndexOrder.VAE, v, a):
            yield (e, a, v)

    def _present(self, order: IndexOrder, k0: Any, k1: Any) -> Iterator[Any]:
        old = self.state.index(order).get(k0, {}).get(k1, {})
        change = self.pending.index(order).get(k0, {}).get(k1, {})
        for k2 in {**old, **change}:
            if old.get(k2, 0) + change.get(k2, 0) > 0:
                yield k2
