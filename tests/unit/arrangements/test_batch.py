"""A batch: a consolidated Z-set of id triples as three levels of sorted columns, a prefix's
subtree a slice; level 0 dense when that is smaller."""

from __future__ import annotations

from bisect import bisect_left

import numpy as np
import pytest

from workers.arrangements import batch as batch_module
from workers.arrangements.batch import (
    Batch,
    PairBatch,
    consolidate,
    search,
    segment_search,
    sort_order,
    sorted_distinct,
    sorted_triples,
)

TRIPLES = [(0, 1, 5), (0, 1, 7), (0, 2, 5), (1, 1, 7), (3, 2, 2)]


def _batch(triples: list[tuple[int, int, int]], weights: list[int] | None = None,
           shift: int = 0) -> Batch:
    c0, c1, c2 = (np.array([t[i] + (shift if i == 0 else 0) for t in triples], np.int32)
                  for i in range(3))
    return Batch(c0, c1, c2, None if weights is None else np.array(weights, np.int64))


def test_a_prefix_is_a_range_of_keys_and_the_leaves_under_it_are_contiguous() -> None:
    batch = _batch(TRIPLES)
    assert batch.keys0 is None  # ids 0..3, three present: dense is smaller
    assert batch.node((0,)) == (0, 2) and batch.keys1[0:2].tolist() == [1, 2]
    assert batch.node((0, 1)) == (0, 2) and batch.keys2[0:2].tolist() == [5, 7]
    assert batch.node((0, 1, 7)) == (1, 2)
    for absent in [(2,), (9,), (0, 3), (0, 1, 6)]:
        lo, hi = batch.node(absent)
        assert lo == hi
    assert batch.weight(1, *batch.node((0,))) == 3
    assert batch.count(0, *batch.node(())) == 3  # the dense level's absent id 2 not counted


def test_sparse_level_zero_when_the_ids_are_far_apart() -> None:
    batch = _batch(TRIPLES, shift=1000)
    assert batch.keys0 is not None and batch.keys0.tolist() == [1000, 1001, 1003]
    assert batch.node((1003,)) == (3, 4) and batch.node((3,)) == (0, 0)
    keys, sums = batch.level(0, *batch.node(()))
    assert (keys.tolist(), sums.tolist()) == ([1000, 1001, 1003], [3, 1, 1])


def test_a_set_has_no_weight_column_and_sums_count_leaves() -> None:
    doubled = sorted(TRIPLES * 2)
    (c0, _, _), weights = consolidate(tuple(np.array([t[i] for t in doubled], np.int32)
                                            for i in range(3)), np.array([1, -1] * 5))
    assert len(c0) == 0 and weights is None  # everything cancelled
    columns, weights = consolidate(tuple(np.array([t[i] for t in TRIPLES], np.int32)
                                         for i in range(3)), np.ones(5, np.int64))
    assert weights is None and len(columns[0]) == 5
    batch = _batch(TRIPLES, [1, 2, -1, 1, 1])
    assert not batch.positive
    keys, sums = batch.level(1, *batch.node((0,)))
    assert (keys.tolist(), sums.tolist()) == ([1, 2], [3, -1])
    assert batch.below(0, *batch.node(()), 0) == 2 and batch.below(0, *batch.node(()), 2) is None


def test_columns_give_back_the_triples() -> None:
    for shift in (0, 1000):
        c0, c1, c2, weights = _batch(TRIPLES, shift=shift).columns()
        assert list(zip(c0.tolist(), c1.tolist(), c2.tolist(), strict=True)) == [
            (e + shift, a, v) for e, a, v in TRIPLES]
        assert weights is None


def test_segment_search_is_bisect_left_within_each_row() -> None:
    keys = np.array([1, 3, 5, 2, 4], np.int32)
    pos, found = segment_search(keys, np.array([0, 0, 3, 3]), np.array([3, 3, 5, 3]),
                                np.array([3, 4, 4, 4]))
    assert pos.tolist() == [1, 2, 4, 3] and found.tolist() == [True, False, True, False]


