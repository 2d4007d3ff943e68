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

Every verb answers exactly as the dict tries of the same Z-set do: a prefix's *node* is
read in each source holding it; one source (the common case: data loaded long ago, or new)
answers from its structure, a slice.  Several sources answer together by adding their keys
when all of them are *positive* (no negative weight: a key present in one is present in the
sum).  Otherwise a retraction may empty a key: a spine declared ``nonnegative`` (its Z-set
never has a negative weight, as a database, which is a set, has not) adds each key's sums
and drops the zeros — a key's summed weight is then 0 exactly when nothing is under it —
and any other consolidates the leaves under the prefix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import (
    SUMMED_ROWS,
    Batch,
    Ids,
    Ints,
    Mask,
    PairBatch,
    consolidate,
    set_weights,
    sort_order,
    sorted_distinct,
    sorted_triples,
    starts,
    summed_by_entity,
)
from workers.arrangements.keys import INDEX_ORDERS, IndexOrder
from workers.arrangements.memory import MemoryArrangement
from workers.zset import ZSet, add_into

# A node with at most this many keys is read whole (``SpineArrangement.small``), once per
# write, and every verb on it reads that dict; a larger one stays on the per-source path
# (counted without reading it, searched per candidate).  The grid's nodes hold ~3 keys; on
# the power-law closure 64 read nodes whole that were only counted (docs/engine.md).
SMALL_NODE = 16
# Read once: an Enum member read through its class costs ~90 ns on the one-prefix path.
EAV, AEV, AVE, VAE = IndexOrder.EAV, IndexOrder.AEV, IndexOrder.AVE, IndexOrder.VAE
IdDatom = tuple[int, int, int]
Node = tuple[Batch, int, int] | dict[int, Any] | int  # a batch's key range, or a layer node
Leaves = tuple[Ints, tuple[Ids, ...], Ints]  # per leaf: its prefix's row, suffix, weight


class DatomBatch:
    """One consolidated Z-set of datoms in the four index orders, built and merged together:
    EAV and VAE hold the leaves, AEV and AVE point into them (:class:`PairBatch`)."""

    __slots__ = ("orders",)

    def __init__(self, eav: Batch, vae: Batch, aev: PairBatch | None = None,
                 ave: PairBatch | None = None) -> None:
        """From the leaf orders; the pair orders are sorted from them unless given."""
        self.orders: dict[IndexOrder, Batch] = {
            EAV: eav, AEV: aev or PairBatch(eav), AVE: ave or PairBatch(vae), VAE: vae}

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """Every order's arrays, named ``ORDER.array``: what :meth:`from_arrays` takes."""
        return {f"{order.name}.{name}": array for order, batch in self.orders.items()
                for name, array in batch.arrays().items()}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> DatomBatch:
        """The batch :meth:`arrays` gave, nothing sorted: a mapped file of them is a batch
        read in place (a built index of Spark's state)."""
        by_order: dict[IndexOrder, dict[str, npt.NDArray[Any]]] = {o: {} for o in INDEX_ORDERS}
        for key, array in arrays.items():
            order, name = key.split(".")
            by_order[IndexOrder[order]][name] = array
        eav, vae = Batch.from_arrays(by_order[EAV]), Batch.from_arrays(by_order[VAE])
        return cls(eav, vae, PairBatch.over(eav, by_order[AEV]), PairBatch.over(vae, by_order[AVE]))

    @classmethod
    def build(cls, e: Ids, a: Ids, v: Ids, w: Ints | None = None) -> DatomBatch | None:
        """Sort and consolidate; None when nothing is left."""
        (e, a, v), w = consolidate(*sorted_triples(e, a, v, w))
        if not len(e):
            return None
        (v_, a_, e_), w_ = sorted_triples(v, a, e, w)
        return cls(Batch(e, a, v, w), Batch(v_, a_, e_, w_))

    def __len__(self) -> int:
        return len(self.orders[EAV])

    @property
    def nbytes(self) -> int:
        return sum(batch.nbytes for batch in self.orders.values())

    @staticmethod
    def merged(batches: Sequence[DatomBatch]) -> DatomBatch | None:
        """The batches' sum consolidated: EAV's and VAE's sorted runs merged and equal
        datoms summed, so both drop the same zeros.  Sets' triples are sorted as packed keys
        (:func:`sorted_triples`: 0.07 s for 10^7, where the stable sort of runs took 0.06 s
        in memory the process had used before and 0.4 s in fresh memory, as a Spark task's
        first merge is); weighted ones by a stable sort of runs, linear in their number."""
        merged = []
        for order in (EAV, VAE):
            parts = [batch.orders[order].columns() for batch in batches]
            c0, c1, c2 = (np.concatenate([part[i] for part in parts]) for i in range(3))
            if all(part[3] is None for part in parts):
                (c0, c1, c2), weights = consolidate(*sorted_triples(c0, c1, c2, None))
            else:
                weights = np.concatenate([np.ones(len(part[0]), np.int64) if part[3] is None
                                          else part[3] for part in parts])
                perm = sort_order(c0, c1, c2)
                (c0, c1, c2), weights = consolidate((c0[perm], c1[perm], c2[perm]),
                                                    weights[perm])
            if not len(c0):
                return None
            merged.append(Batch(c0, c1, c2, weights))
        eav, vae = merged
        return DatomBatch(eav, vae)


