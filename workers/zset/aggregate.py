"""Incremental aggregation: set changes of a query's basis → changes of its grouped rows.

Datomic semantics: the basis is the *set* of tuples over the ``:find`` variables and the
``:with`` variables; rows are grouped by the find variables that are not aggregated, and each
aggregate reads the *bag* of its variable over the group's basis tuples (so ``:with``
variables make equal values count several times).  Per group the state is, for each
aggregated column, a multiset ``value → multiplicity``: ``count``/``sum``/``avg`` follow from
it, and ``min``/``max`` survive the retraction of the current extreme (the next one is in
the multiset).  A tick emits ``-old row`` and ``+new row`` for every group whose row changed;
a group whose basis empties disappears (Datomic returns no row for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workers.datalog.ast import Aggregate, Pull, Query
from workers.datalog.functions import sort_key
from workers.edn import Symbol, keyword

Row = tuple[Any, ...]
Bag = dict[Any, int]


@dataclass(frozen=True, slots=True)
class Column:
    """One :find element: a group column (``fn`` None) or an aggregate, over basis column
    ``index``."""

    index: int
    fn: str | None = None


def aggregate_value(fn: str, bag: Bag) -> Any:
    """The aggregate of a non-empty multiset."""
    if fn == "count":
        return sum(bag.values())
    if fn == "count-distinct":
        return len(bag)
    if fn == "distinct":
        return frozenset(bag)
    if fn == "min":
        return min(bag, key=sort_key)
    if fn == "max":
        return max(bag, key=sort_key)
    total = sum(value * n for value, n in bag.items())
    return total if fn == "sum" else total / sum(bag.values())


@dataclass(slots=True)
class Aggregation:
    """The grouped rows of one query, maintained from its basis changes."""

    columns: tuple[Column, ...]
    groups: dict[Row, tuple[int, tuple[Bag, ...]]] = field(default_factory=dict)

    @staticmethod
    def of(query: Query) -> Aggregation | None:
        if not query.aggregates:
            return None
        basis = query.basis
        return Aggregation(tuple(
            Column(basis.index(e.var), e.fn) if isinstance(e, Aggregate)
            else Column(basis.index(e.var if isinstance(e, Pull) else e)) for e in query.find))

    def reset(self, basis: Mapping[Row, int]) -> dict[Row, int]:
        """Start over from the full basis set; return the full result."""
        self.groups.clear()
        self.step(basis)
        return {self._row(key): 1 for key in self.groups}

    def step(self, changes: Mapping[Row, int]) -> dict[Row, int]:
        """Apply the basis set changes; return the result's changes."""
        before = {}
        for row, weight in changes.items():
            key = self._key(row)
            if key not in before:
                before[key] = self._row(key) if key in self.groups else None
            self._update(key, row, weight)
        out: dict[Row, int] = {}
        for key, old in before.items():
            new = self._row(key) if key in self.groups else None
            if old != new:
                if old is not None:
                    out[old] = out.get(old, 0) - 1
                if new is not None:
                    out[new] = out.get(new, 0) + 1
        return {row: w for row, w in out.items() if w}

    def _key(self, row: Row) -> Row:
        return tuple(row[c.index] for c in self.columns if c.fn is None)

    def _aggregated(self) -> list[Column]:
        return [c for c in self.columns if c.fn is not None]

    def _update(self, key: Row, row: Row, weight: int) -> None:
        size, bags = self.groups.get(key) or (0, tuple({} for _ in self._aggregated()))
        for bag, column in zip(bags, self._aggregated(), strict=True):
            value = row[column.index]
            n = bag.get(value, 0) + weight
            if n:
                bag[value] = n
            else:
                bag.pop(value, None)
        size += weight
        if size:
            self.groups[key] = (size, bags)
        else:
            self.groups.pop(key, None)

    def _row(self, key: Row) -> Row:
        _, bags = self.groups[key]
        keys, aggregates = iter(key), iter(bags)
        return tuple(aggregate_value(c.fn, next(aggregates)) if c.fn is not None
                     else next(keys) for c in self.columns)


def as_maps(keys: tuple[str, tuple[str, ...]], rows: Mapping[Row, int]) -> list[dict[Any, Any]]:
    """Rows as maps named by ``:keys`` (keywords), ``:strs`` (strings) or ``:syms``."""
    kind, names = keys
    make = {":keys": keyword, ":strs": str, ":syms": Symbol}[kind]
    labels = [make(name) for name in names]
    return [dict(zip(labels, row, strict=True)) for row in rows]
