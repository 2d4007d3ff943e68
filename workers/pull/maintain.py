"""Rows with pulled maps, maintained incrementally from the changes of the rows without them.

A query with ``(pull ?e pattern)`` in ``:find`` is evaluated as the query with ``?e`` in its
place (the *input* relation ``R``: the basis rows, or the aggregated rows, or the bag of rows
a ``:with`` without aggregates projects); a row's output is ``render(r) = r`` with each
pulled column's entity replaced by its map ``M(e)``.  The result is the bag
``Σ_r R(r) · render(r)``: two entities pulling to equal maps give one row of weight 2, as a
collection of pulled maps holds it twice (Datascript).

Per tick, with ``ΔR`` the input's change and ``T`` the entities whose map the tick may have
changed (:meth:`PullReader.roots`)::

    Δout = Σ_{r ∈ touched} R_new(r) · render_new(r) - R_old(r) · render_old(r)
    touched = rows of ΔR  ∪  rows of R_old ∪ R_new holding an entity of T whose map changed

Every other row renders the same before and after, so it cancels.  ``render_old`` uses the
maps as last emitted, kept here with the input rows indexed by entity (the state, as large
as the result); ``render_new`` re-pulls only the entities of ``T`` present in the input and
the entities entering it, against the database after the tick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workers.arrangements.batch import Ints, sorted_distinct
from workers.arrangements.delta import DatomColumns, IdDelta
from workers.datalog.ast import PullPattern
from workers.plan.ir import Find
from workers.pull.read import PullReader, attributes_read, depth
from workers.zset import ZSet, add_into
from workers.zset.row import Row

Key = Row  # (pull column, entity): a Row, so that entities 1 and true are two keys


@dataclass(frozen=True, slots=True)
class PullColumn:
    """Output column ``output`` holds input column ``source``, pulled with ``pattern``."""

    output: int
    source: int
    pattern: PullPattern


@dataclass(slots=True)
class Pulling:
    """The rows of one query with their pulled maps (see the module doc)."""

    sources: tuple[int, ...]  # per output column, the input column it shows
    pulls: tuple[PullColumn, ...]
    rows: ZSet[Row] = field(default_factory=dict)  # the input relation R
    holders: dict[Key, set[Row]] = field(default_factory=dict)  # entity → rows of R
    maps: dict[Key, Any] = field(default_factory=dict)  # entity → its map as emitted

    @staticmethod
    def of(find: Find) -> Pulling | None:
        """None without pulls.  The input is the basis, or the :find row when aggregated
        (the aggregation keeps a pulled entity as a group column) or projected from a basis
        with :with variables (:func:`workers.find.result.result_of`)."""
        if not find.pulls:
            return None
        sources = (tuple(range(len(find.columns))) if find.aggregated or find.with_
                   else tuple(c.index for c in find.columns))
        pulls = tuple(PullColumn(i, sources[i], c.pull) for i, c in enumerate(find.columns)
                      if c.pull is not None)
        return Pulling(sources, pulls)

    @property
    def attributes(self) -> tuple[Any, ...] | None:
        """The attributes whose datoms can change a map (None: any)."""
        found: list[Any] = []
        for column in self.pulls:
            read = attributes_read(column.pattern)
            if read is None:
                return None
            found += read
        return tuple(dict.fromkeys(found))

    @property
    def depth(self) -> int:
        """How many references deep the deepest pattern reads."""
        return max(depth(column.pattern) for column in self.pulls)

    def entities(self, rows: Mapping[Row, int]) -> list[Any]:
        """The entities ``rows`` pull."""
        return [row[column.source] for row in rows for column in self.pulls]

    def held(self) -> list[Any]:
        """Every entity whose map is held."""
        return [entity for _, entity in self.maps]

    def reset(self, rows: Mapping[Row, int], reader: PullReader) -> ZSet[Row]:
        """Start over from the whole input; return the whole output."""
        self.rows, self.holders, self.maps = {}, {}, {}
        return self.step(rows, reader, None)

    def step(self, changes: Mapping[Row, int], reader: PullReader,
             delta: IdDelta | None) -> ZSet[Row]:
        """The output's change for the input's ``changes`` and the tick's datoms ``delta``
        (None: nothing but ``changes`` happened), the database read after the tick."""
        before = {key: self.maps[key] for key in self._changed_roots(reader, delta)}
        for row, weight in changes.items():
            self._hold(row, weight)
        touched = set(changes)
        entering = {Row((i, row[column.source])) for row, weight in changes.items()
                    if weight > 0 for i, column in enumerate(self.pulls)} - self.maps.keys()
        for key in before.keys() | entering:
            if key not in self.holders:
                continue
            pulled = reader.pull(self.pulls[key[0]].pattern, key[1])
            if key not in before or pulled != before[key]:
                touched |= self.holders[key]
            self.maps[key] = pulled
        out: ZSet[Row] = {}
        for row in touched:
            new = self.rows.get(row, 0)
            old = new - changes.get(row, 0)
            if old:
                add_into(out, {self._render(row, before): -old})
            if new:
                add_into(out, {self._render(row, {}): new})
        for row, weight in changes.items():
            for i, column in enumerate(self.pulls):
                key = Row((i, row[column.source]))
                if weight < 0 and key not in self.holders:
                    self.maps.pop(key, None)
        return out

    def _changed_roots(self, reader: PullReader, delta: IdDelta | None) -> list[Key]:
        """The held entities whose map the tick may have changed."""
        if delta is None:
            return []
        keys: list[Key] = []
        for i, column in enumerate(self.pulls):
            roots = reader.roots(column.pattern, delta)
            if roots is None:  # a schema change: every held entity
                keys += [key for key in self.maps if key[0] == i]
            else:
                keys += [key for root in roots if (key := Row((i, root))) in self.maps]
        return keys

    def _hold(self, row: Row, weight: int) -> None:
        """``R += {row: weight}``, keeping the entity index."""
        total = self.rows.get(row, 0) + weight
        if total:
            self.rows[row] = total
        else:
            self.rows.pop(row, None)
        for i, column in enumerate(self.pulls):
            key = Row((i, row[column.source]))
            held = self.holders.setdefault(key, set())
            if total:
                held.add(row)
            else:
                held.discard(row)
                if not held:
                    del self.holders[key]

    def _render(self, row: Row, previous: Mapping[Key, Any]) -> Row:
        """The output row: each pulled column's map (``previous`` first: the old maps)."""
        out = [row[source] for source in self.sources]
        for i, column in enumerate(self.pulls):
            key = Row((i, row[column.source]))
            out[column.output] = previous[key] if key in previous else self.maps[key]
        return Row(out)


@dataclass(frozen=True, slots=True)
class PullReads:
    """What the pulls of a tick's queries read after it (``Database.read_pulled``): the
    datoms of the ids in ``columns`` of each query's set changes (``(position among the
    tick's plans, its pulled columns)``) and of the ids in the tick's delta, then ``hops``
    steps on, in the state after the tick."""

    columns: tuple[tuple[int, tuple[int, ...]], ...]
    hops: int

    def seeds(self, rows: Callable[[int, int], Ints], delta: DatomColumns) -> Ints:
        """The ids read from: ``rows(query, column)`` gives a query's ids in a column."""
        return sorted_distinct(np.concatenate(
            [rows(query, c) for query, columns in self.columns for c in columns]
            + [delta.e.astype(np.int64), delta.v.astype(np.int64)]))
