"""Arrangements of a derived relation: n-ary tuples, one trie per column order in use.

The same invariants as :mod:`workers.arrangements.memory` (no zero weight at a leaf, no
empty dict at any depth); an index is built the first time a plan asks for its order and
kept up to date in place from then on (readers hold the trie objects).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from workers.zset import ZSet
from workers.zset.row import Row


class TrackedRows(ZSet[Row]):
    """A dict of tuples that the garbage collector never untracks (it untracks only exact
    dicts): a collection untracks an exact dict whose tuples it untracked, and the next
    new tuple written into it tracks it again — in the youngest generation, so the next
    young collection traverses all of it, ~15-20 ms for the 256k pairs of the power-law
    closure, in whichever tick it falls (`docs/engine.md`).  Tracked all along, it stays
    in the oldest generation, which young collections do not read."""

    __slots__ = ()


class RelationArrangement:
    """A Z-set of tuples of one derived relation (a state or a tick's change)."""

    __slots__ = ("rows", "tries")

    def __init__(self) -> None:
        self.rows: ZSet[Row] = TrackedRows()
        self.tries: dict[tuple[int, ...], dict[Any, Any]] = {}

    def index(self, order: tuple[int, ...]) -> dict[Any, Any]:
        """The trie keyed by the columns in ``order``."""
        trie = self.tries.get(order)
        if trie is None:
            trie = self.tries[order] = {}
            for row, weight in self.rows.items():
                _add_leaf(trie, [row[i] for i in order], weight)
        return trie

    def update(self, delta: Mapping[Row, int] | Iterable[tuple[Row, int]]) -> None:
        items = delta.items() if isinstance(delta, Mapping) else delta
        for row, weight in items:
            total = self.rows.get(row, 0) + weight
            if total:
                self.rows[row] = total
            else:
                self.rows.pop(row, None)
            for order, trie in self.tries.items():
                _add_leaf(trie, [row[i] for i in order], weight)

    def reset(self) -> None:
        """Empty it, keeping the trie objects (readers hold them)."""
        self.rows.clear()
        for trie in self.tries.values():
            trie.clear()

    def weight(self, row: Row) -> int:
        return self.rows.get(row, 0)

    def __iter__(self) -> Iterator[tuple[Row, int]]:
        return iter(list(self.rows.items()))

    def __len__(self) -> int:
        return len(self.rows)


def _add_leaf(trie: dict[Any, Any], keys: list[Any], weight: int) -> None:
    path = [trie]
    node = trie
    for key in keys[:-1]:
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        node = child
        path.append(node)
    last = keys[-1]
    total = node.get(last, 0) + weight
    if total:
        node[last] = total
        return
    node.pop(last, None)
    for depth in range(len(keys) - 2, -1, -1):
        if path[depth + 1]:
            return
        del path[depth][keys[depth]]