@dataclass(frozen=True, slots=True)
class Located:
    """Prefixes found in a spine's sources: per source batch, each prefix's node as a range
    (``lo == hi``: absent) at level ``depth``."""

    depth: int
    rows: int
    nodes: list[tuple[Batch, Ints, Ints]]


class SpineArrangement:
    """The four indexes of a Z-set of datom ids as a spine; ``update`` and
    ``update_columns`` are the only writers."""

    __slots__ = ("_by_order", "_compaction", "_compactor", "_holder_views", "_holders",
                 "_layer_batch", "_layer_negative", "_layer_rows", "_read", "_readers",
                 "_summed", "_summed_keys", "batches", "compact_from", "layer", "layer_limit",
                 "nonnegative", "small_node")

    def __init__(self, layer_limit: int = 4096, nonnegative: bool = False,
                 compact_from: int | None = None, compactor: Executor | None = None,
                 small_node: int = SMALL_NODE) -> None:
        """``nonnegative``: the caller promises the Z-set never has a negative weight (a
        set or a multiset; the sources may), which makes reads across sources cheaper.
        ``small_node``: a prefix whose node has at most this many keys is read whole
        (``small``; 0: only an empty one, the tests' general path).
        ``compact_from``: from this many datoms, the batches are merged into one in the
        background whenever the newer ones hold an eighth of the oldest (None: never), on
        ``compactor`` (by default one thread shared by every spine)."""
        self.nonnegative = nonnegative
        self.small_node = small_node
        self.compact_from = compact_from
        self._compactor = compactor or _COMPACTOR
        self._compaction: tuple[int, Future[DatomBatch | None]] | None = None
        self._readers = 0  # threads reading at once (see shared_reads): nothing adopted
        self.batches: list[DatomBatch] = []  # largest (oldest) first
        self._by_order: dict[IndexOrder, list[Batch]] = {order: [] for order in INDEX_ORDERS}
        self._holders = {order: np.zeros(0, np.uint16) for order in _MAJOR.values()}
        # read through memoryviews: an item is a Python int, without a NumPy call
        self._holder_views = {order: holders.data for order, holders in self._holders.items()}
        self.layer = MemoryArrangement()
        self.layer_limit = layer_limit
        self._layer_rows = 0  # datoms written to the layer since it was last frozen (a bound)
        self._layer_negative = False  # whether a negative weight was written since then
        self._layer_batch: tuple[int, DatomBatch | None] = (-1, None)  # (layer version, batch)
        self._read: dict[tuple[IndexOrder, Sequence[int]], list[Node]] = {}  # see _nodes
        self._summed: dict[tuple[IndexOrder, Sequence[int]], dict[int, int]] = {}  # propose
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
        batches, busy = self.batches, 0 if self._compaction is None else self._compaction[0]
        while len(batches) > busy + 1 and (merge_all or len(batches) > _MAX_BATCHES
                                           or len(batches[-2]) <= 2 * len(batches[-1])):
            newest = batches.pop()
            merged = DatomBatch.merged([batches.pop(), newest])
            first = min(first, len(batches))
            if merged is not None:
                batches.append(merged)
        if len(batches) > _MAX_BATCHES:  # the compacted ones and as many new: wait for it
            self._adopt(wait=True)
            return self._push(None)
        self._reindex(first)
        self._compact_in_background()

    def _reindex(self, first: int) -> None:
        self._by_order = {order: [b.orders[order] for b in self.batches]
                          for order in INDEX_ORDERS}
        for order in _MAJOR.values():
            self._holders[order] = _holders(self._holders[order], self._by_order[order], first)
            self._holder_views[order] = self._holders[order].data

    # -- background compaction -----------------------------------------------------------

    def compact_idle(self) -> None:
        """The owner has nothing else to do: start merging every batch into one when the
        newer ones hold a 64th of the oldest (not the eighth a write waits for), so the
        ticks after the idle time search one batch (ticks of 1,000 on 10^6 edges, thread
        CPU: 11.5 ms on batches of 900,000 + 100,000, 8.9 ms on one).  Not for less: a
        merge rewrites the oldest batch, so the newer ones must pay for it."""
        self._adopt()
        self._compact_in_background(share=64)

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

    def compact_for_scan(self) -> None:
        """A full evaluation is about to read the whole spine: merge the batches first, and
        wait, when the idle trigger would (the newer batches hold a 64th of the oldest).  A
        bootstrap reads every batch at every level, and beside a running merge it shares
        the cores with it: the triangle over 10^7 edges took 32.5 s right after a load
        (five batches, a merge running), 9.3 s on one batch, which the merge made in 1.3 s."""
        self.settle()  # a merge running started from older batches: the rest after it
        self.compact_idle()
        self.settle()

    def _compact_in_background(self, share: int = 8) -> None:
        """Merge every batch into one on the compaction thread, when the spine is large and
        the newer batches hold a ``share``-th of the oldest: a batch read then searches one
        batch, not O(log n) (ticks of 1,000 on 10^7 datoms: ~35% less).  The merge is a
        sum, so the Z-set is the same before and after; NumPy's sorts and copies release
        the GIL, so it runs beside the ticks on another core."""
        batches = self.batches
        if (self.compact_from is None or self._compaction is not None or len(batches) < 2
                or sum(map(len, batches)) < self.compact_from
                or share * sum(map(len, batches[1:])) < len(batches[0])):
            return
        self._compaction = (len(batches), self._compactor.submit(DatomBatch.merged,
                                                                  list(batches)))

    def _adopt(self, wait: bool = False) -> None:
        """Put a finished (``wait``: the running) compaction's batch in place of the batches
        it merged, the oldest ones (newer batches never merge into them meanwhile).  Writes
        and reads adopt it as soon as it is done, so the old batches are not kept alive
        beside it (a read that found nodes in them before still holds them, and they sum to
        the same)."""
        if self._compaction is None or not (wait or self._compaction[1].done()):
            return
        count, future = self._compaction
        self._compaction = None
        merged = future.result()
        self.batches[:count] = [] if merged is None else [merged]
        self._forget()
        self._reindex(0)

    @contextmanager
    def shared_reads(self) -> Iterator[None]:
        """Batch reads from several threads at once: the layer frozen into its batch first,
        and no finished compaction adopted until the block ends (it would replace the
        batches and holders' bits a read in another thread is going through).  No write
        may happen meanwhile."""
        self._adopt()
        for order in INDEX_ORDERS:
            self._indexes(order)
        self._readers += 1
        try:
            yield
        finally:
            self._readers -= 1

    def settle(self) -> None:
        """Wait for a running background compaction and adopt its batch (tests, snapshots)."""
        self._adopt(wait=True)

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

    # -- one prefix ----------------------------------------------------------------------

    def count(self, order: IndexOrder, prefix: Sequence[int]) -> int:
        """How many keys follow ``prefix`` (``len(trie[k0]...)``), ``len(prefix) <= 2``."""
        sums = self._summed.get((order, prefix))
        if sums is not None or (sums := self.small(order, prefix)) is not None:
            return len(sums)
        nodes, depth = self._nodes(order, prefix), len(prefix)
        if len(nodes) == 1:
            node = nodes[0]
            return node[0].count(depth, node[1], node[2]) if isinstance(node, tuple) else len(
                node)  # type: ignore[arg-type]
        if self._positive(nodes):  # the keys' union, as arrays: a node may hold millions
            return len(sorted_distinct(np.concatenate([_keys(node, depth) for node in nodes])))
        return len(self._propose(nodes, depth))

    def estimate(self, order: IndexOrder, prefix: Sequence[int]) -> int:
        """:meth:`count` or more: the sources' counts added (a key in several is counted in
        each, a retracted one still counted), without reading a large node whole — what
        GenericJoin needs to pick a proposer.  A small node is read whole (exact)."""
        sums = self._summed.get((order, prefix))
        if sums is not None or (sums := self.small(order, prefix)) is not None:
            return len(sums)
        depth, total = len(prefix), 0
        for node in self._nodes(order, prefix):
            total += node[0].count(depth, node[1], node[2]) if isinstance(node, tuple) else len(
                node)  # type: ignore[arg-type]
        return total

    def propose(self, order: IndexOrder, prefix: Sequence[int]) -> dict[int, int]:
        """Each key following ``prefix`` with the summed weight of the datoms under it —
        read-only: remembered until the next write, since one prefix is read whole many
        times in a tick (a delete's support checks read a hub's successors once per
        candidate, ~120 keys each time on the power-law closure)."""
        key = (order, prefix)
        sums = self._summed.get(key)
        if sums is None:
            sums = self._remember(key, self._propose(self._nodes(order, prefix), len(prefix)))
        return sums

    def small(self, order: IndexOrder, prefix: Sequence[int]) -> dict[int, int] | None:
        """:meth:`propose` when it is remembered or the node is small (read whole now: at
        most ``small_node`` keys in all its sources), else None.  Every verb on a small
        node then reads one dict, as the dict tries did: its size is the count, its keys
        intersect in C, a whole datom's weight is its entry under its two-key prefix
        (a single-edge tick reads ~5 prefixes ~15 times); GenericJoin asks it first
        (``SpineExtender.small``).  Read-only, like :meth:`propose`'s."""
        key = (order, prefix)
        sums = self._summed.get(key)
        if sums is not None:
            return sums
        if self._compaction is not None and not self._readers:
            self._adopt()
        if len(prefix) == 2 and (sums := self._small_pair(order, prefix)) is not None:
            return self._remember(key, sums)
        nodes = self._read.get(key) or self._find_nodes(order, prefix)
        if len(nodes) == 1 and type(nodes[0]) is tuple:  # one batch holds it: most prefixes
            batch, lo, hi = nodes[0]
            if hi - lo <= self.small_node:
                return self._remember(key, batch.sums(len(prefix), lo, hi))
        elif sum(map(_size, nodes)) <= self.small_node:
            return self._remember(key, self._propose(nodes, len(prefix)))
        self._keep(key, nodes)
        return None

    def _small_pair(self, order: IndexOrder, prefix: Sequence[int]) -> dict[int, int] | None:
        """:meth:`small` of a two-key prefix in the common case, read in one step: the
        holders' bits name one batch at most, the node is small (else None: the general
        path).  Its keys are leaves, so the layer's leaves under it (a tick's retraction
        of a datom loaded long ago) add to the batch's, zeros dropped, exactly on any
        spine.  A single-edge tick's first reads are such (``_find_nodes``' list of
        sources and its layer walk cost more)."""
        if order is AEV or order is AVE:
            order, prefix = _MAJOR[order], (prefix[1], prefix[0])
        k0, k1 = prefix
        layer = self.layer.tries[order].get(k0) if self._layer_rows else None
        written = None if layer is None else layer.get(k1)
        size = 0 if written is None else len(written)
        holders = self._holder_views[order]
        bits = holders[k0] if 0 <= k0 < len(holders) else 0
        if bits & (bits - 1) or size > self.small_node:  # several batches, or a large node
            return None
        if not bits:
            return {} if written is None else dict(written)
        batch = self._by_order[order][bits.bit_length() - 1]
        lo, hi = batch.node(prefix)
        if hi - lo + size > self.small_node:
            return None
        sums = batch.sums(2, lo, hi)
        return sums if written is None else add_into(sums, written)

    def _remember(self, key: tuple[IndexOrder, Sequence[int]],
                  sums: dict[int, int]) -> dict[int, int]:
        """Keep a prefix's proposals until the next write (at most ``_SUMMED_MEMO`` keys)."""
        if len(sums) <= _SUMMED_MEMO:
            if self._summed_keys + len(sums) > _SUMMED_MEMO:
                self._summed.clear()
                self._summed_keys = 0
            self._summed[key] = sums
            self._summed_keys += len(sums)
        return sums

    def _propose(self, nodes: list[Node], depth: int) -> dict[int, int]:
        if len(nodes) <= 1:
            return _sums(nodes[0], depth) if nodes else {}
        if self.nonnegative or self._positive(nodes):
            out: dict[int, int] = {}
            for node in nodes:
                add_into(out, _sums(node, depth))
            return out  # add_into drops zeros
        return _group(_leaves(nodes, depth))

    def intersect(self, order: IndexOrder, prefix: Sequence[int],
                  candidates: Mapping[int, int]) -> dict[int, int]:
        """The candidates following ``prefix``, each weight times the summed weight under it."""
        sums = self._summed.get((order, prefix))
        if sums is None and (sums := self.small(order, prefix)) is None:
            nodes, depth = self._nodes(order, prefix), len(prefix)
            if sum(map(_size, nodes)) <= 8 * len(candidates) or (  # reading whole costs less
                    len(nodes) > 1 and not self._positive(nodes) and not self.nonnegative):
                sums = self.propose(order, prefix)
            else:
                return self._search(nodes, depth, candidates)
        # the keys' intersection in C, then a product for each key both hold
        return {x: candidates[x] * sums[x] for x in candidates.keys() & sums.keys()}

    def _search(self, nodes: list[Node], depth: int,
                candidates: Mapping[int, int]) -> dict[int, int]:
        """:meth:`intersect` over large nodes: a binary search per candidate in each."""
        out: dict[int, int] = {}
        for x, w in candidates.items():
            found = [s for node in nodes if (s := _below(node, depth, x)) is not None]
            if found:
                total = sum(found)
                if total or not self.nonnegative:  # nonnegative: 0 = retractions emptied it
                    out[x] = w * total
        return out

    def weight(self, order: IndexOrder, prefix: Sequence[int]) -> int:
        """The summed weight of the datoms under ``prefix`` (a whole datom: its weight, read
        from its two-key prefix's proposals when that node is small)."""
        if len(prefix) == 3:
            if order is AEV or order is AVE:
                order, prefix = _MAJOR[order], (prefix[1], prefix[0], prefix[2])
            pair = (order, prefix[:2])
            sums = self._summed.get(pair)
            if sums is not None or (sums := self.small(*pair)) is not None:
                return sums.get(prefix[2], 0)
        return sum(_weight(node, len(prefix)) for node in self._nodes(order, prefix))

    def enumerate(self, order: IndexOrder, prefix: Sequence[int]) -> dict[tuple[int, ...], int]:
        """Every datom under ``prefix``, as its suffix in ``order``, with its weight."""
        return _leaves(self._nodes(order, prefix), len(prefix))

    def _forget(self) -> None:
        """Drop what reads remembered: a write changes the nodes and their sums."""
        self._read.clear()
        self._summed.clear()
        self._summed_keys = 0

    def _nodes(self, order: IndexOrder, prefix: Sequence[int]) -> list[Node]:
        """The sources' non-empty nodes under ``prefix``, remembered until the next write:
        GenericJoin reads a prefix several times in a tick (``estimate`` to rank the
        extenders, then ``propose`` or ``intersect``; one delta term after another)."""
        if self._compaction is not None and not self._readers:
            self._adopt()
        key = (order, prefix)
        nodes = self._read.get(key)
        if nodes is None:
            nodes = self._keep(key, self._find_nodes(order, prefix))
        return nodes

    def _keep(self, key: tuple[IndexOrder, Sequence[int]], nodes: list[Node]) -> list[Node]:
        if len(self._read) >= _READ_MEMO:
            self._read.clear()
        self._read[key] = nodes
        return nodes

    def _find_nodes(self, order: IndexOrder, prefix: Sequence[int]) -> list[Node]:
        if (order is AEV or order is AVE) and len(prefix) >= 2:
            order, prefix = _MAJOR[order], (prefix[1], prefix[0], *prefix[2:])
        nodes: list[Node] = []
        indexes = self._by_order[order]
        if prefix and (order is EAV or order is VAE):  # the batches the holders' bits name
            holders, key = self._holder_views[order], prefix[0]
            bits = holders[key] if 0 <= key < len(holders) else 0
            if bits & (bits - 1) == 0:  # one batch at most: most keys
                indexes = [indexes[bits.bit_length() - 1]] if bits else []
            else:
                indexes = [index for i, index in enumerate(indexes) if bits >> i & 1]
        for index in indexes:
            lo, hi = index.node(prefix)
            if lo < hi:
                nodes.append((index, lo, hi))
        if self._layer_rows:
            node: Any = self.layer.tries[order]
            for key in prefix:
                node = node.get(key)
                if node is None:
                    return nodes
            if node:
                nodes.append(node)
        return nodes

    def _positive(self, nodes: list[Node]) -> bool:
        return all(node[0].positive if isinstance(node, tuple) else not self._layer_negative
                   for node in nodes)

    # -- a batch of prefixes -------------------------------------------------------------

    def counts(self, order: IndexOrder, prefixes: Ints) -> Ints:
        """:meth:`count` of each row of ``prefixes`` (shape ``(n, depth)``)."""
        located = self.locate(order, prefixes)
        total = self.estimates_at(located)  # exact where one source holds the prefix
        sources = sum((hi > lo for _, lo, hi in located.nodes), np.zeros(len(prefixes), np.int64))
        several = np.flatnonzero(sources > 1)
        if len(several):
            rows, suffix, _ = self._located_leaves(located, several)
            first = starts(rows, suffix[0])
            total[several] = np.bincount(rows[first], minlength=len(several))
        return total

    def locate(self, order: IndexOrder, prefixes: Ints) -> Located:
        """Each row's node in each source: the first step of every batch read, done once
        for the verbs a GenericJoin level makes on the same prefixes."""
        depth = prefixes.shape[1]
        major, searched = _major(order, prefixes)
        return Located(depth, len(prefixes), [(index, *index.ranges(searched))
                                              for index in self._indexes(major, searched)])

    def estimates_at(self, located: Located) -> Ints:
        """:meth:`estimate` of each located prefix: the sources' counts added, no leaves
        read."""
        total = np.zeros(located.rows, np.int64)
        for index, lo, hi in located.nodes:
            total += np.where(hi > lo, index.width0 if located.depth == 0 else hi - lo, 0)
        return total

    def lookups_at(self, located: Located, rows: Ints, keys: Ids) -> tuple[Mask, Ints]:
        """For candidates ``(row, key)`` (a located prefix each): whether some source
        holds the key under the row's prefix, and the weight under it summed over the
        sources — on a nonnegative spine, present exactly when that sum is positive."""
        total, held = np.zeros(len(keys), np.int64), np.zeros(len(keys), bool)
        for index, lo, hi in located.nodes:
            found, sums = index.below_many(located.depth, lo[rows], hi[rows],
                                           keys.astype(np.int64))
            total += sums
            held |= found
        return held, total

    def proposals(self, order: IndexOrder, prefixes: Ints) -> tuple[Ints, Ids, Ints]:
        """:meth:`propose` of each row: ``(row, key, summed weight)`` sorted by row, key."""
        return self.proposals_at(self.locate(order, prefixes), None)

    def proposals_at(self, located: Located, rows: Ints | None) -> tuple[Ints, Ids, Ints]:
        """:meth:`proposals` of the located prefixes ``rows`` (None: all), numbered as
        positions in ``rows``."""
        found, suffix, weights = self._located_leaves(located, rows)
        first = starts(found, suffix[0])
        sums = np.add.reduceat(weights, first) if len(first) else weights
        return found[first], suffix[0][first], sums

    def intersections(self, order: IndexOrder, prefixes: Ints, rows: Ints, keys: Ids,
                      weights: Ints) -> tuple[Ints, Ids, Ints]:
        """:meth:`intersect` of candidates ``(row, key, weight)`` (a row of ``prefixes``
        each): the candidates found, their weights times the summed weight under them.  A
        binary search per candidate in each source; the sums add up, and a candidate is
        present when a source holds it, unless several do and one has a retraction: then
        its row's leaves decide."""
        located = self.locate(order, prefixes)
        total = np.zeros(len(keys), np.int64)
        holders, mixed = np.zeros(len(keys), np.int64), np.zeros(len(keys), bool)
        for index, lo, hi in located.nodes:
            found, sums = index.below_many(located.depth, lo[rows], hi[rows],
                                           keys.astype(np.int64))
            total += sums
            holders += found
            if not index.positive:
                mixed |= found
        present = holders > 0
        mixed &= holders > 1
        if mixed.any():
            redo = np.unique(rows[mixed])
            found_rows, found_keys, _ = self.proposals_at(located, redo)
            listed = (redo[found_rows] << 32) | found_keys
            wanted = (rows[mixed].astype(np.int64) << 32) | keys[mixed]
            present[mixed] = np.isin(wanted, listed)
        return rows[present], keys[present], weights[present] * total[present]

    def weights(self, order: IndexOrder, prefixes: Ints) -> Ints:
        """:meth:`weight` of each row."""
        rows, _, weights = self._leaves(order, prefixes)
        out = np.zeros(len(prefixes), np.int64)
        np.add.at(out, rows, weights)
        return out

    def enumerations(self, order: IndexOrder, prefixes: Ints) -> Leaves:
        """:meth:`enumerate` of each row: ``(row, suffix columns, weight)``, sorted."""
        return self._leaves(order, prefixes)

    def _indexes(self, order: IndexOrder, prefixes: Ints | None = None) -> list[Batch]:
        """The sources as batches: the layer frozen on demand (cached until it changes).
        With ``prefixes`` of an entity- or value-major order, only the batches the holders'
        bits say hold one of their first keys: a small batch of recent ticks is mostly
        skipped with one NumPy call instead of a search per level."""
        if self._compaction is not None and not self._readers:
            self._adopt()
        indexes = list(self._by_order[order])
        if prefixes is not None and prefixes.shape[1] and len(indexes) > 1 and (
                order is EAV or order is VAE):
            holders, keys = self._holders[order], prefixes[:, 0]
            keys = keys[(keys >= 0) & (keys < len(holders))]
            bits = int(np.bitwise_or.reduce(holders[keys])) if len(keys) else 0
            indexes = [index for i, index in enumerate(indexes) if bits >> i & 1]
        if self._layer_rows:
            if self._layer_batch[0] != self.layer.version:
                self._layer_batch = (self.layer.version, DatomBatch.build(*self._layer_columns()))
            if self._layer_batch[1] is not None:
                indexes.append(self._layer_batch[1].orders[order])
        return indexes

    def _leaves(self, order: IndexOrder, prefixes: Ints) -> Leaves:
        """The consolidated datoms under each row of ``prefixes``, sorted by row, suffix."""
        return self._located_leaves(self.locate(order, prefixes), None)

    def _located_leaves(self, located: Located, rows: Ints | None) -> Leaves:
        """:meth:`_leaves` of the located prefixes ``rows`` (None: all)."""
        depth = located.depth
        parts: list[Leaves] = [index.expand(depth, *((lo, hi) if rows is None else
                                                     (lo[rows], hi[rows])))
                               for index, lo, hi in located.nodes]
        if not parts:
            return np.zeros(0, np.int64), tuple(np.zeros(0, np.int32) for _ in range(3 - depth)), (
                np.zeros(0, np.int64))
        if len(parts) == 1:
            return parts[0]
        found = np.concatenate([p[0] for p in parts])
        suffix = tuple(np.concatenate([p[1][i] for p in parts]) for i in range(3 - depth))
        weights = np.concatenate([p[2] for p in parts])
        perm = sort_order(found, *suffix)  # the parts are sorted runs: merged in linear time
        columns, summed = consolidate((found[perm], *(c[perm].astype(np.int64) for c in suffix)),
                                      weights[perm])
        return (columns[0], tuple(c.astype(np.int32) for c in columns[1:]),
                np.ones(len(columns[0]), np.int64) if summed is None else summed)


