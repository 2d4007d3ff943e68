"""The state location: a batch file per tick, compaction that keeps the Z-set, and a task's
cache that catches up on new batches only (no Spark needed: the files are the contract)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.arrangements import ArrangementRegistry
from workers.arrangements.datom_batch import DatomBatch
from workers.arrangements.delta import DatomColumns, DeltaInput
from workers.arrangements.keys import INDEX_ORDERS
from workers.arrangements.values import ValueIds
from workers.datalog import compile_query
from workers.executors.spark import cache, requests, state
from workers.executors.spark.cache import open_state
from workers.executors.spark.publish import MANIFESTS, newest
from workers.executors.spark.state import (
    Compactor,
    Manifest,
    Part,
    StateStore,
    compact_here,
    read_index,
    read_part,
    summed_in_ranges,
    write_index,
)
from workers.executors.spark.tasks import Bound, Compaction, compact, index, statistics
from workers.plan import plan_query
from workers.zset import ZSet

Datom = tuple[int, int, int]


def columns(delta: ZSet[Datom]) -> DatomColumns:
    return DatomColumns.of(delta)


def in_a_task(manifest: Manifest, name: str) -> None:
    """The Spark executor's indexer without Spark: its task."""
    shares = pa.record_batch([pa.array([0], pa.int64())], names=["id"])
    (row,) = [batch.to_pydict() for batch in index(manifest, name, [shares])]
    assert row["w"] == [manifest.base_rows]


def bucketed(buckets: int) -> Compactor:
    """The Spark executor's compactor without Spark: its task, given every bucket."""
    def compactor(manifest: Manifest, stem: str) -> tuple[Part, ...]:
        request = Compaction(manifest, stem, buckets)
        shares = pa.record_batch([pa.array(range(buckets), pa.int64())], names=["id"])
        rows = [batch.to_pydict() for batch in compact(request, [shares])]
        return tuple(Part(request.name(row["c0"][0]), manifest.version, row["w"][0])
                     for row in rows)
    return compactor


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    cache.forget()


def test_each_append_is_one_new_file_and_a_new_version(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.reset(columns({(1, 0, 2): 1}))
    store.append(columns({(2, 0, 3): 1}))
    store.append(columns({(1, 0, 2): -1}))
    manifest = store.manifest
    assert manifest is not None and manifest.version == 2
    assert [b.version for b in manifest.batches] == [1, 2]
    files = {p.name for p in tmp_path.iterdir()} - {MANIFESTS}
    assert files == {p.path for p in manifest.parts()}
    published = newest(*state.filesystem(str(tmp_path)))
    assert published is not None and published[0] == manifest.serial == 2  # reset, 2 appends
    assert Manifest.from_json(str(tmp_path), published[1]) == manifest
    assert os.listdir(tmp_path / MANIFESTS) == [f"{2:020d}.json"]  # the older ones deleted
    assert open_state(manifest).state.datoms() == {(2, 0, 3): 1}


def test_compaction_sums_the_batches_and_drops_zero_rows(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), compact_batches=1_000, compact_datoms=4)
    store.reset(columns({(1, 0, 2): 1, (1, 0, 3): 1}))
    store.append(columns({(1, 0, 2): -1, (4, 0, 5): 1}))
    store.append(columns({(4, 0, 5): -1, (6, 0, 7): 1}))  # 4 datoms: the base is rewritten
    before = store.manifest
    assert before is not None
    store.settle()
    after = store.manifest
    assert after is not None and after.version == before.version and not after.batches
    assert after.base_rows == 2  # the zero rows are gone
    assert store.compactions == 1
    cache.forget()
    assert open_state(after).state.datoms() == {(1, 0, 3): 1, (6, 0, 7): 1}
    store.append(columns({(8, 0, 9): 1}))  # the next append deletes what compaction left
    files = {p.name for p in tmp_path.iterdir()} - {MANIFESTS}
    assert files == {p.path for p in store.manifest.parts()}  # type: ignore[union-attr]


def test_compaction_is_due_after_enough_batches(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), compact_batches=3, compact_datoms=1_000)
    store.reset(columns({}))
    for tick in range(3):
        store.append(columns({(tick, 0, tick + 1): 1}))
    store.settle()
    assert store.compactions == 1
    assert store.manifest is not None and store.manifest.version == 3


