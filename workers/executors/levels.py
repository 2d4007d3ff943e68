"""Each tuple's level in a recursive stratum (DRed's support check, :mod:`.rules`), kept per
first column.

Why not one dict keyed by the tuple: a delete's check and its candidates' filter look up
thousands of levels per tick, and in a dict of a big relation (the power-law closure's
256k pairs) each lookup is cache misses — the table slot, the stored tuple, its ints:
~0.7-1.1 µs.  A round's lookups share few first columns (a hub's pairs ``(u, b)``; the
premises ``(c, b)`` of its ~100 successors ``c``, asked again for every ``b``), so per
first column they hit small dicts that stay in cache (~0.2 µs; `docs/engine.md`).  A
binary relation's inner keys are the second column itself, not a 1-tuple: its inner dicts
hold ints alone, which the garbage collector never tracks.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter

from workers.zset.row import Row


class Levels:
    """A map of tuples (all of one arity) to their levels: ``{first: {rest: level}}``."""

    __slots__ = ("_by_first", "_rest")

    def __init__(self, arity: int) -> None:
        self._by_first: dict[object, dict[object, int]] = {}
        self._rest = itemgetter(1) if arity == 2 else itemgetter(slice(1, None))

    def get(self, row: Row) -> int | None:
        """The level of ``row``, None when it has none (it is not present)."""
        inner = self._by_first.get(row[0])
        return None if inner is None else inner.get(self._rest(row))

    def __getitem__(self, row: Row) -> int:
        return self._by_first[row[0]][self._rest(row)]

    def assign(self, rows: Iterable[Row], level: int) -> None:
        rest = self._rest
        for row in rows:
            inner = self._by_first.get(row[0])
            if inner is None:
                inner = self._by_first[row[0]] = {}
            inner[rest(row)] = level

    def discard(self, row: Row) -> None:
        inner = self._by_first.get(row[0])
        if inner is not None:
            inner.pop(self._rest(row), None)
            if not inner:
                del self._by_first[row[0]]

    def clear(self) -> None:
        self._by_first.clear()

    def __len__(self) -> int:
        return sum(map(len, self._by_first.values()))