# AEV's node under (a, e) holds the leaves EAV's holds under (e, a), in the same order (and
# AVE's under (a, v), VAE's under (v, a)): read those from the entity- or value-major order,
# whose level 0 is dense in a large batch (two array reads, not a binary search over a).
_MAJOR = {AEV: EAV, AVE: VAE}


_COMPACTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spine-compaction")
_READ_MEMO = 4096  # prefixes whose nodes a spine remembers until its next write
_SUMMED_MEMO = 1 << 12  # keys of the proposals a spine remembers until its next write
_MAX_BATCHES = 16  # a bit each in _holders; geometric sizes reach it at 2^15 × layer_limit


def _holders(mask: npt.NDArray[np.uint16], indexes: list[Batch],
             first: int) -> npt.NDArray[np.uint16]:
    """Per level-0 key of an entity- or value-major order (an id), bit ``i`` set when batch
    ``i`` holds it: a one-prefix read visits those batches only, not a binary search in
    each (2 bytes per id and order).  Bits from ``first`` on are redone from ``indexes``."""
    keys = [index.level0() for index in indexes[first:]]
    size = max([len(mask), *(int(k.max()) + 1 for k in keys if len(k))])
    if size > len(mask):
        mask = np.concatenate([mask, np.zeros(size - len(mask), np.uint16)])
    mask &= np.uint16((1 << first) - 1)
    for i, present in enumerate(keys, first):
        mask[present] |= np.uint16(1 << i)
    return mask