def test_many_rows_over_few_keys_search_the_bands_as_bisect_left_within_each_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Many rows over few keys (hubs) take one search of the level's bands, outside a scan
    too: nodes repeated, adjacent and empty; targets present, absent, below, above and
    unknown (-1)."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 40, 50)
    batch = _batch([(node, int(key), 0) for node, size in enumerate(sizes.tolist())
                    for key in np.sort(rng.choice(100, size, replace=False)).tolist()])
    node = rng.integers(0, 50, 2000)
    lo, hi = batch.ranges(node[:, None])  # whole nodes; an empty node's is (0, 0)
    targets = rng.integers(-1, 101, 2000)
    monkeypatch.setattr(batch_module, "segment_search", None)  # the halving search would raise
    pos, found = batch._search(1, lo, hi, targets)
    column = batch.keys1.tolist()
    want = [bisect_left(column, t, a, b) for a, b, t in zip(lo.tolist(), hi.tolist(),
                                                             targets.tolist(), strict=True)]
    assert pos.tolist() == want
    assert found.tolist() == [p < b and column[p] == t for p, b, t in zip(
        want, hi.tolist(), targets.tolist(), strict=True)]


def test_segment_search_is_bisect_left_on_random_ranges() -> None:
    """Ranges (within sorted nodes) empty, of one key and long, overlapping, at the column's
    end; targets present, absent, below and above."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(0, 70, 40)
    keys = np.concatenate([np.sort(rng.choice(200, size, replace=False))
                           for size in sizes.tolist()]).astype(np.int32)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    node = rng.integers(0, 40, 3000)
    lo = bounds[node] + (rng.random(3000) * sizes[node] / 2).astype(np.int64)
    hi = np.maximum(lo, bounds[node + 1] - (rng.random(3000) * sizes[node] / 2).astype(np.int64))
    targets = rng.integers(-1, 202, 3000)
    column = keys.tolist()
    for top in (hi, np.minimum(hi, lo + 1)):  # some ranges long, or one key at most each
        pos, found = segment_search(keys, lo, top, targets)
        want = [bisect_left(column, t, a, b) for a, b, t in zip(
            lo.tolist(), top.tolist(), targets.tolist(), strict=True)]
        assert found.tolist() == [p < b and column[p] == t for p, b, t in zip(
            want, top.tolist(), targets.tolist(), strict=True)]
        assert found.any() and not found.all()
        if top is hi:  # (of ranges of one key at most, the position only where found)
            assert pos.tolist() == want
        assert pos[found].tolist() == np.array(want)[found].tolist()


@pytest.mark.parametrize("sieve_keys", [batch_module.SIEVE_KEYS, 0])
def test_candidates_of_a_frame_s_rows_are_found_as_in_their_own_nodes(
        monkeypatch: pytest.MonkeyPatch, sieve_keys: int) -> None:
    """``below_many`` with ``rows`` (one node per frame row) answers as with each candidate's
    own node, whichever way it searches: candidates sorted and distinct (proposals) or not,
    many or few against the keys under the rows; sieved first or not."""
    monkeypatch.setattr(batch_module, "SIEVE_KEYS", sieve_keys)
    rng = np.random.default_rng(5)
    triples = sorted({(int(e), 1, int(v)) for e, v in zip(rng.integers(0, 30, 2000),
                                                           rng.integers(0, 120, 2000),
                                                           strict=True)})
    batch = _batch(triples)
    for frame_rows, per_row in ((400, 3), (5, 120), (60, 40)):
        lo, hi = batch.ranges(np.stack([rng.integers(-1, 35, frame_rows),
                                        np.ones(frame_rows, np.int64)], axis=1))
        rows = np.repeat(np.arange(frame_rows), per_row)
        keys = np.concatenate([np.sort(rng.choice(130, per_row, replace=False))
                               for _ in range(frame_rows)]).astype(np.int32)
        for order in (np.arange(len(rows)), rng.permutation(len(rows))):
            want = batch.below_many(2, lo[rows[order]], hi[rows[order]], keys[order])
            got = batch.below_many(2, lo, hi, keys[order], rows[order])
            assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
            assert want[0].any()
    assert bool(batch._sieves) == (sieve_keys == 0)  # kept, and counted in its bytes
    assert batch.nbytes - _batch(triples).nbytes == sum(
        bits.nbytes for bits in batch._sieves.values())


def test_overlapping_ranges_are_searched_by_halving() -> None:
    keys = np.array([1, 3, 5, 7], np.int32)
    lo, hi, targets = np.array([0, 1, 0]), np.array([4, 3, 4]), np.array([5, 3, 7])
    pos, found = segment_search(keys, lo, hi, targets)
    assert pos.tolist() == [2, 1, 3] and found.all()


def test_an_attribute_major_batch_reads_its_leaves_from_the_entity_major_one() -> None:
    eav = _batch(TRIPLES, [1, 2, -1, 1, 1])  # (e, a, v) sorted
    aev = PairBatch(eav)
    assert aev.sums(0, *aev.node(())) == {1: 4, 2: 0}  # attributes, the weights under each
    assert aev.keys1.tolist() == [0, 1, 0, 3]  # entities under a=1, then under a=2
    lo, hi = aev.node((1,))
    assert aev.sums(1, lo, hi) == {0: 3, 1: 1} and aev.weight(1, lo, hi) == 4
    assert aev.below(1, lo, hi, 1) == 1 and aev.below(1, lo, hi, 3) is None
    _, (e, v), weights = aev.expand(1, np.array([lo]), np.array([hi]))
    assert list(zip(e.tolist(), v.tolist(), weights.tolist(), strict=True)) == [
        (0, 5, 1), (0, 7, 2), (1, 7, 1)]
    assert aev.nbytes < eav.nbytes  # no leaves of its own


def test_sort_order_packs_small_ids_and_sorts_large_ones_lexicographically() -> None:
    rng = np.random.default_rng(0)
    for top in (8, 2**30):  # 3 bits each fit one int64 key; 30 bits each do not
        columns = [rng.integers(0, top, 200).astype(np.int32) for _ in range(3)]
        perm = sort_order(*columns)
        rows = list(zip(*(c[perm].tolist() for c in columns), strict=True))
        assert rows == sorted(zip(*(c.tolist() for c in columns), strict=True))


@pytest.mark.parametrize("high", [1, 3, 2**20, 2**31 - 1])  # the last: lexicographic
@pytest.mark.parametrize("weighted", [False, True])
def test_sorted_triples_are_the_triples_in_order_each_with_its_weight(
        high: int, weighted: bool) -> None:
    rng = np.random.default_rng(high)
    c0, c1, c2 = (rng.integers(0, high, 500).astype(np.int32) for _ in range(3))
    w = rng.integers(1, 9, 500) if weighted else None
    (s0, s1, s2), sw = sorted_triples(c0, c1, c2, w)
    assert all(s.dtype == np.int32 for s in (s0, s1, s2))
    rows = list(zip(c0.tolist(), c1.tolist(), c2.tolist(),
                    [1] * 500 if w is None else w.tolist(), strict=True))
    got = list(zip(s0.tolist(), s1.tolist(), s2.tolist(),
                   [1] * 500 if sw is None else sw.tolist(), strict=True))
    assert [r[:3] for r in got] == sorted(r[:3] for r in rows)
    assert sorted(got) == sorted(rows)  # each triple kept its weight
    empty = np.zeros(0, np.int32)
    assert [len(c) for c in sorted_triples(empty, empty, empty, None)[0]] == [0, 0, 0]


@pytest.mark.parametrize("size", [0, 1, 2, 1_000])
def test_sorted_distinct_is_numpys_unique(size: int) -> None:
    values = np.random.default_rng(size).integers(0, 50, size).astype(np.int32)
    found = sorted_distinct(values)
    assert found.dtype == np.int32 and found.tolist() == np.unique(values).tolist()


def test_a_search_of_many_needles_finds_what_searchsorted_finds() -> None:
    """Needles in any order, repeated, absent, beyond both ends, already sorted: each
    position is ``np.searchsorted``'s, on either side (above SORTED_NEEDLES: sorted first)."""
    rng = np.random.default_rng(3)
    table = np.sort(rng.integers(0, 5000, 20_000))
    for needles in (rng.integers(-10, 5010, 3000), np.sort(rng.integers(0, 5000, 3000)),
                    rng.integers(0, 50, 10), np.repeat(rng.integers(0, 5000, 600), 5)):
        for side in ("left", "right"):
            assert search(table, needles, side).tolist() == np.searchsorted(
                table, needles, side).tolist()


