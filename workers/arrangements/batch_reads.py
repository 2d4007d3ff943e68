"""A spine's reads of a batch of prefixes (the vectorised executor's): the same verbs as
:mod:`workers.arrangements.prefix_reads`, each over an array of prefixes at once.

Every read first *locates* the prefixes — each row's node in each source, as key ranges
(:class:`Located`) — once for the verbs a GenericJoin level makes on them.  The layer is read
as a batch, frozen on demand and cached until it changes; with prefixes of an entity- or
value-major order, only the batches the holders' bits name are searched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workers.arrangements.batch import Batch, Ids, Ints, Mask, consolidate, sort_order, starts
from workers.arrangements.cursor import major_prefixes
from workers.arrangements.datom_batch import DatomBatch
from workers.arrangements.keys import IndexOrder
from workers.arrangements.spine_state import SpineState

EAV, VAE = IndexOrder.EAV, IndexOrder.VAE
Leaves = tuple[Ints, tuple[Ids, ...], Ints]  # per leaf: its prefix's row, suffix, weight
# A batch holding the first keys of at most 1 / SCREENED of a located frame's rows is
# searched for those rows only (BatchReads._screened).
SCREENED = 4


@dataclass(frozen=True, slots=True)
class Located:
    """Prefixes found in a spine's sources: per source batch, each prefix's node as a range
    (``lo == hi``: absent) at level ``depth``."""

    depth: int
    rows: int
    nodes: list[tuple[Batch, Ints, Ints]]


class BatchReads(SpineState):
    """The verbs over a batch of prefixes."""

    __slots__ = ()

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
        major, searched = major_prefixes(order, prefixes)
        nodes = []
        for index, rows in self._screened(major, searched):
            if rows is None:
                nodes.append((index, *index.ranges(searched)))
                continue
            lo, hi = np.zeros(len(searched), np.int64), np.zeros(len(searched), np.int64)
            lo[rows], hi[rows] = index.ranges(searched[rows])
            nodes.append((index, lo, hi))
        return Located(depth, len(prefixes), nodes)

    def sieve(self, order: IndexOrder, depth: int) -> None:
        """Make now the sieves that lookups under prefixes of ``depth`` keys of ``order``
        ask (:meth:`Batch.sieve`): a query registering, so that its first tick does not."""
        major, _ = major_prefixes(order, np.zeros((0, depth), np.int64))
        for index in self._by_order[major]:
            if index.sieved(depth):
                index.sieve(depth)

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
        needles = (rows.astype(np.int64) << 32) + keys
        ordered = not (needles[1:] <= needles[:-1]).any()  # proposals are: sorted, distinct
        for index, lo, hi in located.nodes:
            among = index.held_among(located.depth, lo, hi, needles) if ordered else None
            if among is not None:
                at, sums = among
                total[at] += sums
                held[at] = True
                continue
            found, sums = index.below_many(located.depth, lo, hi, keys, rows)
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
        if len(suffix) == 1:  # the leaves themselves: one per (row, key) already
            return found, suffix[0], weights
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
        """:meth:`weight` of each row.  Whole datoms are looked up as their last key under
        their two-key prefix (:meth:`lookups_at`: sieved, no leaves read): a tick checks
        whether each of its datoms is present so (normalising, ``distinct``'s checks)."""
        if prefixes.shape[1] == 3:
            located = self.locate(order, prefixes[:, :2])
            return self.lookups_at(located, np.arange(len(prefixes)),
                                   prefixes[:, 2].astype(np.int32))[1]
        rows, _, weights = self._leaves(order, prefixes)
        out = np.zeros(len(prefixes), np.int64)
        np.add.at(out, rows, weights)
        return out

    def enumerations(self, order: IndexOrder, prefixes: Ints) -> Leaves:
        """:meth:`enumerate` of each row: ``(row, suffix columns, weight)``, sorted."""
        return self._leaves(order, prefixes)

    def _indexes(self, order: IndexOrder) -> list[Batch]:
        """The sources as batches: the layer frozen on demand (cached until it changes)."""
        if self._compaction is not None and not self._readers:
            self._adopt()
        indexes = list(self._by_order[order])
        if self._layer_rows:
            if self._layer_batch[0] != self.layer.version:
                self._layer_batch = (self.layer.version, DatomBatch.build(*self._layer_columns()))
            if self._layer_batch[1] is not None:
                indexes.append(self._layer_batch[1].orders[order])
        return indexes

    def _screened(self, order: IndexOrder, prefixes: Ints) -> list[tuple[Batch, Ints | None]]:
        """The sources that may hold one of ``prefixes``, each with the rows to search in it
        (None: all).  For an entity- or value-major order the holders' bits name, per row,
        the batches that hold its first key: a batch holding none is skipped, and one
        holding at most ``1 / SCREENED`` of them is searched for those rows only (a tick of
        1,000 at a tenth of LiveJournal: a small batch of recent ticks holds a few percent
        of a frame's first keys, and its search per row was 13% of the step)."""
        indexes = self._indexes(order)
        if not prefixes.shape[1] or len(indexes) < 2 or not (order is EAV or order is VAE):
            return [(index, None) for index in indexes]
        holders, keys = self._holders[order], prefixes[:, 0]
        inside = (keys >= 0) & (keys < len(holders))
        bits = np.where(inside, holders[np.where(inside, keys, 0)], 0)
        union = int(np.bitwise_or.reduce(bits)) if len(bits) else 0
        screened: list[tuple[Batch, Ints | None]] = []
        for i, index in enumerate(indexes):  # the layer's batch, if any, is past the bits
            if i >= len(self._by_order[order]):
                screened.append((index, None))
            elif union >> i & 1:
                rows = np.flatnonzero(bits & (1 << i))
                screened.append((index, rows if SCREENED * len(rows) <= len(keys) else None))
        return screened

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
        if depth == 2:
            return _inserted(parts)
        found = np.concatenate([p[0] for p in parts])
        suffix = tuple(np.concatenate([p[1][i] for p in parts]) for i in range(3 - depth))
        weights = np.concatenate([p[2] for p in parts])
        perm = sort_order(found, *suffix)  # the parts are sorted runs: merged in linear time
        columns, summed = consolidate((found[perm], *(c[perm].astype(np.int64) for c in suffix)),
                                      weights[perm])
        return (columns[0], tuple(c.astype(np.int32) for c in columns[1:]),
                np.ones(len(columns[0]), np.int64) if summed is None else summed)


def _inserted(parts: list[Leaves]) -> Leaves:
    """The leaves of several sources under two-key prefixes (one suffix key), each part
    sorted by row and key, consolidated: the other parts' leaves summed into the biggest
    part's or put in its order (a tick's recent batches hold a few under the rows the
    loaded batch holds ~10^5: no sort of them all, no gathers of them by a permutation)."""
    big = max(range(len(parts)), key=lambda i: len(parts[i][0]))
    rows, (keys,), weights = parts[big]
    others = [part for i, part in enumerate(parts) if i != big and len(part[0])]
    if not others:
        return rows, (keys,), weights
    small = np.concatenate([(r << 32) + k for r, (k,), _ in others])
    small_weights = np.concatenate([w for _, _, w in others])
    order = np.argsort(small, kind="stable")
    small, small_weights = small[order], small_weights[order]
    first = starts(small)
    small, small_weights = small[first], np.add.reduceat(small_weights, first)
    packed = (rows << 32) + keys
    at = np.searchsorted(packed, small)
    hit = at < len(packed)
    hit[hit] = packed[at[hit]] == small[hit]
    weights = weights.copy()
    weights[at[hit]] += small_weights[hit]
    miss = np.flatnonzero(~hit)
    if len(miss):  # the new leaves' places in the merged order, the old ones' around them
        slots = at[miss] + np.arange(len(miss))
        old = np.ones(len(packed) + len(miss), bool)
        old[slots] = False
        packed = _placed(packed, old, slots, small[miss])
        weights = _placed(weights, old, slots, small_weights[miss])
    keep = np.flatnonzero(weights)
    if len(keep) < len(weights):
        packed, weights = packed[keep], weights[keep]
    return packed >> 32, ((packed & 0xFFFFFFFF).astype(np.int32),), weights


def _placed(column: Ints, old: Mask, slots: Ints, new: Ints) -> Ints:
    """``column`` at the places ``old`` marks, ``new`` at ``slots``."""
    out = np.empty(len(old), column.dtype)
    out[old] = column
    out[slots] = new
    return out