def _major(order: IndexOrder, prefixes: Ints) -> tuple[IndexOrder, Ints]:
    """:data:`_MAJOR` for a batch of prefixes."""
    if prefixes.shape[1] < 2 or order not in _MAJOR:
        return order, prefixes
    return _MAJOR[order], prefixes[:, [1, 0, *range(2, prefixes.shape[1])]]


# -- reading one node, a batch's key range or a layer trie node ----------------------------


def _sums(node: Node, depth: int) -> dict[int, int]:
    if isinstance(node, tuple):
        return node[0].sums(depth, node[1], node[2])
    assert isinstance(node, dict)
    if depth == 2:
        return dict(node)
    return {key: _weight(sub, depth + 1) for key, sub in node.items()}


def _keys(node: Node, depth: int) -> Ints:
    """The node's keys as an array."""
    if isinstance(node, tuple):
        batch, lo, hi = node
        return (batch.keys2[lo:hi] if depth == 2 else batch.level(depth, lo, hi)[0]).astype(
            np.int64)
    assert isinstance(node, dict)
    return np.fromiter(node, np.int64, len(node))


def _size(node: Node) -> int:
    """How many keys the node holds."""
    if isinstance(node, tuple):
        return node[2] - node[1]
    assert isinstance(node, dict)
    return len(node)