def test_many_rows_search_a_level_through_its_bands_as_node_by_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefixes of every depth, present and absent, and keys under them, on a dense and a
    sparse level 0 and on an attribute-major batch: read through the levels' bands (during a
    scan, every search: BANDS_ROWS 0) as through the halving search."""
    rng = np.random.default_rng(11)
    triples = sorted({(int(e), int(a), int(v)) for e, a, v in zip(
        rng.integers(0, 60, 3000), rng.integers(0, 4, 3000), rng.integers(0, 80, 3000),
        strict=True)})
    for shift in (0, 10_000):
        batch = _batch(triples, shift=shift)
        for each in (batch, PairBatch(batch)):
            answers = []
            for bands_rows in (10**9, 0):
                monkeypatch.setattr(batch_module, "BANDS_ROWS", bands_rows)
                each.scanning(bands_rows == 0)
                asked = np.random.default_rng(shift)  # the same questions both ways
                got = []
                for depth in (0, 1, 2) if each is batch else (0, 1):
                    prefixes = np.stack([asked.integers(-1, 90, 500) + shift * (i == 0)
                                         for i in range(depth)] or [np.zeros(500, np.int64)],
                                        axis=1)[:, :depth]
                    lo, hi = each.ranges(prefixes)
                    found, sums = each.below_many(depth, lo, hi, asked.integers(-1, 90, 500))
                    got.append((lo.tolist(), hi.tolist(), found.tolist(), sums.tolist()))
                answers.append(got)
            assert answers[0] == answers[1]
            assert any(any(found) for _, _, found, _ in answers[0])  # not only absent keys


def test_sorted_candidates_are_found_by_the_keys_under_their_rows() -> None:
    """``held_among`` (each key under the rows looked up among sorted distinct candidates)
    answers as ``below_many`` does, at depth 1 and 2 and with weights; None when the rows'
    nodes hold as many keys as there are candidates."""
    rng = np.random.default_rng(7)
    triples = sorted({(int(e), int(a), int(v)) for e, a, v in zip(
        rng.integers(0, 40, 300), rng.integers(0, 4, 300), rng.integers(0, 50, 300),
        strict=True)})
    batch = _batch(triples, rng.choice([-2, 1, 3], len(triples)).tolist())
    for depth in (1, 2):
        lo, hi = batch.ranges(np.stack([rng.integers(-1, 45, 30), rng.integers(0, 4, 30)],
                                       axis=1)[:, :depth])
        rows = np.repeat(np.arange(30), 60)
        keys = np.tile(np.arange(60), 30)
        needles = (rows.astype(np.int64) << 32) + keys
        at, sums = batch.held_among(depth, lo, hi, needles)  # type: ignore[misc]
        found, want = batch.below_many(depth, lo[rows], hi[rows], keys)
        assert at.tolist() == np.flatnonzero(found).tolist() and len(at)
        assert sums.tolist() == want[found].tolist()
        few = np.flatnonzero(rows == int(np.argmax(hi - lo)))[:1]
        assert batch.held_among(depth, lo, hi, needles[few]) is None
