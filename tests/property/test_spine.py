"""The spine answers every GenericJoin verb exactly as the dict tries of the same Z-set, on
random streams of deltas with retractions (and weights other than ±1), whichever way the
deltas are written (the mutable layer or bulk batches) and however the batches merge; a
batch of prefixes gets the answers of each prefix alone."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from itertools import pairwise
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from workers.arrangements import INDEX_ORDERS, IndexOrder, MemoryArrangement
from workers.arrangements.datom_batch import DatomBatch, IdDatom
from workers.arrangements.spine import SMALL_NODE, SpineArrangement
from workers.zset import ZSet, add

KEYS = range(6)  # ids 0..5 present, 6 never: lookups of absent keys
datoms = st.tuples(st.sampled_from(KEYS), st.sampled_from(range(3)), st.sampled_from(KEYS))
deltas = st.dictionaries(datoms, st.sampled_from([-2, -1, 1, 1, 1, 2]), min_size=1,
                         max_size=12)
prefixes = st.lists(st.lists(st.integers(0, 6), max_size=3).map(tuple), min_size=1,
                    max_size=8)


def _node(trie: dict[Any, Any], prefix: tuple[int, ...]) -> Any:
    node: Any = trie
    for key in prefix:
        node = node.get(key) if node else None
    return node


def _total(node: Any) -> int:
    return node if isinstance(node, int) else sum(map(_total, node.values()))


def _suffixes(node: Any) -> dict[tuple[int, ...], int]:
    if isinstance(node, int):
        return {(): node}
    return {(k, *rest): w for k, sub in node.items() for rest, w in _suffixes(sub).items()}


def _columns(delta: ZSet[IdDatom]) -> tuple[np.ndarray, ...]:
    e, a, v = (np.array([d[i] for d in delta], np.int32) for i in range(3))
    return e, a, v, np.array(list(delta.values()), np.int64)


def _check_one_prefix(spine: SpineArrangement, trie: dict[Any, Any], order: IndexOrder,
                      prefix: tuple[int, ...]) -> None:
    node = _node(trie, prefix)
    assert spine.weight(order, prefix) == (_total(node) if node is not None else 0)
    assert spine.enumerate(order, prefix) == (_suffixes(node) if node is not None else {})
    if len(prefix) == 3:
        return
    sums = {k: _total(sub) for k, sub in (node or {}).items()}
    small = spine.small(order, prefix)
    assert small is None or small == sums
    assert spine.count(order, prefix) == len(sums)
    assert spine.propose(order, prefix) == sums
    candidates = {0: 3, 2: -1, 5: 1, 6: 2}
    assert spine.intersect(order, prefix, candidates) == {
        x: w * sums[x] for x, w in candidates.items() if x in sums}


def _check_many_prefixes(spine: SpineArrangement, order: IndexOrder,
                         batch: list[tuple[int, ...]]) -> None:
    """The vectorised verbs on all prefixes of one depth equal the one-prefix answers."""
    depth = len(batch[0])
    rows = np.array(batch, np.int64).reshape(len(batch), depth)
    assert spine.weights(order, rows).tolist() == [spine.weight(order, p) for p in batch]
    found, suffix, weights = spine.enumerations(order, rows)
    for i, prefix in enumerate(batch):
        at = found == i
        keys = zip(*(c[at].tolist() for c in suffix), strict=True) if suffix else [()] * at.sum()
        got = dict(zip(keys, weights[at].tolist(), strict=True))
        assert got == spine.enumerate(order, prefix)
    if depth == 3:
        return
    assert spine.counts(order, rows).tolist() == [spine.count(order, p) for p in batch]
    found, keys, sums = spine.proposals(order, rows)
    for i, prefix in enumerate(batch):
        at = found == i
        assert dict(zip(keys[at].tolist(), sums[at].tolist(), strict=True)) == spine.propose(
            order, prefix)
    cand_rows = np.repeat(np.arange(len(batch)), 4)
    cand_keys = np.tile(np.array([0, 2, 5, 6], np.int32), len(batch))
    cand_weights = np.tile(np.array([3, -1, 1, 2], np.int64), len(batch))
    found, keys, weights = spine.intersections(order, rows, cand_rows, cand_keys, cand_weights)
    for i, prefix in enumerate(batch):
        at = found == i
        assert dict(zip(keys[at].tolist(), weights[at].tolist(), strict=True)) == (
            spine.intersect(order, prefix, {0: 3, 2: -1, 5: 1, 6: 2}))


class Inline(Executor):
    """Runs a compaction when it is submitted: the spine adopts it at its next write, at a
    point the test chooses (on the compaction thread it is whenever the merge is done)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


compaction = st.sampled_from([None, 1])  # never, or whenever it is due
# every node read whole (these nodes hold 7 keys at most), or only the empty ones: the
# general path, per source
small_node = st.sampled_from([SMALL_NODE, 0])


@given(stream=st.lists(st.tuples(deltas, st.booleans()), min_size=1, max_size=10),
       limit=st.sampled_from([1, 4, 64]), asked=prefixes, adds_only=st.booleans(),
       compact_from=compaction, small=small_node)
