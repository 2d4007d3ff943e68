"""One index order's immutable batch: a consolidated Z-set of id triples as a columnar trie.

The triples ``(k0, k1, k2)`` (a datom permuted by the order) are sorted and stored as three
levels of compressed sparse rows::

    keys0[i]  its level-1 keys are keys1[bounds0[i]:bounds0[i+1]]
    keys1[j]  its level-2 keys are keys2[bounds1[j]:bounds1[j+1]]
    keys2[l]  the leaf, weighing weights[l] (no column when every weight is 1: a set)

so the subtree under any prefix is a slice, and the leaves under it a contiguous range.
Level 0 is *dense* when that is smaller (``keys0`` is None and key ``k`` is row ``k``):
ids are dense, so an entity-major or value-major index of a whole database costs 4 bytes per
id and a lookup is two array reads instead of a binary search.

Invariants: keys strictly increase within a row; no row is empty except the dense level's
absent ids; no leaf weighs 0 (consolidated).  So "a key is in the batch" means "some triple
under it has a non-zero weight", as in the dict tries.

A :class:`PairBatch` (AEV, AVE) keeps only levels 0 and 1 and points each level-1 entry at
the entity- or value-major batch's entry with the same leaves (measured: the leaves are 4
bytes per datom per order, a fifth of a graph's spine).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from workers.arrangements.sieve import Bits, maybe, sieve_of

Ids = npt.NDArray[np.int32]
Ints = npt.NDArray[np.int64]
Offsets = npt.NDArray[np.int32] | npt.NDArray[np.int64]
Keys = Ids | Ints  # keys searched for: ids, or ids widened
Mask = npt.NDArray[np.bool_]
Column = TypeVar("Column", bound=npt.NDArray[np.integer[Any]])


def offsets(positions: npt.NDArray[np.integer[Any]], end: int) -> Offsets:
    """Row starts plus the end, as int32 when they fit (half the bytes)."""
    bounds = np.append(positions, end)
    return bounds.astype(np.int32) if end < 2**31 else bounds.astype(np.int64)


INT32 = np.iinfo(np.int32)
# Needles of a search at least this many are searched in sorted order (below, the sort costs
# more than it saves).
SORTED_NEEDLES = 1024
# A level of this many keys or more is sieved (:mod:`sieve`) before its lookups halve.
SIEVE_KEYS = 1 << 16
# A search of this many rows or more goes through the level's bands (:meth:`Batch.bands`)
# during a scan, which keeps them from search to search.
BANDS_ROWS = 4096


def search(table: npt.NDArray[np.integer[Any]], needles: npt.NDArray[np.integer[Any]],
           side: str = "left") -> Ints:
    """``np.searchsorted`` of many needles, made in increasing order: NumPy starts each
    search where the previous one ended when the needles increase, so a sorted run touches
    the table in order instead of missing the caches on every step (a million random needles
    in 10^7 keys: 931 ms, against 65 ms sorted, the sort included; 3.6x at 10^5 in 10^6).
    Int64 needles in an int32 table are searched as int32 (clipped: the order stays): NumPy
    would otherwise cast the whole table to the needles' type, each search: 150 us for 100
    needles in a recent batch's 320,000 entities, against 7 (ticks of 1,000 at LiveJournal's
    size once its recent batches held 1.1 million datoms: 31.8 -> 28.4 ms)."""
    if table.dtype == np.int32 and needles.dtype != np.int32:
        needles = np.clip(needles, INT32.min, INT32.max).astype(np.int32)
    if len(needles) < SORTED_NEEDLES or not (needles[1:] < needles[:-1]).any():
        return np.searchsorted(table, needles, side)  # type: ignore[call-overload,no-any-return]
    order = np.argsort(needles)
    at = np.empty(len(needles), np.int64)
    at[order] = np.searchsorted(table, needles[order], side)  # type: ignore[call-overload]
    return at


def starts(*columns: npt.NDArray[np.integer[Any]]) -> Ints:
    """Positions where the sorted tuple of ``columns`` changes (the first row included)."""
    n = len(columns[0])
    new = np.zeros(n, bool)
    if n:
        new[0] = True
        for column in columns:
            new[1:] |= column[1:] != column[:-1]
    return np.flatnonzero(new)


def consolidate(columns: tuple[Column, ...],
                w: Ints | None) -> tuple[tuple[Column, ...], Ints | None]:
    """Sorted tuples with duplicates summed and zero weights dropped; ``None`` weights when
    every weight is 1 (a set needs no column)."""
    first = starts(*columns)
    if not len(first) or (w is None and len(first) == len(columns[0])):
        return columns, None
    summed = np.add.reduceat(np.ones(len(columns[0]), np.int64) if w is None else w, first)
    keep = first[summed != 0]
    summed = summed[summed != 0]
    return tuple(c[keep] for c in columns), None if (summed == 1).all() else summed


def sort_order(*columns: npt.NDArray[np.integer[Any]]) -> Ints:
    """The stable permutation sorting the rows of non-negative ``columns``: one 64-bit key
    per row when the columns' bit widths add up to 63 or less (a graph's attribute ids take
    a bit or two), else a lexicographic sort.  Stable sorting is a merge of runs, so sorting
    sorted parts put end to end is linear (a spine merge, consolidating sources)."""
    key = _packed(columns, _widths(columns))
    return np.lexsort(columns[::-1]) if key is None else np.argsort(key, kind="stable")


def sorted_triples(c0: Ids, c1: Ids, c2: Ids, w: Ints | None
                   ) -> tuple[tuple[Ids, Ids, Ids], Ints | None]:
    """The triples of non-negative ids sorted, equal ones in any order (:func:`consolidate`
    sums them).  A set's triples are sorted as packed 64-bit keys, then unpacked: NumPy's
    vectorised sort took 0.07 s for 10^7 random keys here, where the stable argsort took
    1.2 s and the three gathers after it 0.3 s; weighted ones go through a permutation."""
    widths = _widths((c0, c1, c2))
    shift1, shift0 = widths[2], widths[1] + widths[2]
    key = _packed((c0, c1, c2), widths)
    if key is not None and w is None:
        key.sort()
        s0, s1, s2 = (np.empty(len(key), c.dtype) for c in (c0, c1, c2))
        np.right_shift(key, shift0, out=s0, casting="unsafe")
        np.right_shift(key, shift1, out=s1, casting="unsafe")
        s1 &= (1 << widths[1]) - 1
        np.bitwise_and(key, (1 << shift1) - 1, out=s2, casting="unsafe")
        return (s0, s1, s2), None
    perm = np.lexsort((c2, c1, c0)) if key is None else np.argsort(key)
    return (c0[perm], c1[perm], c2[perm]), None if w is None else w[perm]


def _widths(columns: Sequence[npt.NDArray[np.integer[Any]]]) -> list[int]:
    """Each non-negative column's bit width."""
    return [int(c.max()).bit_length() if len(c) else 0 for c in columns]


