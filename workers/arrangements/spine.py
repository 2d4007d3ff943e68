"""A Z-set of datoms (as value ids) kept as a spine: sorted columnar batches plus a small
mutable layer, read through GenericJoin's verbs for one prefix or a batch of prefixes.

The Z-set is ``Σ batches + layer``.  A write goes to the layer (the dict tries of
:class:`MemoryArrangement`, over ids: a single-transaction tick stays a few dict updates);
when the layer holds ``layer_limit`` datoms it is frozen into a batch.  A bulk write becomes
a batch at once.  Batches are merged geometrically, as differential dataflow's spine does:
after a push, while the newest batch is at least half the one before, the two merge
(consolidating: equal datoms summed, zeros dropped).  So sizes more than double going
back, there are O(log n) batches, and a datom is re-sorted O(log n) times.  Merging is
addition, which never changes the Z-set (the property tests check it).

Every verb answers exactly as the dict tries of the same Z-set do, adding up the sources
that hold a prefix (:mod:`~workers.arrangements.prefix_reads` says how).

The spine is put together from parts, one concept each (differential dataflow's Spine,
Batch and Cursor): :mod:`~workers.arrangements.datom_batch` (a batch),
:mod:`~workers.arrangements.cursor` (reading one node of a source),
:mod:`~workers.arrangements.holders` (which batches hold a key),
:mod:`~workers.arrangements.compaction` (merging them all in the background),
:mod:`~workers.arrangements.prefix_reads` and :mod:`~workers.arrangements.batch_reads` (the
two read APIs); their shared state is :mod:`~workers.arrangements.spine_state`.  This module
holds the writes, the merge policy and the reads of the whole Z-set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import Executor
from contextlib import contextmanager

import numpy as np

from workers.arrangements.batch import SUMMED_ROWS, Ids, Ints, set_weights, summed_by_entity
from workers.arrangements.batch_reads import BatchReads
from workers.arrangements.compaction import COMPACTOR, Compaction
from workers.arrangements.cursor import MAJOR
from workers.arrangements.datom_batch import DatomBatch, IdDatom
from workers.arrangements.holders import MAX_BATCHES, holder_bits
from workers.arrangements.keys import INDEX_ORDERS, IndexOrder
from workers.arrangements.memory import MemoryArrangement
from workers.arrangements.prefix_reads import PrefixReads
from workers.zset import ZSet

__all__ = ["SMALL_NODE", "SpineArrangement"]

# A node with at most this many keys is read whole (``SpineArrangement.small``), once per
# write, and every verb on it reads that dict; a larger one stays on the per-source path
# (counted without reading it, searched per candidate).  The grid's nodes hold ~3 keys; on
# the power-law closure 64 read nodes whole that were only counted (docs/engine.md).
SMALL_NODE = 16
EAV = IndexOrder.EAV


class SpineArrangement(PrefixReads, BatchReads, Compaction):
    """The four indexes of a Z-set of datom ids as a spine; ``update`` and
    ``update_columns`` are the only writers."""

    __slots__ = ()

    def __init__(self, layer_limit: int = 4096, nonnegative: bool = False,
                 compact_from: int | None = None, compactor: Executor | None = None,
                 small_node: int = SMALL_NODE) -> None:
        """``nonnegative``: the caller promises the Z-set never has a negative weight (a
        set or a multiset; the sources may), which makes reads across sources cheaper.
        ``small_node``: a prefix whose node has at most this many keys is read whole
        (``small``; 0: only an empty one, the tests' general path).
        ``compact_from``: from this many datoms, the batches are merged into one in the
        background whenever the newer ones hold an eighth of the oldest, and the newer ones
        into one when they are many (:mod:`~workers.arrangements.compaction`; None: never),
        on ``compactor`` (by default one thread shared by every spine)."""
        self.nonnegative = nonnegative
        self.small_node = small_node
        self.compact_from = compact_from
        self._compactor = compactor or COMPACTOR
        self._compaction = None
        self._readers = 0  # threads reading at once (see shared_reads): nothing adopted
        self.batches = []  # largest (oldest) first
        self._by_order = {order: [] for order in INDEX_ORDERS}
        self._holders = {order: np.zeros(0, np.uint16) for order in MAJOR.values()}
        # read through memoryviews: an item is a Python int, without a NumPy call
        self._holder_views = {order: holders.data for order, holders in self._holders.items()}
        self.layer = MemoryArrangement()
        self.layer_limit = layer_limit
        self._layer_rows = 0  # datoms written to the layer since it was last frozen (a bound)
        self._layer_negative = False  # whether a negative weight was written since then
        self._layer_batch = (-1, None)  # (layer version, batch)
        self._read = {}  # see _nodes
        self._summed = {}  # propose
        self._summed_keys = 0  # the keys held by ``_summed``'s dicts

    # -- writes --------------------------------------------------------------------------

    def update(self, delta: Mapping[IdDatom, int]) -> None:
        """Add a (small) delta to the layer, freezing it into a batch when it is full."""
        self._adopt()
        self._forget()
        self.layer.update(delta)
        self._layer_rows += len(delta)
        self._layer_negative = self._layer_negative or any(w < 0 for w in delta.values())
        if self._layer_rows >= self.layer_limit:
            self.flush()

    def update_columns(self, e: Ids, a: Ids, v: Ids, w: Ints | None = None) -> None:
        """Add a (large) delta given as columns: it becomes a batch directly."""
        self._push(DatomBatch.build(e, a, v, w))

    def update_batch(self, batch: DatomBatch) -> None:
        """Add a delta already built as a batch (batches are immutable: it may be shared)."""
        self._push(batch)

    def flush(self) -> None:
        """Freeze the layer into a batch."""
        columns = self._layer_columns()
        self.layer.reset({})
        self._layer_rows, self._layer_negative = 0, False
        self._push(DatomBatch.build(*columns))

    def _layer_columns(self) -> tuple[Ids, Ids, Ids, Ints]:
        datoms = dict(self.layer.datoms())
        e, a, v = (np.fromiter((d[i] for d in datoms), np.int32, len(datoms)) for i in range(3))
        return e, a, v, np.fromiter(datoms.values(), np.int64, len(datoms))

    def compact(self) -> None:
        """Everything in one batch (a set's then needs no weight column)."""
        self.flush()
        self._push(None, merge_all=True)

    def _push(self, batch: DatomBatch | None, merge_all: bool = False) -> None:
        """Append ``batch`` and merge geometrically — never into the batches a background
        compaction is merging — then maybe start one; the holders' bits of the batches from
        the first one changed on are redone."""
        self._adopt(wait=merge_all)
        self._forget()
        first = len(self.batches)
        if batch is not None:
            self.batches.append(batch)
        batches, busy = self.batches, 0 if self._compaction is None else self._compaction[1]
        while len(batches) > busy + 1 and (merge_all or len(batches) > MAX_BATCHES
                                           or len(batches[-2]) <= 2 * len(batches[-1])):
            newest = batches.pop()
            merged = DatomBatch.merged([batches.pop(), newest])
            first = min(first, len(batches))
            if merged is not None:
                batches.append(merged)
        if len(batches) > MAX_BATCHES:  # the compacted ones and as many new: wait for it
            self._adopt(wait=True)
            return self._push(None)
        self._reindex(first)
        self._compact_in_background()

    def _reindex(self, first: int) -> None:
        before = self._by_order
        self._by_order = {order: [b.orders[order] for b in self.batches]
                          for order in INDEX_ORDERS}
        for order in MAJOR.values():
            self._holders[order] = holder_bits(self._holders[order], self._by_order[order],
                                               first, before[order][first:])
            self._holder_views[order] = self._holders[order].data


    @contextmanager
    def scan(self) -> Iterator[None]:
        """A full evaluation's reads: the batches keep the search bands its big searches
        make (:meth:`Batch.bands`, 8 bytes a key of each level searched) from one search to
        the next, and free them when it ends — the database does not hold them."""
        batches = [batch for each in self._by_order.values() for batch in each]
        for batch in batches:
            batch.scanning(True)
        try:
            yield
        finally:
            for batch in batches:
                batch.scanning(False)

    # -- the whole Z-set -----------------------------------------------------------------

    def datoms(self) -> ZSet[IdDatom]:
        """Every datom with its weight (consolidated across batches and layer)."""
        return self.enumerate(EAV, ())  # type: ignore[return-value]

    def columns(self, rows: int = SUMMED_ROWS) -> tuple[Ids, Ids, Ids]:
        """Every datom as ``(e, a, v)`` columns in EAV order, for a set (a snapshot):
        the batches and the layer consolidated a range of entities at a time (a database
        in several batches took ~88 bytes of temporaries per datom summed at once),
        nothing changed."""
        parts = [b.orders[EAV].columns() for b in self.batches]
        if self._layer_rows:
            e, a, v, w = self._layer_columns()
            by_entity = np.argsort(e, kind="stable")
            parts.append((e[by_entity], a[by_entity], v[by_entity], w[by_entity]))
        if len(parts) == 1 and parts[0][3] is None:  # one set batch (compacted): as it is
            return parts[0][:3]
        out = tuple(np.empty(sum(len(p[0]) for p in parts), np.int32) for _ in range(3))
        written = 0
        for *columns, w in summed_by_entity(
                [(e, a, v, set_weights(len(e)) if w is None else w) for e, a, v, w in parts],
                rows):  # ``rows`` datoms at a time: bounded temporaries, whatever the size
            assert np.all(w == 1), "the database is a set"
            for target, column in zip(out, columns, strict=True):
                target[written:written + len(column)] = column
            written += len(w)
        return out[0][:written], out[1][:written], out[2][:written]

    def index_bytes(self, order: IndexOrder) -> int:
        """The memory of one index: its batches' arrays (a pair order's own levels only),
        the holders' bits of a major order, and the layer's dicts."""
        holders = self._holders.get(order)
        return (sum(b.orders[order].nbytes for b in self.batches)
                + (0 if holders is None else holders.nbytes) + self.layer.index_bytes(order))

    @property
    def nbytes(self) -> int:
        """The batches' arrays and the holders' bits (the layer's dicts not counted)."""
        return sum(batch.nbytes for batch in self.batches) + sum(
            holders.nbytes for holders in self._holders.values())