def test_a_cached_state_reads_only_the_new_batches(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = StateStore(str(tmp_path), compact_batches=1_000, compact_datoms=1_000)
    store.reset(columns({(1, 0, 2): 1}))
    store.append(columns({(2, 0, 3): 1}))
    first = open_state(store.manifest)  # type: ignore[arg-type]
    read: list[str] = []
    original = cache.read_part
    monkeypatch.setattr(cache, "read_part", lambda location, part: (read.append(part.path),
                                                                     original(location, part))[1])
    store.append(columns({(3, 0, 4): 1}))
    store.append(columns({(2, 0, 3): -1}))
    again = open_state(store.manifest)  # type: ignore[arg-type]
    assert again is first
    assert read == [b.path for b in store.manifest.batches[-2:]]  # type: ignore[union-attr]
    assert again.state.datoms() == {(1, 0, 2): 1, (3, 0, 4): 1}
    store.compact_in_background()  # folds what the cache already holds: still caught up
    store.settle()
    assert open_state(store.manifest) is first  # type: ignore[arg-type]


def test_a_cache_behind_a_compaction_reads_the_new_base(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), compact_batches=1_000, compact_datoms=1)
    store.reset(columns({(1, 0, 2): 1}))
    first = open_state(store.manifest)  # type: ignore[arg-type]
    store.append(columns({(2, 0, 3): 1}))  # as many datoms as the base: a new base
    store.settle()
    assert store.compactions == 1 and store.manifest.base_version == 1  # type: ignore[union-attr]
    store.append(columns({(3, 0, 4): 1}))
    again = open_state(store.manifest)  # type: ignore[arg-type]
    assert again is not first
    assert again.state.datoms() == {(1, 0, 2): 1, (2, 0, 3): 1, (3, 0, 4): 1}


def test_batches_due_by_number_are_folded_into_one_and_the_base_kept(tmp_path: Path) -> None:
    """Four small batches against a base of ten datoms: summed into one batch (its
    buckets) of versions 1..4, not into a new base.  A cache at version 0 continues with
    it; one at version 1 cannot (it holds part of it) and reads everything again."""
    store = StateStore(str(tmp_path), compact_batches=4, compact_datoms=1_000,
                       compactor=bucketed(2))
    store.reset(columns({(e, 0, e + 1): 1 for e in range(10)}))
    base = store.manifest.base  # type: ignore[union-attr]
    cached = {0: _opened(store.manifest)}
    store.append(columns({(0, 0, 1): -1}))
    cached[1] = _opened(store.manifest)
    store.append(columns({(20, 0, 21): 1}))
    store.append(columns({(21, 0, 22): 1}))
    store.append(columns({(20, 0, 21): -1, (22, 0, 23): 1}))  # the fourth batch: due
    store.settle()
    manifest = store.manifest
    assert manifest is not None and manifest.base == base and manifest.version == 4
    assert [(p.first, p.version) for p in manifest.batches] == [(1, 4), (1, 4)]
    expected = {(e, 0, e + 1): 1 for e in range(1, 10)} | {(21, 0, 22): 1, (22, 0, 23): 1}
    for version, registry in cached.items():
        cache._OPEN[manifest.location] = cache.OpenState(manifest.epoch, version, registry)
        opened = open_state(manifest)
        assert (opened is registry) == (version == 0)
        assert opened.state.datoms() == expected
    store.append(columns({}))  # deletes the batches folded
    assert {p.name for p in tmp_path.iterdir()} - {MANIFESTS} == {
        p.path for p in store.manifest.parts()}  # type: ignore[union-attr]