def _packed(columns: Sequence[npt.NDArray[np.integer[Any]]], widths: list[int]
            ) -> Ints | None:
    """Each row's columns as one int64 key, the first in the high bits (None when their
    ``widths`` add up to more than 63), shifted and or-ed into one array in place: a
    temporary per column would be memory a process has not used before, which costs its
    page faults (a Spark task's first merge of 10^7 datoms spent 0.9 s of 2.0 in such
    casts and temporaries)."""
    if sum(widths) > 63:
        return None
    key = columns[0].astype(np.int64)
    for column, width in zip(columns[1:], widths[1:], strict=True):
        key <<= width
        key |= column
    return key


def sorted_distinct(values: Column) -> Column:
    """The distinct values of a 1-d integer array, sorted: ``np.unique`` by sorting, which
    NumPy 2's no longer does for values alone — its hash table took 4.8 s for 10^7 int32
    ids here (0.44 s for 10^6), sorting them and dropping repeats 0.04 s."""
    ordered = np.sort(values)
    return ordered[starts(ordered)]  # type: ignore[return-value]


def set_weights(count: int) -> Ints:
    """The weights of a set of ``count`` datoms: a read-only view of one 1, not a column."""
    return np.broadcast_to(np.ones(1, np.int64), (count,))


def sorted_sum(e: Ids, a: Ids, v: Ids, w: Ints) -> tuple[Ids, Ids, Ids, Ints]:
    """The datoms in EAV order, equal ones summed, zeros dropped, their weights a column."""
    order = sort_order(e, a, v)
    (e, a, v), summed = consolidate((e[order], a[order], v[order]), w[order])
    return e, a, v, np.ones(len(e), np.int64) if summed is None else summed


SUMMED_ROWS = 1 << 18  # datoms summed at once when a whole database is read (a snapshot)


