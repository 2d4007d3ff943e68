"""The database state, held once per worker as four shared index tries.

Every registered query reads these tries ("one integral, many joins"); executors only read.
:meth:`ArrangementRegistry.apply` is the only writer, called once per tick after every
query has stepped, so all queries see the same ``old`` state.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from workers.arrangements.keys import IndexOrder
from workers.arrangements.memory import Datom, MemoryArrangement, Trie


class ArrangementRegistry:
    """The shared arrangements of the current database (a set of datoms, all weights 1)."""

    __slots__ = ("datoms", "state")

    def __init__(self) -> None:
        self.state = MemoryArrangement()
        self.datoms = 0  # how many: kept by ``apply`` (an effective delta), for the metrics

    def index(self, order: IndexOrder) -> Trie:
        return self.state.index(order)

    def apply(self, delta: Mapping[Datom, int]) -> None:
        """``state += delta``: the only write to the shared arrangements."""
        self.state.update(delta)
        self.datoms += sum(delta.values())

    def load(self, tries: Mapping[IndexOrder, Trie]) -> None:
        """Adopt a snapshot's tries (copied into the same trie objects readers hold)."""
        self.state.load(tries)
        self.datoms = len(self.state)

    # -- reads used by transaction normalisation -------------------------------------------

    def has(self, datom: Datom) -> bool:
        return self.state.weight(datom) > 0

    def values(self, e: Any, a: Any) -> Iterator[Any]:
        """The values of attribute ``a`` on entity ``e``."""
        return iter(self.index(IndexOrder.EAV).get(e, {}).get(a, {}))

    def entity_datoms(self, e: Any) -> Iterator[Datom]:
        """Every datom whose entity is ``e``."""
        for a, values in self.index(IndexOrder.EAV).get(e, {}).items():
            for v in values:
                yield (e, a, v)

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]:
        """Every datom ``[? a v]`` (entities pointing at ``v`` through ``a``)."""
        for e in self.index(IndexOrder.VAE).get(v, {}).get(a, {}):
            yield (e, a, v)

    # -- statistics for the planner --------------------------------------------------------

    def attribute_stats(self, a: Any) -> tuple[int, int]:
        """``(distinct entities, distinct values)`` of attribute ``a``."""
        entities = self.index(IndexOrder.AEV).get(a, {})
        return len(entities), len(self.index(IndexOrder.AVE).get(a, {}))