def test_an_idle_store_sums_its_batches_into_an_indexed_base(tmp_path: Path) -> None:
    """Idle, the store rewrites a large state's base once the batches hold a 64th of it
    (not due by number or size: a tick would not wait for it) and indexes it; a task's
    cache then opens the one indexed batch.  Below a 64th, with no batches, or below
    ``index_datoms`` in all, idling writes nothing (the reset's base was indexed as it
    was written)."""
    small = StateStore(str(tmp_path / "small"), compact_batches=1_000, compact_datoms=1_000,
                       compactor=bucketed(2), indexer=in_a_task, index_datoms=100)
    small.reset(columns({(e, 0, e + 1): 1 for e in range(50)}))
    small.append(columns({(e, 0, e + 1): 1 for e in range(50, 60)}))
    small.compact_idle()
    small.settle()
    assert len(small.manifest.batches) == 1  # type: ignore[union-attr]
    store = StateStore(str(tmp_path / "large"), compact_batches=1_000, compact_datoms=1_000,
                       compactor=bucketed(2), indexer=in_a_task, index_datoms=100)
    store.reset(columns({(e, 0, e + 1): 1 for e in range(128)}))
    store.compact_idle()  # no batches
    store.append(columns({(0, 0, 1): -1}))  # 1 datom against 128: below a 64th
    store.compact_idle()
    store.settle()
    before = store.manifest
    assert before is not None and before.index is not None and len(before.batches) == 1
    store.append(columns({(200, 0, 201): 1}))  # 2 against 128: a 64th
    store.compact_idle()
    store.settle()
    manifest = store.manifest
    assert manifest is not None and not manifest.batches and manifest.version == 2
    assert manifest.base_rows == 128 and manifest.index not in (None, before.index)
    opened = open_state(manifest)
    assert len(opened.state.batches) == 1
    assert opened.state.datoms() == {(e, 0, e + 1): 1 for e in range(1, 128)} | {
        (200, 0, 201): 1}


def _opened(manifest: Manifest | None) -> ArrangementRegistry:
    """A cache of its own at ``manifest``'s version."""
    assert manifest is not None
    cache.forget()
    return open_state(manifest)


def test_a_reset_starts_a_new_epoch(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    store.reset(columns({(1, 0, 2): 1}))
    first = open_state(store.manifest)  # type: ignore[arg-type]
    manifest = store.reset(columns({(5, 0, 6): 1}))
    state = open_state(manifest)
    assert state is not first and state.state.datoms() == {(5, 0, 6): 1}


def test_the_default_location_is_a_temporary_directory_removed_on_close() -> None:
    store = StateStore()
    store.reset(columns({(1, 0, 2): 1}))
    location = Path(store.location)
    assert (location / MANIFESTS).exists()
    store.close()
    assert not location.exists()


ticks = st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1), st.integers(0, 5)),
                          max_size=6), min_size=1, max_size=12)


@settings(max_examples=40)
@given(ticks=ticks, compact_every=st.integers(1, 5), buckets=st.sampled_from([0, 1, 3]),
       range_rows=st.integers(1, 6), rewrite_datoms=st.sampled_from([1, 4, 1_000]),
       index_datoms=st.sampled_from([1, 4, 10**9]))
def test_the_state_is_the_sum_of_its_ticks_through_compactions(
        tmp_path_factory: pytest.TempPathFactory, ticks: list[list[Datom]],
        compact_every: int, buckets: int, range_rows: int, rewrite_datoms: int,
        index_datoms: int) -> None:
    """Each tick toggles some datoms of a set (adds absent ones, retracts present ones):
    whatever the compactions — batches folded or a new base, in this process or by bucket
    of entities as Spark's tasks do, the base indexed or not — every version a task opens
    is the set so far, and so is the whole state read a range of entities at a time (a
    snapshot's read), in EAV order."""
    cache.forget()
    location = str(tmp_path_factory.mktemp("state"))
    store = StateStore(location, compact_batches=compact_every, compact_datoms=rewrite_datoms,
                       compactor=bucketed(buckets) if buckets else compact_here,
                       indexer=in_a_task, index_datoms=index_datoms)
    expected: set[Datom] = set()
    store.reset(columns({}))
    for toggled in ticks:
        delta = {d: -1 if d in expected else 1 for d in set(toggled)}
        expected ^= set(delta)
        store.append(columns(delta))
        manifest = store.manifest
        assert manifest is not None
        assert set(open_state(manifest).state.datoms()) == expected
        ranges = list(summed_in_ranges(manifest, rows=range_rows))
        assert [d for chunk in ranges for d in _rows(chunk)] == sorted(expected)
        assert all(chunk.w.tolist() == [1] * len(chunk) for chunk in ranges)
    store.settle()
    cache.forget()
    final = open_state(store.manifest)  # type: ignore[arg-type]
    assert final.state.datoms() == dict.fromkeys(expected, 1)
    assert len(final) == len(expected)
    e, a, v = store.columns()
    assert e.dtype == a.dtype == v.dtype == np.int32
    assert list(zip(e.tolist(), a.tolist(), v.tolist(), strict=True)) == sorted(expected)


