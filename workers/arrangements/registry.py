"""The database state, held once per worker: every value numbered once, the datoms as a spine.

Every registered query reads this state ("one integral, many joins"); executors only read.
:meth:`ArrangementRegistry.apply` is the only writer, called once per tick after every
query has stepped, so all queries see the same ``old`` state.

Inside the engine a datom is three value ids (:class:`ValueIds`): the spine stores ids, the
tick's delta is arranged as ids, and join rows carry ids — values are decoded only where a
built-in function needs them and where a result leaves the engine.  Transaction
normalisation speaks values; the reads it makes are translated here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from workers.arrangements.datom_batch import DatomBatch, IdDatom
from workers.arrangements.delta import DatomColumns
from workers.arrangements.keys import IndexOrder
from workers.arrangements.spine import SpineArrangement
from workers.arrangements.values import Numbering, ValueIds
from workers.zset import ZSet

Datom = tuple[Any, Any, Any]
EAV, AEV, AVE, VAE = IndexOrder.EAV, IndexOrder.AEV, IndexOrder.AVE, IndexOrder.VAE
# A delta this large becomes a spine batch of its own (sorting it costs less than writing
# each datom into the four dict tries of the spine's layer).
BATCH_DATOMS = 1024
# From this many datoms the database's batches are compacted into one in the background
# (docs/engine.md, "Background compaction"); below, the geometric merges keep reads cheap.
# At 2^17 a database of PEGASE's size (14,232 edges) was never compacted: ticks of 200
# single-edge transactions read its 3-5 batches, 3.4 ms of CPU against 2.7-3.1 on one.
COMPACT_FROM = 1 << 12


class ArrangementRegistry:
    """The shared arrangements of the current database (a set of datoms, all weights 1)."""

    __slots__ = ("ids", "size", "state")

    def __init__(self) -> None:
        self.ids: Numbering = ValueIds()
        self.state = SpineArrangement(nonnegative=True, compact_from=COMPACT_FROM)
        self.size = 0  # how many datoms: kept by ``apply`` (an effective delta)

    def __len__(self) -> int:
        return self.size

    def encode(self, delta: Mapping[Datom, int]) -> ZSet[IdDatom]:
        """A delta of value datoms as id datoms (new values numbered now)."""
        intern = self.ids.intern
        return {(intern(e), intern(a), intern(v)): w for (e, a, v), w in delta.items()}

    def decode(self, datom: IdDatom) -> Datom:
        value = self.ids.value
        return value(datom[0]), value(datom[1]), value(datom[2])

    def apply(self, delta: Mapping[IdDatom, int]) -> None:
        """``state += delta`` (id datoms): the only write to the shared arrangements.  A
        large delta becomes a spine batch at once, a small one goes to the spine's layer."""
        if len(delta) >= BATCH_DATOMS:
            self.apply_columns(DatomColumns.of(delta))
        else:
            self.state.update(delta)
            self.size += sum(delta.values())

    def apply_batch(self, batch: DatomBatch, change: int) -> None:
        """:meth:`apply` of a delta already built as a spine batch; ``change``: its summed
        weight (the change in the number of datoms)."""
        self.state.update_batch(batch)
        self.size += change

    def apply_columns(self, delta: DatomColumns) -> None:
        """:meth:`apply` of a delta given as columns (each datom once): one spine batch."""
        self.state.update_columns(delta.e, delta.a, delta.v, delta.w)
        self.size += int(delta.w.sum())

    def load(self, ids: Numbering, columns: tuple[np.ndarray, ...]) -> None:
        """Adopt a snapshot: its value dictionary and its datoms as id columns."""
        self.ids = ids
        self.state = SpineArrangement(self.state.layer_limit, nonnegative=True,
                                      compact_from=COMPACT_FROM)
        if len(columns[0]):
            self.state.update_columns(*columns)
        self.size = len(columns[0])

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every datom as ``(e, a, v)`` id columns in EAV order (what a snapshot stores)."""
        return self.state.columns()

    def datoms(self) -> Iterator[Datom]:
        """Every datom, decoded (for tests and tools: it walks the whole database)."""
        for datom in self.state.datoms():
            yield self.decode(datom)

    # -- reads used by transaction normalisation -------------------------------------------

    def has(self, datom: Datom) -> bool:
        ids = tuple(map(self.ids.lookup, datom))
        return None not in ids and self.state.weight(EAV, ids) > 0  # type: ignore[arg-type]

    def values(self, e: Any, a: Any) -> Iterator[Any]:
        """The values of attribute ``a`` on entity ``e``."""
        return self._keys(EAV, e, a)

    def entity_datoms(self, e: Any) -> Iterator[Datom]:
        """Every datom whose entity is ``e``."""
        key = self.ids.lookup(e)
        if key is None:
            return
        value = self.ids.value
        for (a, v) in self.state.enumerate(EAV, (key,)):
            yield e, value(a), value(v)

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]:
        """Every datom ``[? a v]`` (entities pointing at ``v`` through ``a``)."""
        for e in self._keys(VAE, v, a):
            yield e, a, v

    def attribute_datoms(self, a: Any) -> Iterator[Datom]:
        """Every datom of attribute ``a`` (a schema change checks the data it applies to)."""
        key = self.ids.lookup(a)
        if key is None:
            return
        value = self.ids.value
        for (e, v) in self.state.enumerate(AEV, (key,)):
            yield value(e), a, value(v)

    def _keys(self, order: IndexOrder, k0: Any, k1: Any) -> Iterator[Any]:
        first, second = self.ids.lookup(k0), self.ids.lookup(k1)
        if first is None or second is None:
            return iter(())
        return map(self.ids.value, self.state.propose(order, (first, second)))

    # -- statistics for the planner --------------------------------------------------------

    def attribute_stats(self, a: Any) -> tuple[int, int]:
        """``(distinct entities, distinct values)`` of attribute ``a``."""
        key = self.ids.lookup(a)
        if key is None:
            return 0, 0
        return self.state.count(AEV, (key,)), self.state.count(AVE, (key,))
