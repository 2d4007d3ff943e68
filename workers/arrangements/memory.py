"""In-memory arrangements: one nested-dict trie per index order over a Z-set of datoms.

``trie[k0][k1][k2] = weight`` where ``(k0, k1, k2)`` is the datom permuted by the index
order.  Invariant: no zero weight at a leaf and no empty dict at any depth, so "a key is
present" means "some datom with this prefix has a non-zero weight".
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

from workers.arrangements.keys import INDEX_ORDERS, IndexOrder

Datom = tuple[Any, Any, Any]
Trie = dict[Any, dict[Any, dict[Any, int]]]


class MemoryArrangement:
    """The EAV, AEV, AVE and VAE tries of one Z-set of datoms (a state or a tick's delta);
    or only those of ``orders``, for a reader that asks no other (every write updates each
    trie kept: a batch's pending delta is written per transaction)."""

    __slots__ = ("_permuted", "tries", "version")

    def __init__(self, datoms: Mapping[Datom, int] | None = None,
                 orders: tuple[IndexOrder, ...] = INDEX_ORDERS) -> None:
        assert IndexOrder.EAV in orders, "weight and datoms read EAV"
        self.tries: dict[IndexOrder, Trie] = {order: {} for order in orders}
        self._permuted = [(self.tries[order], *order.positions) for order in orders]
        self.version = 0  # bumped by every write, so copies elsewhere know when to re-read
        if datoms:
            self.update(datoms)

    def index(self, order: IndexOrder) -> Trie:
        """The trie for ``order`` (read-only for callers)."""
        return self.tries[order]

    def update(self, delta: Mapping[Datom, int]) -> None:
        """Add ``delta`` to every index, keeping the no-zero/no-empty invariant (one loop,
        no call per leaf: a single-datom tick writes eight leaves, its delta's and the
        database layer's)."""
        self.version += 1
        for datom, weight in delta.items():
            for trie, i, j, k in self._permuted:
                k0, k1, k2 = datom[i], datom[j], datom[k]
                level1 = trie.get(k0)
                if level1 is None:
                    level1 = trie[k0] = {}
                level2 = level1.get(k1)
                if level2 is None:
                    level2 = level1[k1] = {}
                total = level2.get(k2, 0) + weight
                if total:
                    level2[k2] = total
                    continue
                level2.pop(k2, None)
                if not level2:
                    del level1[k1]
                    if not level1:
                        del trie[k0]

    def reset(self, delta: Mapping[Datom, int]) -> None:
        """Replace the contents by ``delta``, keeping the same trie objects (readers hold them)."""
        for trie in self.tries.values():
            trie.clear()
        self.update(delta)

    def load(self, tries: Mapping[IndexOrder, Trie]) -> None:
        """Replace the contents by a copy of a snapshot's tries, keeping the same trie objects
        (readers hold them); the copy is taken first, so loading one's own tries is safe."""
        copies = {order: _copy(tries[order]) for order in self.tries}
        self.version += 1
        for order, trie in self.tries.items():
            trie.clear()
            trie.update(copies[order])

    def weight(self, datom: Datom) -> int:
        """The weight of one datom (0 when absent)."""
        e, a, v = datom
        return self.tries[IndexOrder.EAV].get(e, {}).get(a, {}).get(v, 0)

    def datoms(self) -> Iterator[tuple[Datom, int]]:
        """Every datom with its weight, in EAV order."""
        for e, by_attr in self.tries[IndexOrder.EAV].items():
            for a, by_value in by_attr.items():
                for v, weight in by_value.items():
                    yield (e, a, v), weight

    def __len__(self) -> int:
        return sum(len(values) for by_attr in self.tries[IndexOrder.EAV].values()
                   for values in by_attr.values())

    def index_bytes(self, order: IndexOrder) -> int:
        """The memory of one index's dicts (the keys and values are shared by the four
        indexes and not counted); a walk over the trie, so for metrics now and then."""
        trie = self.tries[order]
        return sys.getsizeof(trie) + sum(
            sys.getsizeof(level) + sum(sys.getsizeof(leaves) for leaves in level.values())
            for level in trie.values())


def _copy(trie: Trie) -> Trie:
    return {k0: {k1: dict(leaves) for k1, leaves in level.items()} for k0, level in trie.items()}