def _rows(chunk: DatomColumns) -> list[Datom]:
    return list(zip(chunk.e.tolist(), chunk.a.tolist(), chunk.v.tolist(), strict=True))


def test_ids_beyond_int16_survive_the_files(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path))
    big = (70_000, 7, 2**20)
    store.reset(DatomColumns(*(np.array([x], np.int32) for x in big), np.ones(1, np.int64)))
    assert open_state(store.manifest).state.datoms() == {big: 1}  # type: ignore[arg-type]


def test_a_bucketed_base_holds_each_entity_in_its_bucket(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), compact_batches=1_000, compact_datoms=1,
                       compactor=bucketed(3))
    store.reset(columns({(e, 0, e + 1): 1 for e in range(5)}))
    store.append(columns({(4, 0, 5): -1, (4, 0, 6): 1} | {(e, 0, e + 1): 1 for e in range(5, 10)}))
    store.settle()  # as many datoms as the base: a new base
    manifest = store.manifest
    assert manifest is not None and len(manifest.base) == 3 and not manifest.batches
    for bucket, part in enumerate(manifest.base):
        datoms = read_part(manifest.location, part)
        assert set(datoms.e.tolist()) == {e for e in range(10) if e % 3 == bucket}
    expected = {(e, 0, e + 1): 1 for e in range(10) if e != 4} | {(4, 0, 6): 1}
    assert open_state(manifest).state.datoms() == expected


def test_a_tasks_statistics_count_the_cached_state_merged_into_one_batch(
        tmp_path: Path) -> None:
    """A bootstrap's statistics, then its evaluation, read the whole cached state: it is
    merged once first, as a local evaluation's is (``compact_for_scan``)."""
    store = StateStore(str(tmp_path), compact_batches=1_000, compact_datoms=10**6)
    store.reset(columns({(e, 0, e + 1): 1 for e in range(900)}))
    cached = open_state(store.manifest)  # type: ignore[arg-type]
    cached.state.compact_from = 10
    store.append(columns({(e, 0, e + 1): 1 for e in range(900, 1000)}))
    share = pa.record_batch([pa.array([0], pa.int64())], names=["id"])
    counted = [b.to_pydict() for b in statistics(store.manifest, [share])]  # type: ignore[arg-type]
    assert counted[0]["c0"] == [0] and counted[0]["c1"] == [1000] and counted[0]["c2"] == [1000]
    assert open_state(store.manifest) is cached  # type: ignore[arg-type]
    assert [len(batch) for batch in cached.state.batches] == [1000]


def _batch(rng: np.random.Generator, datoms: int, ids: int, weighted: bool) -> DatomBatch:
    e, a, v = (rng.integers(0, ids, datoms).astype(np.int32) for _ in "eav")
    batch = DatomBatch.build(e, a, v, rng.integers(-2, 3, datoms) if weighted else None)
    assert batch is not None
    return batch


@pytest.mark.parametrize(("ids", "weighted"), [(40, False), (40, True), (70_000, False)])
def test_an_index_file_is_the_batch_read_in_place(tmp_path: Path, ids: int,
                                                  weighted: bool) -> None:
    """Every order's arrays come back equal, as views of the file's mapping (dense and
    sparse levels, a set and a Z-set)."""
    batch = _batch(np.random.default_rng(ids), 3_000, ids, weighted)
    write_index(str(tmp_path), "x.index", batch)
    read = read_index(str(tmp_path), "x.index")
    for order in INDEX_ORDERS:
        written, mapped = batch.orders[order].arrays(), read.orders[order].arrays()
        assert written.keys() == mapped.keys()
        for name, array in written.items():
            assert mapped[name].dtype == array.dtype and np.array_equal(mapped[name], array)
            assert name == "width0" or isinstance(mapped[name].base, np.memmap), name
        assert read.orders[order].positive == batch.orders[order].positive
    assert dict(_datoms(read)) == dict(_datoms(batch))


def _datoms(batch: DatomBatch) -> list[tuple[Datom, int]]:
    e, a, v, w = batch.orders[INDEX_ORDERS[0]].columns()
    weights = [1] * len(e) if w is None else w.tolist()
    return list(zip(zip(e.tolist(), a.tolist(), v.tolist(), strict=True), weights,
                    strict=True))