def summed_by_entity(parts: Sequence[tuple[Ids, Ids, Ids, Ints]],
                     rows: int = SUMMED_ROWS) -> Iterator[tuple[Ids, Ids, Ids, Ints]]:
    """The sum of ``parts`` (``(e, a, v, w)`` columns, each sorted by entity) in EAV order —
    equal datoms added, zeros dropped — one range of entities at a time (about ``rows``
    datoms each), each range sliced out of every part: no more than a range is summed at
    once (a whole database written out: a snapshot)."""
    parts = [part for part in parts if len(part[0])]
    ranges = -(-sum(len(part[0]) for part in parts) // rows)
    if not ranges:
        return
    # Cut points between ranges: quantiles of the entities (a sample of each part).
    sample = np.sort(np.concatenate([part[0][::max(1, len(part[0]) // (4 * ranges))]
                                     for part in parts]))
    cuts = np.unique(sample[(np.arange(1, ranges) * len(sample)) // ranges])
    bounds = [0, *(int(c) for c in cuts), np.iinfo(np.int32).max + 1]
    for low, high in pairwise(bounds):
        pieces = [[c[start:stop] for c in part] for part in parts
                  for start, stop in [part[0].searchsorted([low, high]).tolist()]]
        summed = sorted_sum(*(np.concatenate([piece[i] for piece in pieces]) for i in range(4)))
        if len(summed[0]):
            yield summed


def bands_of(bounds: Offsets, keys: Ids) -> Ints:
    """The keys of the nodes ``bounds`` spans (``len(bounds) - 1`` of them, the level's
    node bounds or a slice of them) as ``node start · 2^32 + key``, sorted: one array of 8
    bytes a key allocated, not three."""
    table = np.repeat(bounds[:-1].astype(np.int64) << 32, np.diff(bounds))
    table += keys[bounds[0]:bounds[-1]]
    return table


def spans(first: Ints, end: Ints) -> tuple[Ints, Ints]:
    """The ranges ``first[i]:end[i]`` end to end: each position's range, and the position."""
    sizes = end - first
    owner = np.repeat(np.arange(len(first)), sizes)
    return owner, np.arange(len(owner)) + np.repeat(first - (np.cumsum(sizes) - sizes), sizes)


class Batch:
    """One order's sorted columns; every read is a slice or a binary search."""

    __slots__ = ("_b0", "_b1", "_bands", "_k0", "_k1", "_k2", "_sieves", "_w", "bounds0",
                 "bounds1", "keys0", "keys1", "keys2", "positive", "weights", "width0")

    def __init__(self, c0: Ids, c1: Ids, c2: Ids, weights: Ints | None) -> None:
        """From triples already sorted and consolidated (see :func:`consolidate`)."""
        pairs = starts(c0, c1)
        self._upper_levels(c0[pairs], c1[pairs])
        self._leaves(offsets(pairs, len(c2)), c2, weights)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> Batch:
        """The batch :meth:`arrays` gave, without sorting anything (they may be mapped)."""
        batch = cls.__new__(cls)
        batch._levels(arrays.get("keys0"), arrays["bounds0"], arrays["keys1"],
                      int(arrays["width0"][0]))
        batch._leaves(arrays["bounds1"], arrays["keys2"], arrays.get("weights"))
        return batch

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """The batch's arrays by name, what :meth:`from_arrays` takes (a file of them is a
        built index: :mod:`workers.executors.spark.state`)."""
        return {**self._level_arrays(), "bounds1": self.bounds1, "keys2": self.keys2,
                **({} if self.weights is None else {"weights": self.weights})}

    def _level_arrays(self) -> dict[str, npt.NDArray[Any]]:
        return {**({} if self.keys0 is None else {"keys0": self.keys0}),
                "bounds0": self.bounds0, "keys1": self.keys1,
                "width0": np.array([self.width0], np.int64)}

    def _leaves(self, bounds1: Offsets, keys2: Ids, weights: Ints | None) -> None:
        self.bounds1 = bounds1
        self.keys2, self.weights = keys2, weights
        self.positive = weights is None or bool((weights > 0).all())
        self._b1, self._k2 = self.bounds1.data, keys2.data
        self._w = None if weights is None else weights.data

    def _upper_levels(self, p0: Ids, p1: Ids) -> None:
        """Levels 0 and 1 from the sorted distinct ``(k0, k1)`` pairs: one level-1 *entry*
        per pair."""
        firsts = starts(p0)
        keys0 = p0[firsts]
        bounds0 = offsets(firsts, len(p0))
        width0 = len(firsts)
        dense = width0 and int(keys0[-1]) + 2 <= 2 * width0 + 1  # dense is smaller
        if dense:  # row k's start: the entries of keys below k, counted (4*10^6 ids:
            # 0.01-0.09 s, against 0.08-0.12 s for a search per id)
            counts = np.bincount(p0, minlength=int(keys0[-1]) + 1)
            bounds0 = offsets(np.concatenate(([0], np.cumsum(counts[:-1]))), len(p0))
        self._levels(None if dense else keys0, bounds0, p1, width0)

    def _levels(self, keys0: Ids | None, bounds0: Offsets, keys1: Ids, width0: int) -> None:
        self.keys0, self.bounds0, self.keys1, self.width0 = keys0, bounds0, keys1, width0
        # memoryviews: item reads and bisect on them return Python ints (no NumPy scalars)
        self._k0 = None if keys0 is None else keys0.data
        self._k1, self._b0 = keys1.data, bounds0.data
        self._bands: dict[int, Ints] | None = None  # kept during a scan (a dict), else not
        self._sieves: dict[int, Bits] = {}  # by level, made by the first lookups that need one

    def bands(self, depth: int) -> Ints:
        """Level ``depth``'s keys as ``node start · 2^32 + key``: sorted (a node's keys
        increase, and so do the nodes' starts), so one search finds a key in its node.
        During a scan (:meth:`scanning`) kept for the next search (8 bytes a key)."""
        table = None if self._bands is None else self._bands.get(depth)
        if table is None:
            keys = (self.keys0, self.keys1, self.keys2)[depth]
            assert keys is not None
            table = keys.astype(np.int64) if depth == 0 else bands_of(self._bounds(depth), keys)
            if self._bands is not None:
                self._bands[depth] = table
        return table

    def _bounds(self, depth: int) -> Offsets:
        """The node bounds of level ``depth`` (1 or 2): its keys' spans by their parents."""
        return self.bounds0 if depth == 1 else self.bounds1

    def sieved(self, depth: int) -> bool:
        """Whether lookups at ``depth`` ask the level's :meth:`sieve` first: a level of
        ``SIEVE_KEYS`` keys (the dense level 0 needs none)."""
        keys = (self.keys0, self.keys1, self.keys2)[depth]
        return depth > 0 and keys is not None and len(keys) >= SIEVE_KEYS

    def sieves(self) -> tuple[int, ...]:
        """The levels whose :meth:`sieve` has been made."""
        return tuple(self._sieves)

    def sieve(self, depth: int) -> Bits:
        """Level ``depth``'s (1 or 2) :mod:`sieve`, made the first time it is asked for and
        kept (the batch never changes)."""
        bits = self._sieves.get(depth)
        if bits is None:
            keys: Ids = (self.keys0, self.keys1, self.keys2)[depth]  # type: ignore[assignment]
            bits = self._sieves[depth] = sieve_of(self._bounds(depth), keys, SUMMED_ROWS)
        return bits

    def scanning(self, on: bool) -> None:
        """A scan starts (its searches keep the bands they make) or ends (they are freed)."""
        self._bands = {} if on else None

    def __len__(self) -> int:
        return len(self.keys2)

    @property
    def nbytes(self) -> int:
        arrays = (self.keys0, self.bounds0, self.keys1, self.bounds1, self.keys2, self.weights,
                  *self._sieves.values())
        return sum(a.nbytes for a in arrays if a is not None)

    def columns(self) -> tuple[Ids, Ids, Ids, Ints | None]:
        """Every triple, sorted, with its weights."""
        rows1 = np.diff(self.bounds1)
        return (np.repeat(self.entry_keys0(), rows1),
                np.repeat(self.keys1, rows1), self.keys2, self.weights)

    # -- where the leaves of level-1 entries are (a PairBatch's are in another batch) ----

    def entry_leaves(self, entries: Ints) -> tuple[Ints, Ints]:
        """The leaf range ``first:end`` of each level-1 entry."""
        return (self.bounds1[entries].astype(np.int64),
                self.bounds1[entries + 1].astype(np.int64))

    def entries_weight(self, lo: int, hi: int) -> int:
        """The summed weight of the leaves of entries ``lo:hi`` (contiguous here)."""
        return self.weight(2, self._b1[lo], self._b1[hi])

    # -- one prefix ----------------------------------------------------------------------

    def node(self, prefix: Sequence[int]) -> tuple[int, int]:
        """The range, at level ``len(prefix)``, of the keys under ``prefix`` (empty: lo == hi);
        at level 3 the leaf itself."""
        depth, b0 = len(prefix), self._b0
        if not depth:
            return 0, len(b0) - 1
        i = prefix[0]
        if self._k0 is None:  # dense: the key is the row
            if not 0 <= i < len(b0) - 1:
                return 0, 0
        else:
            k0 = self._k0
            i = bisect_left(k0, i)
            if i == len(k0) or k0[i] != prefix[0]:
                return 0, 0
        lo, hi = b0[i], b0[i + 1]
        if depth == 1:
            return lo, hi
        k, keys = prefix[1], self._k1
        i = bisect_left(keys, k, lo, hi)
        if i == hi or keys[i] != k:
            return 0, 0
        if depth == 2:
            return self._b1[i], self._b1[i + 1]
        lo, hi, k, keys = self._b1[i], self._b1[i + 1], prefix[2], self._k2
        i = bisect_left(keys, k, lo, hi)
        return (0, 0) if i == hi or keys[i] != k else (i, i + 1)

    def count(self, depth: int, lo: int, hi: int) -> int:
        """How many keys the node holds (the dense level's absent ids not counted)."""
        return self.width0 if depth == 0 else hi - lo

    def sums(self, depth: int, lo: int, hi: int) -> dict[int, int]:
        """The node's keys, each with the summed weight of the leaves under it."""
        if depth == 2:  # the leaves themselves: no NumPy call on the one-prefix path
            if hi - lo == 1:  # half a graph's nodes: no slice either
                return {self._k2[lo]: 1 if self._w is None else self._w[lo]}
            leaves = self._k2[lo:hi].tolist()
            if self._w is None:
                return dict.fromkeys(leaves, 1)
            return dict(zip(leaves, self._w[lo:hi].tolist(), strict=True))
        keys, sums = self.level(depth, lo, hi)
        return dict(zip(keys.tolist(), sums.tolist(), strict=True))

    def level(self, depth: int, lo: int, hi: int) -> tuple[Ids, Ints]:
        """:meth:`sums` as two arrays, for a node at depth 0 or 1."""
        first_entry = self._b0[lo] if depth == 0 else lo
        entries = np.arange(first_entry, self._b0[hi] if depth == 0 else hi)
        first, end = self.entry_leaves(entries)
        sums = end - first if self.weights is None else self._span_sums(first, end)
        if depth == 1:
            return self.keys1[lo:hi], sums
        rows = self.bounds0[lo:hi + 1]
        present = np.flatnonzero(rows[1:] > rows[:-1])
        keys = (present.astype(np.int32) + lo if self.keys0 is None else
                self.keys0[lo:hi][present])
        return keys, np.add.reduceat(sums, rows[present] - first_entry) if len(present) else (
            np.zeros(0, np.int64))

    def below(self, depth: int, lo: int, hi: int, key: int) -> int | None:
        """The summed weight under ``key`` in the node at ``depth`` (None: ``key`` absent)."""
        if depth == 0:
            lo, hi = self.node((key,))
            return None if lo == hi else self.entries_weight(lo, hi)
        keys = self._k1 if depth == 1 else self._k2
        i = bisect_left(keys, key, lo, hi)
        if i == hi or keys[i] != key:
            return None
        return self.entries_weight(i, i + 1) if depth == 1 else self.weight(2, i, i + 1)

    def weight(self, depth: int, lo: int, hi: int) -> int:
        """The summed weight of the leaves under the node."""
        if depth <= 1:
            return self.entries_weight(*((self._b0[lo], self._b0[hi]) if depth == 0 else (lo,
                                                                                         hi)))
        if self._w is None:
            return hi - lo
        return self._w[lo] if hi == lo + 1 else int(self.weights[lo:hi].sum())  # type: ignore[index]

    def _span_sums(self, first: Ints, end: Ints) -> Ints:
        """The summed weights of non-empty leaf ranges."""
        _, positions = spans(first, end)
        return np.add.reduceat(self.weights[positions],  # type: ignore[index]
                               np.cumsum(end - first) - (end - first))

    def level0(self) -> Ids:
        """The level-0 keys present."""
        if self.keys0 is not None:
            return self.keys0
        return np.flatnonzero(self.bounds0[1:] > self.bounds0[:-1]).astype(np.int32)

    def entry_keys0(self) -> Ids:
        """The level-0 key of every level-1 entry, in order (one linear pass)."""
        keys0 = (np.arange(len(self.bounds0) - 1, dtype=np.int32) if self.keys0 is None
                 else self.keys0)
        return np.repeat(keys0, np.diff(self.bounds0))

    def _level0_keys(self, entries: Ints) -> Ids:
        i = search(self.bounds0, entries, side="right") - 1
        return i.astype(np.int32) if self.keys0 is None else self.keys0[i]

    # -- a batch of prefixes -------------------------------------------------------------

    def ranges(self, prefixes: Ints) -> tuple[Ints, Ints]:
        """:meth:`node` for every row of ``prefixes`` (shape ``(n, depth)``)."""
        n, depth = prefixes.shape
        if depth == 0:
            return np.zeros(n, np.int64), np.full(n, len(self.bounds0) - 1, np.int64)
        k = prefixes[:, 0]
        if self.keys0 is None:
            inside = (k >= 0) & (k < len(self.bounds0) - 1)
            i = np.where(inside, k, 0)
        else:
            i = np.minimum(search(self.keys0, k), max(len(self.keys0) - 1, 0))
            inside = self.keys0[i] == k if len(self.keys0) else np.zeros(n, bool)
        lo = np.where(inside, self.bounds0[i], 0).astype(np.int64)
        hi = np.where(inside, self.bounds0[i + 1], 0).astype(np.int64)
        if depth >= 2:
            j, found = self._search(1, lo, hi, prefixes[:, 1])
            lo = np.where(found, self.bounds1[j], 0).astype(np.int64)
            hi = np.where(found, self.bounds1[np.minimum(j + 1, len(self.keys1))], 0).astype(
                np.int64)
        if depth == 3:
            j, found = self._search(2, lo, hi, prefixes[:, 2])
            lo, hi = np.where(found, j, 0), np.where(found, j + 1, 0)
        return lo, hi

    def _search(self, depth: int, lo: Ints, hi: Ints, targets: Keys) -> tuple[Ints, Mask]:
        """:func:`segment_search` of level ``depth`` in whole nodes (``lo:hi`` from
        :meth:`ranges`), or one sorted search of the level's :meth:`bands` for every row when
        the rows are many: as many as the level's keys over the halving steps (hubs read by
        many rows: the table costs a pass over the keys, O(keys + rows log keys) against
        O(rows x steps)), or BANDS_ROWS during a scan, which keeps the table."""
        keys: Ids = (self.keys0, self.keys1, self.keys2)[depth]  # type: ignore[assignment]
        steps = int((hi - lo).max()).bit_length() if len(lo) and len(keys) else 0
        if steps <= 1 or not (len(keys) <= steps * len(lo) or (
                self._bands is not None and len(lo) >= BANDS_ROWS)):
            return segment_search(keys, lo, hi, targets)
        live = lo < hi
        at = search(self.bands(depth), (lo.astype(np.int64) << 32) + targets)
        found = live & (at < hi)
        found[found] = keys[at[found]] == targets[found]
        return np.where(live, at, lo), found

    def _search_rows(self, depth: int, lo: Ints, hi: Ints, rows: Ints,
                     targets: Keys) -> tuple[Ints, Mask]:
        """:meth:`_search` of each target in the node of its row (``lo[rows]:hi[rows]``, one
        node per row of a frame; see :meth:`_search_nodes`), on a level of ``SIEVE_KEYS``
        only for the targets its :meth:`sieve` may hold (most lookups of a tick miss)."""
        if not self.sieved(depth):
            return self._search_nodes(depth, lo, hi, rows, targets)
        asked = np.flatnonzero(maybe(self.sieve(depth), lo[rows], (hi - lo)[rows], targets))
        pos, found = np.zeros(len(targets), np.int64), np.zeros(len(targets), bool)
        pos[asked], found[asked] = self._search_nodes(depth, lo, hi, rows[asked], targets[asked])
        return pos, found

    def _search_nodes(self, depth: int, lo: Ints, hi: Ints, rows: Ints,
                      targets: Keys) -> tuple[Ints, Mask]:
        """:meth:`_search_rows` without a sieve: :func:`search_rows_table` when the rows'
        nodes hold few keys (a tick's small batches), else :meth:`_search`."""
        keys: Ids = (self.keys0, self.keys1, self.keys2)[depth]  # type: ignore[assignment]
        searched = search_rows_table(keys, lo, hi, rows, targets)
        return self._search(depth, lo[rows], hi[rows], targets) if searched is None else searched

    def below_many(self, depth: int, lo: Ints, hi: Ints, keys: Keys,
                   rows: Ints | None = None) -> tuple[Mask, Ints]:
        """:meth:`below` for arrays of nodes and keys: whether each key is in its node, and
        the summed weight under it (0 when absent).  ``rows``: the node of key ``i`` is
        ``lo[rows[i]]:hi[rows[i]]`` (see :meth:`_search_rows`)."""
        if depth == 0 and self.keys0 is None:
            found = (keys >= 0) & (keys < len(self.bounds0) - 1)
            pos = np.where(found, keys, 0)
            found &= self.bounds0[pos] < self.bounds0[pos + 1]
        elif rows is None:
            pos, found = self._search(depth, lo, hi, keys)
        else:
            pos, found = self._search_rows(depth, lo, hi, rows, keys)
        out = np.zeros(len(keys), np.int64)
        out[found] = self._sums_at(depth, pos[found])
        return found, out

    def held_among(self, depth: int, lo: Ints, hi: Ints,
                   needles: Ints) -> tuple[Ints, Ints] | None:
        """Lookups of candidates given as sorted distinct ``needles``, ``row · 2^32 + key``
        (``row``: a node ``lo[row]:hi[row]`` at ``depth`` 1 or 2), when the nodes hold fewer
        keys than there are candidates (a tick's small batches: a few keys under a frame's
        rows, tens of thousands of candidates): each of those keys is looked up among the
        needles, so nothing costs per candidate.  The candidates found (positions in
        ``needles``) and the summed weight under each; None when the nodes hold more."""
        held = int((hi - lo).sum())
        if depth == 0 or held >= len(needles):
            return None
        if not held:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        owner, positions = spans(lo, hi)
        table = (owner << 32) + (self.keys1 if depth == 1 else self.keys2)[positions]
        at = np.minimum(np.searchsorted(needles, table), len(needles) - 1)
        hit = np.flatnonzero(needles[at] == table)
        return at[hit], self._sums_at(depth, positions[hit])

    def _sums_at(self, depth: int, pos: Ints) -> Ints:
        """The summed weight under each key present at ``pos`` of level ``depth``."""
        if depth == 2:
            return np.ones(len(pos), np.int64) if self.weights is None else self.weights[pos]
        if depth == 0:
            rows, entries = spans(self.bounds0[pos].astype(np.int64),
                                  self.bounds0[pos + 1].astype(np.int64))
        else:
            rows, entries = np.arange(len(pos)), pos
        first, end = self.entry_leaves(entries)
        per_entry = end - first if self.weights is None else self._span_sums(first, end)
        return np.add.reduceat(per_entry, starts(rows)) if len(rows) else per_entry

    def expand(self, depth: int, lo: Ints, hi: Ints) -> tuple[Ints, tuple[Ids, ...], Ints]:
        """The leaves under each row's node (from :meth:`ranges`): ``(row, suffix from level
        depth, weight)``, sorted by row and suffix."""
        if depth >= 2:
            rows, positions = spans(lo, hi)
            suffix: tuple[Ids, ...] = (self.keys2[positions],)[:3 - depth]
        else:
            if depth == 0:
                lo, hi = self.bounds0[lo].astype(np.int64), self.bounds0[hi].astype(np.int64)
            rows, entries = spans(lo, hi)
            owner, positions = spans(*self.entry_leaves(entries))
            rows, entries = rows[owner], entries[owner]
            suffix = (self.keys1[entries], self.keys2[positions])
            if depth == 0:
                suffix = (self._level0_keys(entries), *suffix)
        weights = (np.ones(len(rows), np.int64) if self.weights is None else
                   self.weights[positions])
        return rows, suffix, weights


class PairBatch(Batch):
    """An attribute-major order (AEV, AVE) that stores only its levels 0 and 1 and reads
    its leaves from the entity- or value-major batch (EAV, VAE) of the same datoms.

    AEV's entry ``(a, e)`` has exactly the leaves EAV's entry ``(e, a)`` has, in the same
    order, so ``pair[j]`` (the major's entry) replaces a second copy of every leaf and
    weight.  Prefixes of two keys or more are read from the major order itself
    (``SpineArrangement`` redirects them), so only nodes at depth 0 and 1 are read here.
    """

    __slots__ = ("major", "pair")

    def __init__(self, major: Batch) -> None:
        keys0 = major.entry_keys0()
        perm = sort_order(major.keys1, keys0)
        self._upper_levels(major.keys1[perm], keys0[perm])
        self._pair(perm.astype(np.int32), major)

    @classmethod
    def over(cls, major: Batch, arrays: Mapping[str, npt.NDArray[Any]]) -> PairBatch:
        """The pair batch :meth:`arrays` gave, reading its leaves from ``major``."""
        batch = cls.__new__(cls)
        batch._levels(arrays.get("keys0"), arrays["bounds0"], arrays["keys1"],
                      int(arrays["width0"][0]))
        batch._pair(arrays["pair"], major)
        return batch

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        return {**self._level_arrays(), "pair": self.pair}

    def _pair(self, pair: Ids, major: Batch) -> None:
        self.pair, self.major = pair, major
        self.keys2, self.weights, self.positive = major.keys2, major.weights, major.positive
        self._k2, self._w = major._k2, major._w

    @property
    def nbytes(self) -> int:
        arrays = (self.keys0, self.bounds0, self.keys1, self.pair, *self._sieves.values())
        return sum(a.nbytes for a in arrays if a is not None)

    def entry_leaves(self, entries: Ints) -> tuple[Ints, Ints]:
        return self.major.entry_leaves(self.pair[entries].astype(np.int64))

    def entries_weight(self, lo: int, hi: int) -> int:
        first, end = self.entry_leaves(np.arange(lo, hi))
        return int((end - first).sum() if self.weights is None else
                   self._span_sums(first, end).sum())


def search_rows_table(keys: Ids, lo: Ints, hi: Ints, rows: Ints,
                      targets: Keys) -> tuple[Ints, Mask] | None:
    """Each target's position in the node of its row (``lo[rows]:hi[rows]``) and whether
    it is there, when the rows' nodes hold fewer keys than the targets' halving steps (a
    tick's small batches: a few keys under the rows, tens of thousands of candidates):
    one sorted search of a table of those keys as ``row · 2^32 + key``; None otherwise
    (:meth:`Batch.held_among` looks the keys up among sorted candidates instead)."""
    sizes = hi - lo
    held = int(sizes.sum())
    steps = int(sizes.max()).bit_length() if len(sizes) else 0
    if not held or held > steps * len(targets):
        return None
    owner, positions = spans(lo, hi)
    table = (owner << 32) + keys[positions]
    needles = (rows.astype(np.int64) << 32) + targets
    at = np.minimum(search(table, needles), held - 1)
    return positions[at], table[at] == needles


def segment_search(keys: Ids, lo: Ints, hi: Ints, targets: Keys) -> tuple[Ints, Mask]:
    """Vectorised ``bisect_left(keys, target, lo, hi)`` per row, and whether it was found:
    every non-empty row halved together (branch-free: each step moves a row's base to its
    probe or not, and halves its length — six NumPy calls a step, where bounding both ends
    took ten) as many times as the longest range needs."""
    found = np.zeros(len(lo), bool)
    if not len(lo) or not len(keys):
        return lo, found
    longest = int((hi - lo).max())
    if longest <= 1:  # every range holds one key at most: compare it
        found = (lo < hi) & (keys[np.minimum(lo, len(keys) - 1)] == targets)
        return lo, found
    live = np.flatnonzero(hi > lo)
    if len(live) == len(lo):
        pos, found = _halved(keys, lo, hi - lo, targets, longest)
        return pos.astype(np.int64), found
    pos = lo.copy()
    pos[live], found[live] = _halved(keys, lo[live], hi[live] - lo[live], targets[live], longest)
    return pos, found


def _halved(keys: Ids, lo: Ints, sizes: Ints, targets: Keys,
            longest: int) -> tuple[Offsets, Mask]:
    """:func:`segment_search` of non-empty ranges ``lo:lo + sizes``, in int32 positions
    where the keys allow (a fifth faster than int64: half the bytes a step)."""
    end = lo + sizes
    narrow = len(keys) < 2**31
    base: Offsets = lo.astype(np.int32) if narrow else lo.copy()
    left: Offsets = sizes.astype(np.int32) if narrow else sizes.copy()
    for _ in range((longest - 1).bit_length()):  # a length n becomes ceil(n / 2)
        half = left >> 1
        probe = base + half
        np.copyto(base, probe, where=keys[probe] < targets)
        left -= half
    pos = base + (keys[base] < targets)  # the one position left, or the one after it
    found = pos < end
    found[found] = keys[pos[found]] == targets[found]
    return pos, found
