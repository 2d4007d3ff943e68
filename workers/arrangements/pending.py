"""The database as a batch of transactions sees it before the batch is applied.

A tick of many transactions is stepped once, with the sum of their effective deltas, so
every query reads the state *before* the tick.  Yet each transaction must be normalised
against the state *after* the ones before it (``[:db/add 1 :age 31]`` replaces the age a
previous transaction of the same tick asserted).  :class:`PendingReader` answers the
normaliser's reads from the shared state plus the tick's pending delta, without writing
either: a datom is present when its summed weight is positive.

The pending delta holds id datoms, numbered in the state's dictionary as the state's are:
``1``, ``1.0`` and ``true`` have three ids, so a batch keeps them apart as the database
does (value datoms in Python dicts would merge them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from workers.arrangements.keys import IndexOrder
from workers.arrangements.memory import Datom, MemoryArrangement
from workers.arrangements.registry import ArrangementRegistry

EAV, AEV, VAE = IndexOrder.EAV, IndexOrder.AEV, IndexOrder.VAE
# The orders the reads below take from the pending delta (its other tries would be written
# for every transaction of a batch and never read).
PENDING_ORDERS = (EAV, VAE)


class PendingReader:
    """``state + pending`` for the reads transaction normalisation makes; ``pending`` holds
    id datoms (:meth:`ArrangementRegistry.encode`) in the tries of ``PENDING_ORDERS``."""

    __slots__ = ("pending", "state")

    def __init__(self, state: ArrangementRegistry, pending: MemoryArrangement) -> None:
        self.state, self.pending = state, pending

    def has(self, datom: Datom) -> bool:
        key = self._ids(datom)
        if key is None:  # a value never numbered is in no datom
            return False
        change = self.pending.weight((key[0], key[1], key[2]))
        return change > 0 if change else self.state.state.weight(EAV, key) > 0

    def values(self, e: Any, a: Any) -> Iterator[Any]:
        key = self._ids((e, a))
        if key is None:
            return iter(())
        change = self.pending.index(EAV).get(key[0], {}).get(key[1], {})
        return map(self.state.ids.value, _present(self.state.state.propose(EAV, key), change))

    def entity_datoms(self, e: Any) -> Iterator[Datom]:
        key = self._ids((e,))
        if key is None:
            return
        value = self.state.ids.value
        changed = self.pending.index(EAV).get(key[0], {})
        for a, v in self.state.state.enumerate(EAV, key):
            if changed.get(a, {}).get(v, 0) >= 0:
                yield (e, value(a), value(v))
        for a, values in changed.items():
            for v, weight in values.items():
                if weight > 0:
                    yield (e, value(a), value(v))

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]:
        key = self._ids((v, a))
        if key is None:
            return
        change = self.pending.index(VAE).get(key[0], {}).get(key[1], {})
        value = self.state.ids.value
        for e in _present(self.state.state.propose(VAE, key), change):
            yield (value(e), a, v)

    def attribute_datoms(self, a: Any) -> Iterator[Datom]:
        key = self._ids((a,))
        if key is None:
            return
        value = self.state.ids.value
        eav = self.pending.index(EAV)
        for e, v in self.state.state.enumerate(AEV, key):
            if eav.get(e, {}).get(key[0], {}).get(v, 0) >= 0:
                yield (value(e), a, value(v))
        for e, attributes in eav.items():
            for v, weight in attributes.get(key[0], {}).items():
                if weight > 0:
                    yield (value(e), a, value(v))

    def _ids(self, values: Iterable[Any]) -> tuple[int, ...] | None:
        """The values' ids, or None when one has none."""
        ids = tuple(map(self.state.ids.lookup, values))
        return None if None in ids else ids  # type: ignore[return-value]


def _present(old: Iterable[Any], change: dict[Any, int]) -> Iterator[Any]:
    """The keys of a set after a set-preserving change: the old ones it does not retract,
    then the ones it adds (a weight is +1 only on an absent key, -1 only on a present one)."""
    for key in old:
        if change.get(key, 0) >= 0:
            yield key
    for key, weight in change.items():
        if weight > 0:
            yield key
