"""The database as a batch of transactions sees it before the batch is applied.

A tick of many transactions is stepped once, with the sum of their effective deltas, so
every query reads the state *before* the tick.  Yet each transaction must be normalised
against the state *after* the ones before it (``[:db/add 1 :age 31]`` replaces the age a
previous transaction of the same tick asserted).  :class:`PendingReader` answers the
normaliser's reads from the shared state plus the tick's pending delta (value datoms),
without writing either: a datom is present when its summed weight is positive.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workers.arrangements.keys import IndexOrder
from workers.arrangements.memory import Datom, MemoryArrangement
from workers.arrangements.registry import ArrangementRegistry

# The orders the reads below take from the pending delta (its other tries would be written
# for every transaction of a batch and never read).
PENDING_ORDERS = (IndexOrder.EAV, IndexOrder.VAE)


class PendingReader:
    """``state + pending`` for the reads transaction normalisation makes; ``pending`` needs
    only the tries of ``PENDING_ORDERS``."""

    __slots__ = ("pending", "state")

    def __init__(self, state: ArrangementRegistry, pending: MemoryArrangement) -> None:
        self.state, self.pending = state, pending

    def has(self, datom: Datom) -> bool:
        change = self.pending.weight(datom)
        return change > 0 if change else self.state.has(datom)

    def values(self, e: Any, a: Any) -> Iterator[Any]:
        change = self.pending.index(IndexOrder.EAV).get(e, {}).get(a, {})
        return _present(self.state.values(e, a), change)

    def entity_datoms(self, e: Any) -> Iterator[Datom]:
        changed = self.pending.index(IndexOrder.EAV).get(e, {})
        for datom in self.state.entity_datoms(e):
            if changed.get(datom[1], {}).get(datom[2], 0) >= 0:
                yield datom
        for a, values in changed.items():
            for v, weight in values.items():
                if weight > 0:
                    yield (e, a, v)

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]:
        change = self.pending.index(IndexOrder.VAE).get(v, {}).get(a, {})
        for e in _present((d[0] for d in self.state.referrers(v, a)), change):
            yield (e, a, v)


    def attribute_datoms(self, a: Any) -> Iterator[Datom]:
        eav = self.pending.index(IndexOrder.EAV)
        for datom in self.state.attribute_datoms(a):
            if eav.get(datom[0], {}).get(a, {}).get(datom[2], 0) >= 0:
                yield datom
        for e, attributes in eav.items():
            for v, weight in attributes.get(a, {}).items():
                if weight > 0:
                    yield (e, a, v)


def _present(old: Iterator[Any], change: dict[Any, int]) -> Iterator[Any]:
    """The keys of a set after a set-preserving change: the old ones it does not retract,
    then the ones it adds (a weight is +1 only on an absent key, -1 only on a present one)."""
    for key in old:
        if change.get(key, 0) >= 0:
            yield key
    for key, weight in change.items():
        if weight > 0:
            yield key
