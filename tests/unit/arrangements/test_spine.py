"""The spine's writes: a small layer frozen into a batch when full, bulk writes as batches,
merged geometrically (a few batches, sizes doubling), a set compacted without weights."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from workers.arrangements import IndexOrder, compaction
from workers.arrangements import batch as batch_module
from workers.arrangements.sieve import key_nodes, maybe
from workers.arrangements.spine import SpineArrangement


def _edges(lo: int, hi: int) -> tuple[np.ndarray, ...]:
    e = np.arange(lo, hi, dtype=np.int32)
    return e, np.zeros(len(e), np.int32), (e + 1).astype(np.int32)


def test_the_layer_takes_small_writes_until_it_is_full() -> None:
    spine = SpineArrangement(layer_limit=3)
    spine.update({(1, 0, 2): 1, (2, 0, 3): 1})
    assert not spine.batches and spine.count(IndexOrder.AEV, (0,)) == 2
    spine.update({(3, 0, 4): 1})
    assert len(spine.batches) == 1 and not spine.layer.tries[IndexOrder.EAV]
    assert spine.propose(IndexOrder.AVE, (0,)) == {2: 1, 3: 1, 4: 1}


def test_bulk_writes_merge_geometrically() -> None:
    spine = SpineArrangement()
    for start in range(0, 1024, 16):
        spine.update_columns(*_edges(start, start + 16))
        sizes = [len(batch) for batch in spine.batches]
        assert all(older > 2 * newer for older, newer in pairwise(sizes))  # so O(log n) of them
    assert sum(sizes) == 1024 and len(sizes) == 3
    assert all(batch.orders[IndexOrder.EAV].weights is None for batch in spine.batches)


def test_retractions_cancel_in_merges_and_compaction_leaves_a_set() -> None:
    spine = SpineArrangement()
    spine.update_columns(*_edges(0, 100))
    spine.update({(5, 0, 6): -1, (7, 0, 8): -1})
    spine.update_columns(*_edges(100, 110))
    assert spine.count(IndexOrder.AEV, (0,)) == 108
    spine.compact()
    assert len(spine.batches) == 1 and len(spine.batches[0]) == 108
    assert all(index.weights is None for index in spine.batches[0].orders.values())
    assert spine.weight(IndexOrder.EAV, (5, 0, 6)) == 0 and spine.count(IndexOrder.EAV, (5,)) == 0


def test_a_few_candidates_are_searched_for_in_a_large_node() -> None:
    spine = SpineArrangement()
    spine.update_columns(np.zeros(100, np.int32), np.zeros(100, np.int32),
                         np.arange(0, 200, 2, dtype=np.int32))
    spine.update_columns(np.zeros(10, np.int32), np.zeros(10, np.int32),
                         np.arange(1, 20, 2, dtype=np.int32))
    spine.update({(0, 0, 7): 1, (0, 0, 301): 1})
    assert len(spine.batches) == 2
    assert spine.intersect(IndexOrder.EAV, (0, 0), {4: 3, 7: 1, 301: 2, 5: -1, 6: 1}) == {
        4: 3, 7: 2, 301: 2, 5: -1, 6: 1}
    assert spine.intersect(IndexOrder.AEV, (0, 0), {3: 1, 250: 1}) == {3: 1}


def test_a_prefix_read_whole_is_remembered_until_the_next_write() -> None:
    spine = SpineArrangement()
    spine.update({(0, 0, 1): 1, (0, 0, 2): 1})
    first = spine.propose(IndexOrder.EAV, (0, 0))
    assert first == {1: 1, 2: 1} and spine.propose(IndexOrder.EAV, (0, 0)) is first
    assert spine.intersect(IndexOrder.EAV, (0, 0), {2: 3, 5: 1}) == {2: 3}
    spine.update({(0, 0, 2): -1, (0, 0, 3): 1})
    assert spine.propose(IndexOrder.EAV, (0, 0)) == {1: 1, 3: 1}
    assert spine.intersect(IndexOrder.EAV, (0, 0), {2: 3, 3: 2}) == {3: 2}
    spine.update_columns(np.zeros(2, np.int32), np.zeros(2, np.int32),
                         np.array([7, 8], np.int32))
    assert spine.intersect(IndexOrder.EAV, (0, 0), {1: 1, 8: 1}) == {1: 1, 8: 1}


def test_a_large_spine_is_compacted_into_one_batch_in_the_background() -> None:
    spine = SpineArrangement(compact_from=100)
    spine.update_columns(*_edges(0, 800))
    spine.update_columns(*_edges(800, 1000))  # an eighth of the first and more: compacted
    for start in range(1000, 1040, 8):  # written while the compaction may still run
        spine.update_columns(*_edges(start, start + 8))
    spine.update({(5, 0, 6): -1})
    spine.settle()
    assert len(spine.batches[0]) >= 1000 and spine.count(IndexOrder.AEV, (0,)) == 1039
    spine.compact()
    assert [len(batch) for batch in spine.batches] == [1039]


def test_a_compaction_makes_the_sieves_the_oldest_batch_had(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The merged batch's lookups find their sieves made: the first tick after a compaction
    does not make them (docs/engine.md)."""
    monkeypatch.setattr(batch_module, "SIEVE_KEYS", 0)
    spine = SpineArrangement(compact_from=100)
    spine.update_columns(*_edges(0, 800))
    spine.settle()
    spine.batches[0].orders[IndexOrder.EAV].sieve(2)  # asked by a query's lookups
    spine.update_columns(*_edges(800, 1000))  # an eighth: merged in the background
    spine.settle()
    assert [len(batch) for batch in spine.batches] == [1000]
    merged = spine.batches[0].orders
    assert merged[IndexOrder.EAV].sieves() == (2,) and merged[IndexOrder.VAE].sieves() == ()
    eav = merged[IndexOrder.EAV]
    assert maybe(eav.sieve(2), *key_nodes(eav.bounds1), eav.keys2).all()