def test_every_verb_answers_as_the_dict_tries(stream: list[tuple[ZSet[IdDatom], bool]],
                                              limit: int, asked: list[tuple[int, ...]],
                                              adds_only: bool, compact_from: int | None,
                                              small: int) -> None:
    """``adds_only``: every source positive, so several sources answer by adding keys."""
    spine = SpineArrangement(layer_limit=limit, compact_from=compact_from, compactor=Inline(),
                             small_node=small)
    tries = MemoryArrangement()
    for delta, bulk in stream:
        if adds_only:
            delta = {d: abs(w) for d, w in delta.items()}
        tries.update(delta)
        if bulk:
            spine.update_columns(*_columns(delta))
        else:
            spine.update(delta)
        assert spine.datoms() == dict(tries.datoms())
        for order in INDEX_ORDERS:
            for prefix in asked:
                _check_one_prefix(spine, tries.index(order), order, prefix)
            for depth in range(4):
                batch = [p for p in asked if len(p) == depth]
                if batch:
                    _check_many_prefixes(spine, order, batch)


toggles = st.lists(st.tuples(st.lists(datoms, min_size=1, max_size=12), st.booleans()),
                   min_size=1, max_size=12)


@given(stream=toggles, limit=st.sampled_from([1, 4, 64]), asked=prefixes,
       compact_from=compaction, small=small_node, summed_rows=st.sampled_from([1, 3, 1 << 18]))
def test_a_nonnegative_spine_answers_as_the_dict_tries(
        stream: list[tuple[list[IdDatom], bool]], limit: int,
        asked: list[tuple[int, ...]], compact_from: int | None, small: int,
        summed_rows: int) -> None:
    """A database's spine (a set: each delta adds absent datoms and retracts present ones,
    so the layer and later batches hold -1s for datoms of earlier batches) reads across
    sources by summing; ``estimate`` never undercounts; its columns (a snapshot's), summed
    ``summed_rows`` datoms at a time, are the set in EAV order."""
    spine = SpineArrangement(layer_limit=limit, nonnegative=True, compact_from=compact_from,
                             compactor=Inline(), small_node=small)
    tries = MemoryArrangement()
    for toggled, bulk in stream:
        delta = {d: -1 if tries.weight(d) else 1 for d in toggled}
        tries.update(delta)
        if bulk:
            spine.update_columns(*_columns(delta))
        else:
            spine.update(delta)
        e, a, v = (c.tolist() for c in spine.columns(summed_rows))
        assert list(zip(e, a, v, strict=True)) == sorted(d for d, _ in tries.datoms())
        for order in INDEX_ORDERS:
            for prefix in asked:
                _check_one_prefix(spine, tries.index(order), order, prefix)
                if len(prefix) < 3:
                    assert spine.estimate(order, prefix) >= spine.count(order, prefix)
            for depth in range(3):
                batch = [p for p in asked if len(p) == depth]
                if batch:
                    _check_frame_verbs(spine, order, batch)


def _check_frame_verbs(spine: SpineArrangement, order: IndexOrder,
                       batch: list[tuple[int, ...]]) -> None:
    """``estimates`` bound each prefix's count; ``lookups`` sum as ``intersect`` does (a
    nonnegative spine: present exactly when the sum is positive)."""
    rows = np.array(batch, np.int64).reshape(len(batch), len(batch[0]))
    located = spine.locate(order, rows)
    assert (spine.estimates_at(located) >= spine.counts(order, rows)).all()
    cand_rows = np.repeat(np.arange(len(batch)), 4)
    cand_keys = np.tile(np.array([0, 2, 5, 6], np.int32), len(batch))
    _, total = spine.lookups_at(located, cand_rows, cand_keys)
    for i, prefix in enumerate(batch):
        found = spine.intersect(order, prefix, dict.fromkeys([0, 2, 5, 6], 1))
        got = {k: w for k, w in zip([0, 2, 5, 6], total[4 * i:4 * i + 4].tolist(), strict=True)
               if w > 0}
        assert got == found


@given(stream=st.lists(deltas, min_size=1, max_size=10))
def test_merging_never_changes_the_z_set(stream: list[ZSet[IdDatom]]) -> None:
    spine = SpineArrangement(layer_limit=10**9)  # every delta its own batch, merged as pushed
    expected: ZSet[IdDatom] = {}
    for delta in stream:
        built = DatomBatch.build(*_columns(delta))
        assert (dict(_batch_datoms(built)) if built else {}) == {
            d: w for d, w in delta.items() if w}
        spine.update_columns(*_columns(delta))
        expected = add(expected, delta)
        assert spine.datoms() == expected
        sizes = [len(batch) for batch in spine.batches]
        assert all(older > 2 * newer for older, newer in pairwise(sizes))
    spine.compact()
    assert spine.datoms() == expected and len(spine.batches) == (1 if expected else 0)


def _batch_datoms(batch: DatomBatch) -> ZSet[IdDatom]:
    e, a, v, w = batch.orders[IndexOrder.EAV].columns()
    weights = [1] * len(e) if w is None else w.tolist()
    return dict(zip(zip(e.tolist(), a.tolist(), v.tolist(), strict=True), weights, strict=True))