def _weight(node: Node, depth: int) -> int:
    if isinstance(node, tuple):
        return node[0].weight(depth, node[1], node[2])
    if depth == 3:
        return node  # type: ignore[return-value]
    assert isinstance(node, dict)
    return sum(_weight(sub, depth + 1) for sub in node.values())


def _below(node: Node, depth: int, key: int) -> int | None:
    if isinstance(node, tuple):
        return node[0].below(depth, node[1], node[2], key)
    assert isinstance(node, dict)
    sub = node.get(key)
    return None if sub is None else _weight(sub, depth + 1)


def _leaves(nodes: list[Node], depth: int) -> dict[tuple[int, ...], int]:
    """The nodes' datoms added up (suffixes from ``depth``), zeros dropped."""
    out: dict[tuple[int, ...], int] = {}
    for node in nodes:
        if isinstance(node, tuple):
            _, suffix, weights = node[0].expand(depth, np.array([node[1]]), np.array([node[2]]))
            keys = (list(zip(*(c.tolist() for c in suffix), strict=True)) if suffix else
                    [()] * len(weights))
            add_into(out, dict(zip(keys, weights.tolist(), strict=True)))
        else:
            add_into(out, _dict_leaves(node, depth))
    return out


def _dict_leaves(node: Node, depth: int) -> dict[tuple[int, ...], int]:
    if depth == 3:
        return {(): node}  # type: ignore[dict-item]
    assert isinstance(node, dict)
    return {(key, *rest): w for key, sub in node.items()
            for rest, w in _dict_leaves(sub, depth + 1).items()}


def _group(leaves: dict[tuple[int, ...], int]) -> dict[int, int]:
    """Leaves summed by their first key."""
    out: dict[int, int] = {}
    for suffix, w in leaves.items():
        out[suffix[0]] = out.get(suffix[0], 0) + w
    return out