def test_a_compaction_indexes_a_large_base_and_tasks_open_it_mapped(tmp_path: Path) -> None:
    """From ``index_datoms`` datoms the compaction writes the base's index; a task's cache
    opens it in place of the copy it built (nothing sorted, the pages the file's), and the
    next compaction's index replaces it: the old file is deleted."""
    store = StateStore(str(tmp_path), compact_batches=1_000, compact_datoms=1,
                       compactor=bucketed(3), indexer=in_a_task, index_datoms=10)
    store.reset(columns({(e, 0, e + 1): 1 for e in range(6)}))
    store.settle()
    assert store.manifest is not None and store.manifest.index is None  # 6 < 10
    built = open_state(store.manifest)
    store.append(columns({(e, 0, e + 1): 1 for e in range(6, 12)}))  # a new base of 12
    store.settle()
    first = store.manifest
    assert first is not None and first.index is not None and (tmp_path / first.index).exists()
    store.append(columns({(0, 0, 1): -1}))
    opened = open_state(store.manifest)  # type: ignore[arg-type]
    assert opened is not built
    base = opened.state.batches[0]
    assert isinstance(base.orders[INDEX_ORDERS[0]].keys2.base, np.memmap)
    expected = {(e, 0, e + 1): 1 for e in range(1, 12)}
    assert opened.state.datoms() == expected and len(opened) == 11
    added = {(e, 0, e + 1): 1 for e in range(20, 31)}
    store.append(columns(added))  # 12 datoms in batches against 12: a new base, indexed
    store.settle()
    store.append(columns({(40, 0, 41): 1}))  # deletes what the compaction left behind
    second = store.manifest
    assert second is not None and second.index not in (None, first.index)
    assert not (tmp_path / first.index).exists()
    assert open_state(second).state.datoms() == expected | added | {(40, 0, 41): 1}


def test_a_large_reset_is_indexed_in_the_background(tmp_path: Path) -> None:
    store = StateStore(str(tmp_path), indexer=in_a_task, index_datoms=5)
    store.reset(columns({(e, 0, e + 1): 1 for e in range(6)}))
    store.append(columns({(9, 0, 9): 1}))  # beside the index being built
    store.settle()
    manifest = store.manifest
    assert manifest is not None and manifest.index is not None
    assert [b.version for b in manifest.batches] == [1] and store.compactions == 0
    assert open_state(manifest).state.datoms() == (
        {(e, 0, e + 1): 1 for e in range(6)} | {(9, 0, 9): 1})


def test_an_index_on_a_remote_location_is_read_whole(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a local file system (pyarrow's in-memory one, as a bucket is reached): the
    index is read, not mapped, and opens the same state."""
    remote = pafs._MockFileSystem()
    monkeypatch.setattr(state, "filesystem", lambda location: (remote, "/state"))
    store = StateStore("mock:///state", indexer=in_a_task, index_datoms=1)
    store.reset(columns({(e, 1, 2 * e): 1 for e in range(50)}))
    store.settle()
    manifest = store.manifest
    assert manifest is not None and manifest.index is not None
    opened = open_state(manifest)
    keys = opened.state.batches[0].orders[INDEX_ORDERS[0]].keys2
    assert not isinstance(keys.base, np.memmap)
    assert opened.state.datoms() == {(e, 1, 2 * e): 1 for e in range(50)}



@pytest.mark.parametrize(("query", "arranged"), [
    ("[:find ?a ?b ?c :where [?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]", False),
    ("[:find ?a ?b :where [?a :g/to ?b] [?a ?x ?b]]", True),  # an attribute variable
])
def test_a_task_arranges_the_delta_only_for_a_plan_read_row_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: str, arranged: bool) -> None:
    """The tries of a tick's delta are built only for a plan that reads them: arranging a
    bulk tick's 10^5 datoms in every task cost a second each (the Spark load rate halved)."""
    fed: list[object] = []
    feed = DeltaInput.feed
    monkeypatch.setattr(DeltaInput, "feed", lambda self, delta: fed.append(delta) or feed(
        self, delta))
    store = StateStore(str(tmp_path))
    store.reset(columns({(1, 0, 2): 1, (2, 0, 3): 1}))
    manifest = store.manifest
    assert manifest is not None
    plan = plan_query(compile_query(query))
    bound = Bound(manifest, requests.constants(plan, ValueIds()), columns({(1, 0, 3): 1}))
    vector, local = bound.plan(plan)
    assert (local is not None, vector is None) == (arranged, arranged)
    assert bool(fed) == arranged