def test_many_newer_batches_are_merged_into_one_beside_the_oldest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A minor compaction: the newer batches, three and more, merged into one in the
    background while the oldest stays as it is (they hold far less than an eighth of it)."""
    monkeypatch.setattr(compaction, "MINOR_FROM", 100)
    spine = SpineArrangement(compact_from=100)
    spine.update_columns(*_edges(0, 10_000))
    spine.settle()
    oldest = spine.batches[0]
    spine.update_columns(*_edges(10_000, 10_500))
    spine.update_columns(*_edges(10_500, 10_700))
    spine.settle()
    assert [len(batch) for batch in spine.batches] == [10_000, 500, 200]  # two: not yet
    spine.update_columns(*_edges(10_700, 10_760))  # three, and 260 of 500 after the second
    spine.update({(5, 0, 6): -1})
    spine.settle()
    assert spine.batches[0] is oldest
    assert [len(batch) for batch in spine.batches[1:]] == [760]
    assert spine.count(IndexOrder.AEV, (0,)) == 10_759


def test_newer_batches_of_a_few_datoms_are_not_merged_beside_the_oldest() -> None:
    spine = SpineArrangement(compact_from=100)  # MINOR_FROM: the three hold too few
    for lo, hi in ((0, 10_000), (10_000, 10_500), (10_500, 10_700), (10_700, 10_760)):
        spine.update_columns(*_edges(lo, hi))
    spine.settle()
    assert [len(batch) for batch in spine.batches] == [10_000, 500, 200, 60]


def test_a_small_spine_is_not_compacted_in_the_background() -> None:
    spine = SpineArrangement(compact_from=10**6)
    spine.update_columns(*_edges(0, 800))
    spine.update_columns(*_edges(800, 1000))
    spine.settle()
    assert [len(batch) for batch in spine.batches] == [800, 200]


def test_an_idle_spine_is_compacted_once_the_newer_batches_hold_a_64th() -> None:
    spine = SpineArrangement(compact_from=100)
    spine.update_columns(*_edges(0, 900))
    spine.update_columns(*_edges(900, 1000))  # a ninth: no compaction on the write
    spine.settle()
    assert [len(batch) for batch in spine.batches] == [900, 100]
    spine.compact_idle()
    spine.settle()
    assert [len(batch) for batch in spine.batches] == [1000]
    assert spine.count(IndexOrder.AEV, (0,)) == 1000
    spine.update_columns(*_edges(1000, 1010))  # a 100th: not worth rewriting the oldest
    spine.compact_idle()
    spine.settle()
    assert [len(batch) for batch in spine.batches] == [1000, 10]


def test_a_scan_waits_for_the_batches_merged_when_the_newer_hold_a_64th() -> None:
    spine = SpineArrangement(compact_from=100)
    spine.update_columns(*_edges(0, 900))
    spine.update_columns(*_edges(900, 1000))
    spine.compact_for_scan()  # no settle: merged by the time it returns
    assert [len(batch) for batch in spine.batches] == [1000]
    spine.update_columns(*_edges(1000, 1010))  # a 100th: scanned as it is
    spine.compact_for_scan()
    assert [len(batch) for batch in spine.batches] == [1000, 10]


def test_a_scan_merges_what_a_running_merge_left_out() -> None:
    gate = Future[None]()
    spine = SpineArrangement(compact_from=100, compactor=_Gated(gate))
    spine.update_columns(*_edges(0, 800))
    spine.update_columns(*_edges(800, 1000))  # an eighth: a merge starts (held at the gate)
    spine.update_columns(*_edges(1000, 1050))  # written while it runs
    gate.set_result(None)
    spine.compact_for_scan()
    assert [len(batch) for batch in spine.batches] == [1050]


def test_shared_reads_adopt_no_compaction_until_they_end() -> None:
    """Threads reading one spine go through the same batches and holders' bits: a
    compaction finished meanwhile waits for the block's end (and the layer is frozen into
    its batch first, not by whichever thread reads it first)."""
    gate = Future[None]()
    compactor = _Gated(gate)
    spine = SpineArrangement(compact_from=100, compactor=compactor)
    spine.update_columns(*_edges(0, 800))
    spine.update_columns(*_edges(800, 1000))  # starts a compaction, held at the gate
    spine.update({(5, 0, 6): -1})
    with spine.shared_reads():
        gate.set_result(None)
        compactor.drain()  # the compaction is done
        batches = list(spine.batches)
        assert spine.counts(IndexOrder.AEV, np.zeros((1, 1), np.int64)).tolist() == [999]
        assert spine.batches == batches and len(batches) == 2
    assert spine.counts(IndexOrder.AEV, np.zeros((1, 1), np.int64)).tolist() == [999]
    assert [len(batch) for batch in spine.batches] == [1000]  # adopted by that read


class _Gated(ThreadPoolExecutor):
    """A compactor whose merges wait until ``gate`` is set."""

    def __init__(self, gate: Future[None]) -> None:
        super().__init__(max_workers=1)
        self._gate = gate

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        return super().submit(lambda: (self._gate.result(), fn(*args, **kwargs))[1])

    def drain(self) -> None:
        """Wait for every merge submitted so far (the one thread runs them in order)."""
        super().submit(lambda: None).result()


def test_a_batch_holding_few_of_the_rows_first_keys_is_searched_for_those_rows_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The holders' bits name, per row, the batches holding its first key: a small batch
    holding a few of them is searched for those rows only, and reads answer the same."""
    spine = SpineArrangement(layer_limit=10**9)
    spine.update_columns(*_edges(0, 1000))
    spine.update_columns(*_edges(1000, 1003))  # a small batch: entities 1000..1002
    searched: list[int] = []
    ranges = batch_module.Batch.ranges
    monkeypatch.setattr(batch_module.Batch, "ranges",
                        lambda self, prefixes: searched.append(len(prefixes)) or ranges(
                            self, prefixes))
    prefixes = np.stack([np.arange(990, 1010), np.zeros(20, np.int64)], axis=1)
    located = spine.locate(IndexOrder.EAV, prefixes)
    assert len(spine.batches) == 2 and searched == [20, 3]
    assert spine.estimates_at(located).tolist() == [1] * 13 + [0] * 7
