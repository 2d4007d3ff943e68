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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from workers.datalog.functions import CallFailed
from workers.find.aggregate import Bag, aggregate_value
from workers.plan.ir import FindColumn
from workers.zset import ZSet, add_into
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

    def reset_columns(self, ids: Sequence[npt.NDArray[np.integer[Any]]],
                      weights: npt.NDArray[np.integer[Any]],
                      decode: Callable[[npt.NDArray[np.integer[Any]]], list[Any]]
                      ) -> ZSet[Row]:
        """:meth:`reset` from the full basis as id columns (the vectorised executor's frame:
        ``ids[j]`` the value ids of basis column ``j``), grouped as :meth:`_grouped` does —
        never a Python row per basis tuple: a count of 10^7 triangles holds their id
        columns, not 10^7 rows."""
        self.groups.clear()
        for key, size, bags in self._grouped(ids, weights, decode):
            self._add(key, size, bags)
        rows = (self._row(key) for key in self.groups)
        return {row: 1 for row in rows if row is not None}

    def step(self, changes: Mapping[Row, int]) -> ZSet[Row]:
        """Apply the basis set changes; return the result's changes."""
        before: dict[Row, Row | None] = {}
        aggregated = self._aggregated()
        for row, weight in changes.items():
            key = self._key(row)
            if key not in before:
                before[key] = self._row(key)
            self._add(key, weight, [{value_key(row[c.index]): weight} if _bagged(c) else {}
                                    for c in aggregated])
        return self._changes(before)

    def step_columns(self, ids: Sequence[npt.NDArray[np.integer[Any]]],
                     weights: npt.NDArray[np.integer[Any]],
                     decode: Callable[[npt.NDArray[np.integer[Any]]], list[Any]]
                     ) -> ZSet[Row]:
        """:meth:`step` from the tick's set changes as id columns (the vectorised executor's
        frame), grouped as :meth:`_grouped` does: a tick's ~10^3 changed triangles cost a
        few NumPy calls and a decoded value per distinct group and ``(group, value)``, not
        a :class:`Row` each.  Every aggregate is exact this way: a group's state is its size
        and bags, which only add the weights up."""
        grouped = self._grouped(ids, weights, decode)
        before = {key: self._row(key) for key, _, _ in grouped}
        for key, size, bags in grouped:
            self._add(key, size, bags)
        return self._changes(before)

    def _grouped(self, ids: Sequence[npt.NDArray[np.integer[Any]]],
                 weights: npt.NDArray[np.integer[Any]],
                 decode: Callable[[npt.NDArray[np.integer[Any]]], list[Any]]
                 ) -> list[tuple[Row, int, list[Bag]]]:
        """The basis tuples ``ids`` (with ``weights``) summed per group: its key, weight
        and bags of the aggregated columns, counted in NumPy and decoded (``decode``: ids
        to values) once per distinct group and per distinct ``(group, value)``.  One id
        stands for one value (``1``, ``1.0`` and ``true`` have three), so grouping ids
        groups values as the rows' :meth:`step` does."""
        keyed = [ids[c.index] for c in self.columns if c.fn is None]
        group, firsts = _codes(keyed, len(weights))
        keys = ([Row(values) for values in zip(*(decode(col[firsts]) for col in keyed),
                                                strict=True)]
                if keyed else [Row()] * len(firsts))
        bags: list[list[Bag]] = [[{} for _ in self._aggregated()] for _ in keys]
        for j, column in enumerate(self._aggregated()):
            if not _bagged(column):
                continue
            pair, pair_firsts = _codes([group, ids[column.index]], len(weights))
            counts = _sums(pair, weights, len(pair_firsts)).tolist()
            values = decode(ids[column.index][pair_firsts])
            for g, value, n in zip(group[pair_firsts].tolist(), values, counts, strict=True):
                if n:
                    bags[g][j][value_key(value)] = n
        sizes = _sums(group, weights, len(firsts)).tolist()
        return list(zip(keys, sizes, bags, strict=True))

    def _changes(self, before: Mapping[Row, Row | None]) -> ZSet[Row]:
        """The result's changes from the touched groups' rows ``before`` to their rows now."""
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

    def _add(self, key: Row, size: int, bags: Sequence[Bag]) -> None:
        """Add ``size`` to the group's size and ``bags`` to its bags (a bag's zeros, and a
        group of size 0, dropped)."""
        size_now, bags_now = self.groups.get(key) or (0, tuple({} for _ in bags))
        for bag, added in zip(bags_now, bags, strict=True):
            add_into(bag, added)
        size_now += size
        if size_now:
            self.groups[key] = (size_now, bags_now)
        else:
            self.groups.pop(key, None)

    def _row(self, key: Row) -> Row | None:
        """The group's row; None for no group, or one whose aggregate cannot be computed."""
        if key not in self.groups:
            return None
        size, bags = self.groups[key]
        keys, aggregates = iter(key), iter(bags)
        try:
            return Row(_value(c, next(aggregates), size) if c.fn is not None else next(keys)
                       for c in self.columns)
        except CallFailed:
            return None


def _bagged(column: FindColumn) -> bool:
    """Whether an aggregated column keeps its bag: a count's bag stays empty, since its
    value is the group's size (the multiplicities add up to it) — the triangle count over
    LiveJournal would otherwise hold a bag of millions of vertices and decode each tick's."""
    return column.fn != "count"


def _value(column: FindColumn, bag: Bag, size: int) -> Any:
    """A column's aggregate over its group's bag, or its size where it keeps none (a
    count), so a tick's cost does not grow with the bag."""
    assert column.fn is not None
    return aggregate_value(column.fn, bag, column.n) if _bagged(column) else size


def _codes(columns: Sequence[npt.NDArray[np.integer[Any]]], n: int
           ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """Each of ``n`` rows' distinct tuple over ``columns`` as a code ``0..k-1``, and the
    first row of each code (no columns: one code, 0, when there are rows)."""
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.intp)
    code = np.zeros(n, np.int64)
    firsts = np.zeros(min(n, 1), np.intp)
    for column in columns:
        _, inverse = np.unique(column, return_inverse=True)
        code = code * (int(inverse.max()) + 1) + inverse.astype(np.int64)
        _, firsts, code = np.unique(code, return_index=True, return_inverse=True)
    return code.astype(np.int64), firsts


def _sums(codes: npt.NDArray[np.int64], weights: npt.NDArray[np.integer[Any]],
          k: int) -> npt.NDArray[np.int64]:
    """The weights summed per code (exact: the sums of a basis set stay far below 2^53)."""
    return np.rint(np.bincount(codes, weights=weights.astype(np.float64), minlength=k)
                   ).astype(np.int64)
