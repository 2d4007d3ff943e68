"""Incremental aggregation: set changes of a query's basis → changes of its grouped rows.

Datomic semantics: the basis is the *set* of tuples over the ``:find`` variables and the
``:with`` variables; rows are grouped by the find variables that are not aggregated, and each
aggregate reads the *bag* of its variable over the group's basis tuples (so ``:with``
variables make equal values count several times).  Per group the state is, for each
aggregated column, a bag ``value → multiplicity`` (:mod:`workers.find.aggregate` computes
each aggregate from it).  A tick emits ``-old row`` and ``+new row`` for every group whose
row changed; a group whose basis empties disappears (Datomic returns no row for it).

Values keep their kind (:mod:`workers.zset.row`): groups and rows are
:class:`~workers.zset.row.Row`, so a group's row changing from ``1`` to ``true`` emits
``-[1] +[true]``, as the change stream must to integrate to the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from workers.datalog.functions import CallFailed
from workers.find.aggregate import Bag, aggregate_value
from workers.plan.ir import FindColumn
from workers.zset import ZSet
from workers.zset.row import Row, value_key


@dataclass(slots=True)
class Aggregation:
    """The grouped rows of one query, maintained from its basis changes."""

    columns: tuple[FindColumn, ...]  # a pulled column is a group column here
    groups: dict[Row, tuple[int, tuple[Bag, ...]]] = field(default_factory=dict)

    def reset(self, basis: Mapping[Row, int]) -> ZSet[Row]:
        """Start over from the full basis set; return the full result."""
        self.groups.clear()
        self.step(basis)
        rows = (self._row(key) for key in self.groups)
        return {row: 1 for row in rows if row is not None}

    def step(self, changes: Mapping[Row, int]) -> ZSet[Row]:
        """Apply the basis set changes; return the result's changes."""
        before = {}
        for row, weight in changes.items():
            key = self._key(row)
            if key not in before:
                before[key] = self._row(key)
            self._update(key, row, weight)
        out: ZSet[Row] = {}
        for key, old in before.items():
            new = self._row(key)
            if old != new:
                if old is not None:
                    out[old] = out.get(old, 0) - 1
                if new is not None:
                    out[new] = out.get(new, 0) + 1
        return {row: w for row, w in out.items() if w}

    def _key(self, row: Row) -> Row:
        return Row(row[c.index] for c in self.columns if c.fn is None)

    def _aggregated(self) -> list[FindColumn]:
        return [c for c in self.columns if c.fn is not None]

    def _update(self, key: Row, row: Row, weight: int) -> None:
        size, bags = self.groups.get(key) or (0, tuple({} for _ in self._aggregated()))
        for bag, column in zip(bags, self._aggregated(), strict=True):
            value = value_key(row[column.index])
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

    def _row(self, key: Row) -> Row | None:
        """The group's row; None for no group, or one whose aggregate cannot be computed."""
        if key not in self.groups:
            return None
        _, bags = self.groups[key]
        keys, aggregates = iter(key), iter(bags)
        try:
            return Row(aggregate_value(c.fn, next(aggregates), c.n) if c.fn is not None
                       else next(keys) for c in self.columns)
        except CallFailed:
            return None
