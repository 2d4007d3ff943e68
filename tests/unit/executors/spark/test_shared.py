"""A state shared by a writer and its followers, without Spark (the files are the contract):
the dictionary's files, the stamps, the follower's steps and its dictionary."""

from __future__ import annotations

import datetime
import os
import threading
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import MAX_IDS, Numbering, ValueIds
from workers.db.codec import decode_schema, encode_schema
from workers.db.schema import BUILTIN_SCHEMA
from workers.edn import keyword
from workers.errors import WorkersError
from workers.executors.spark.cache import open_state
from workers.executors.spark.dictionary import (
    DriverValues,
    decoded_rows,
    fold_values,
    write_values,
)
from workers.executors.spark.publish import (
    LEGACY_MANIFEST,
    MANIFESTS,
    create_if_absent,
    newest,
    publish,
)
from workers.executors.spark.shared import FollowerBehind, FollowerIds, StateFollower
from workers.executors.spark.state import Manifest, Marks, StateStore

VALUES = [0, -1, 2**63 - 1, -(2**63), True, False, 1.0, -0.5, "", "straße ✓", keyword("a/b"),
          uuid.UUID(int=7), datetime.datetime(2026, 11, 28, 19, 30, tzinfo=datetime.UTC),
          datetime.date(2026, 11, 28)]
SCHEMA = encode_schema(BUILTIN_SCHEMA)
values = st.one_of(st.integers(-5, 40), st.sampled_from(["x", "y", keyword("k"), 1.5, True]),
                   st.text(max_size=3))


def _read(location: str, name: str) -> list[Any]:
    """A values file's values, piece after piece."""
    with pa.memory_map(f"{location}/{name}") as source:
        reader = pa.ipc.open_file(source)
        return [x for i in range(reader.num_record_batches)
                for x in decoded_rows(reader.get_batch(i))]


def test_the_dictionary_s_files_hold_every_kind_of_value_and_fold_in_order(
        tmp_path: Path) -> None:
    location = str(tmp_path)
    write_values(location, "one", [VALUES[:5], VALUES[5:]])
    write_values(location, "two", [["more", 3]])
    fold_values(location, ["one", "two"], "both")
    for name, expected in (("one", VALUES), ("both", [*VALUES, "more", 3])):
        got = _read(location, name)
        assert got == expected
        assert [type(x) for x in got] == [type(x) for x in expected]


def _marks(ids: ValueIds, position: int, datoms: int = 0) -> Marks:
    return Marks(position, datoms, SCHEMA, ids.size)


def _writer(location: str, ids: ValueIds, retain: float = 3600.0) -> StateStore:
    store = StateStore(location, values=DriverValues(lambda: ids), retain_seconds=retain)
    store.reset(DatomColumns.of({}), _marks(ids, 0))
    return store


def test_a_manifest_s_stamp_survives_its_file_and_a_restamp_moves_the_position(
        tmp_path: Path) -> None:
    ids = ValueIds()
    ids.intern("a")
    store = _writer(str(tmp_path), ids)
    store.append(DatomColumns.of({(0, 0, 0): 1}), _marks(ids, 5, 1))
    manifest = store.manifest
    assert manifest is not None and manifest.stamp is not None
    assert Manifest.from_json(manifest.location, manifest.to_json()) == manifest
    assert decode_schema(manifest.stamp.marks.schema).items() == BUILTIN_SCHEMA.items()
    store.restamp(_marks(ids, 9, 1))
    assert store.manifest is not None and store.manifest.stamp is not None
    assert (store.manifest.version, store.manifest.stamp.marks.position) == (manifest.version, 9)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(values, max_size=4),
              st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 3)),
                              st.sampled_from([-1, 1]), min_size=1, max_size=3)),
    st.just(("compact",)), st.just(("follow",)), st.just(("join",))), max_size=14))
def test_followers_read_the_writer_s_ids_and_batches(steps: list[tuple[Any, ...]],
                                                     tmp_path_factory: pytest.TempPathFactory
                                                     ) -> None:
    """Writers number values and append batches, compaction folds batches and dictionary
    files; followers that join at any moment and step at any moment see the writer's ids
    for every value and, summed, the writer's batches since they joined."""
    location = str(tmp_path_factory.mktemp("shared"))
    ids = ValueIds()
    store = _writer(location, ids)
    followers: list[tuple[StateFollower, dict[Any, int]]] = []
    pending: list[dict[Any, int]] = []  # per follower: the batches since its version
    position = 0
    for step in steps:
        if step[0] == "append":
            for value in step[1]:
                ids.intern(value)
            position += 1
            store.append(DatomColumns.of(step[2]), _marks(ids, position))
            for since in pending:
                for datom, weight in step[2].items():
                    since[datom] = since.get(datom, 0) + weight
        elif step[0] == "compact":
            assert store.manifest is not None
            store.compact_in_background()
            store.settle()
        elif step[0] == "join":
            followers.append((StateFollower.open(location, memory_values=2), {}))
            pending.append({})
        else:
            for (follower, _), since in zip(followers, pending, strict=True):
                followed = follower.next()
                if followed is not None:
                    delta = followed.delta
                    assert {(e, a, v): w for e, a, v, w in zip(
                        delta.e.tolist(), delta.a.tolist(), delta.v.tolist(),
                        delta.w.tolist(), strict=True)} == {d: w for d, w in since.items() if w}
                    follower.manifest = followed.manifest
                since.clear()
    for follower, _ in [*followers, (StateFollower.open(location, memory_values=2), {})]:
        follower.next()
        assert follower.ids.size == ids.size
        assert follower.ids.values(np.arange(ids.size)) == ids.values(np.arange(ids.size))
        assert all(follower.ids.lookup(ids.value(i)) == i for i in range(ids.size))


def test_replaced_files_are_kept_retain_seconds(tmp_path: Path) -> None:
    """Kept: a follower at an old version steps past a compaction; not kept
    (``retain_seconds=0``): it cannot, and says why."""
    for retain in (3600.0, 0.0):
        location = str(tmp_path / str(retain))
        ids = ValueIds()
        store = _writer(location, ids, retain)
        follower = StateFollower.open(location, memory_values=2)
        for position in range(1, 4):
            ids.intern(f"v{position}")
            store.append(DatomColumns.of({(position, 0, 0): 1}), _marks(ids, position))
        store.compact_in_background(rebase=True)
        store.settle()
        ids.intern("last")
        store.append(DatomColumns.of({(9, 0, 0): 1}), _marks(ids, 4))  # deletes the garbage
        assert len(os.listdir(f"{location}/{MANIFESTS}")) == 1
        if retain:
            followed = follower.next()
            assert followed is not None and len(followed.delta) == 4
        else:
            with pytest.raises(FollowerBehind, match="further behind"):
                follower.next()


def test_a_follower_s_own_ids_are_numbered_down_and_given_up_to_the_writer_s(
        tmp_path: Path) -> None:
    location = str(tmp_path)
    writer = ValueIds()
    store = _writer(location, writer)

    def numbered(*values: Any) -> bool:
        """The writer numbers ``values`` in a version; whether the follower's own went."""
        writer.intern_values(list(values))
        store.append(DatomColumns.of({(writer.size, 0, 0): 1}), _marks(writer, writer.size))
        assert store.manifest is not None
        return ids.reached(store.manifest)

    ids = StateFollower.open(location, memory_values=2).ids
    assert not numbered("a", 1, keyword("k"))
    assert ids.intern("a") == 0 and ids.intern(1) == 1
    assert ids.intern("mine") == MAX_IDS - 1 and ids.intern(2) == MAX_IDS - 2
    assert ids.lookup("mine") == MAX_IDS - 1 and ids.lookup("none") is None
    assert ids.values(np.array([0, MAX_IDS - 2, 2, MAX_IDS - 1])) == ["a", 2, keyword("k"),
                                                                     "mine"]
    assert ids.lookup_values(["mine", "a", "none"]).tolist() == [MAX_IDS - 1, 0, -1]
    assert ids.lookup_ints(np.array([2, 1, 5])).tolist() == [MAX_IDS - 2, 1, -1]
    assert ids.intern_values(["b", "a"]).tolist() == [MAX_IDS - 3, 0]
    assert sorted(map(str, ids.objects(np.array([0, 2, MAX_IDS - 1, MAX_IDS - 2])))) == [
        ":k", "a", "mine"]
    assert not numbered("c")  # not one of the follower's own
    assert numbered(2, "d")  # 2 was: it is the writer's 4 from now on
    assert ids.intern(2) == ids.lookup(2) == 4 and ids.value(MAX_IDS - 2) == 2
    assert ids.size == 6
    twice = ValueIds()  # a damaged writer: its next value is "a" again
    twice.intern_values([*range(10, 16), "a"])
    store.values = DriverValues(lambda: twice)
    store.append(DatomColumns.of({(9, 0, 0): 1}), _marks(twice, 9))
    assert store.manifest is not None
    with pytest.raises(WorkersError, match="number a value twice"):
        ids.reached(store.manifest)
    with pytest.raises(WorkersError, match="writer's snapshots"):
        ids.copy()


def test_every_public_method_answers_from_the_replica_or_the_own_ids() -> None:
    """A follower's dictionary answers all a dictionary is asked (:class:`Numbering`, what
    :class:`ValueIds` answers), from its replica or its own ids."""
    public = {name for name in vars(ValueIds) if not name.startswith("_")} - {"from_entries"}
    asked = {name for name in vars(Numbering) if not name.startswith("_")}
    assert asked == public
    assert public <= set(vars(FollowerIds)), public - set(vars(FollowerIds))


def test_a_writer_taking_a_state_up_deletes_what_its_last_writer_left_behind(
        tmp_path: Path) -> None:
    """Files the version does not name go once kept ``retain_seconds``, except the tick
    files its last writer wrote past it (never published, and the names the new writer
    writes next): those go at once.  The epoch, the names and the ids go on."""
    location = str(tmp_path)
    ids = ValueIds()
    ids.intern("a")
    first = _writer(location, ids)
    first.append(DatomColumns.of({(0, 0, 0): 1}), _marks(ids, 1, 1))
    assert first.manifest is not None
    epoch = first.manifest.epoch
    for name in ("batch-left-behind.arrow", f"batch-{epoch}-2.arrow", f"values-{epoch}-2.arrow"):
        (tmp_path / name).write_bytes(b"")  # what a writer stopped mid-tick left
    opened = StateFollower.open(location, memory_values=2)
    second = StateStore(location, values=DriverValues(lambda: opened.ids.replica))
    assert second.take_over(opened.manifest)
    assert not (tmp_path / f"batch-{epoch}-2.arrow").exists()
    assert (tmp_path / "batch-left-behind.arrow").exists()  # kept retain_seconds
    for position in (2, 3):
        opened.ids.replica.intern(f"v{position}")
        second.append(DatomColumns.of({(position, 0, 0): 1}),
                      _marks(opened.ids.replica, position, position))
        second.retain_seconds = 0.0  # what was replaced before goes at the next append
    manifest = second.manifest
    assert manifest is not None and manifest.epoch == epoch
    assert sorted(os.listdir(location)) == sorted([MANIFESTS, *manifest.files()])
    follower = StateFollower.open(location, memory_values=2)
    assert follower.ids.values(np.arange(3)) == ["a", "v2", "v3"]
    follower.manifest = opened.manifest  # at version 1: the new writer's ticks are read
    followed = follower.next()
    assert followed is not None and followed.delta.e.tolist() == [2, 3]


def test_a_tick_in_pieces_shows_its_last_piece_only(tmp_path: Path) -> None:
    """Versions appended as pieces of one tick (``complete=False``) stay off the manifest
    file (a follower sees the tick whole); its refusals ride along."""
    location = str(tmp_path)
    ids = ValueIds()
    store = _writer(location, ids)
    follower = StateFollower.open(location, memory_values=2)
    store.append(DatomColumns.of({(1, 0, 0): 1}), replace(_marks(ids, 5, 1), complete=False))
    assert follower.next() is None  # the file still shows version 0
    refused = ((4, "tx-conflict", "no"),)
    store.append(DatomColumns.of({(2, 0, 0): 1}), replace(_marks(ids, 5, 2), refused=refused))
    followed = follower.next()
    assert followed is not None and followed.delta.e.tolist() == [1, 2]
    assert followed.manifest.stamp is not None and followed.manifest.stamp.marks.refused == refused


def _taken_over(location: str) -> tuple[StateStore, ValueIds, StateStore, ValueIds]:
    """A writer (and its dictionary) that wrote one version, and a second that took the
    state over from it (and its replica of the dictionary)."""
    ids = ValueIds()
    first = _writer(location, ids)
    first.append(DatomColumns.of({(1, 0, 0): 1}), _marks(ids, 1, 1))
    opened = StateFollower.open(location, memory_values=2)
    replica = opened.ids.replica
    second = StateStore(location, values=DriverValues(lambda: replica))
    assert second.take_over(opened.manifest)
    return first, ids, second, replica


def test_a_writer_stops_when_another_took_the_state_over(tmp_path: Path) -> None:
    """The second writer's claim (its take-over publishes the version it took up anew)
    comes first: the first, a zombie resumed, publishes nothing — at once, or after the
    second published more (its successor's name deleted, created anew below the newest
    and deleted again)."""
    for more in (0, 3):
        location = str(tmp_path / str(more))
        first, ids, second, replica = _taken_over(location)
        for position in range(2, 2 + more):
            second.append(DatomColumns.of({(position, 0, 0): 1}),
                          _marks(replica, position, position))
        newest_before = sorted(os.listdir(f"{location}/{MANIFESTS}"))
        with pytest.raises(WorkersError, match="another writer wrote"):
            first.append(DatomColumns.of({(9, 0, 0): 1}), _marks(ids, 9, 9))
        assert sorted(os.listdir(f"{location}/{MANIFESTS}")) == newest_before
        assert StateFollower.open(location, memory_values=2).manifest == second.manifest
        with pytest.raises(WorkersError, match="another writer wrote"):  # nor a restamp
            first.restamp(_marks(ids, 10, 1))


def test_a_writer_taken_over_from_overwrites_none_of_the_new_writer_s_files(
        tmp_path: Path) -> None:
    """Tick files are named by their version, so a zombie resumed writes a version the new
    writer writes too (its batch, the values it numbered).  It replaces none of the new
    writer's files — what a follower reads is the new writer's — and the files it wrote
    before the new writer reached that version (never published) give way to the new
    writer's."""
    for more in (0, 3):
        location = str(tmp_path / str(more))
        first, ids, second, replica = _taken_over(location)
        for position in range(2, 2 + more):
            replica.intern(f"second {position}")
            second.append(DatomColumns.of({(position, 0, 0): 1}),
                          _marks(replica, position, position))
        ids.intern("zombie")
        with pytest.raises(WorkersError, match="another writer wrote"):
            first.append(DatomColumns.of({(9, 0, 0): 1}), _marks(ids, 9, 9))
        replica.intern("second last")
        second.append(DatomColumns.of({(8, 0, 0): 1}), _marks(replica, 8, 8))
        follower = StateFollower.open(location, memory_values=2)
        assert follower.manifest == second.manifest
        written = [1, *range(2, 2 + more), 8]
        assert open_state(follower.manifest).state.datoms() == {(p, 0, 0): 1 for p in written}
        assert follower.ids.values(np.arange(follower.ids.size)) == [
            *(f"second {p}" for p in range(2, 2 + more)), "second last"]
        assert not [name for name in os.listdir(location) if name.startswith(".aside-")]


def test_a_take_over_loses_to_a_publication_after_the_version_it_took_up(
        tmp_path: Path) -> None:
    """A follower leading from the version it read, when its writer published after it:
    the claim fails and changes nothing (it follows on, and tries again)."""
    location = str(tmp_path)
    ids = ValueIds()
    first = _writer(location, ids)
    opened = StateFollower.open(location, memory_values=2)
    first.append(DatomColumns.of({(1, 0, 0): 1}), _marks(ids, 1, 1))
    second = StateStore(location, values=DriverValues(lambda: opened.ids.replica))
    assert not second.take_over(opened.manifest)
    first.append(DatomColumns.of({(2, 0, 0): 1}), _marks(ids, 2, 2))  # still the writer
    opened.next()
    opened.manifest = StateFollower.open(location, memory_values=2).manifest
    assert second.take_over(opened.manifest)


def test_of_writers_racing_for_one_successor_exactly_one_publishes(tmp_path: Path) -> None:
    """Publication ``n + 1`` created at once by several threads: one creates it, whole;
    the others fail.  Readers see the greatest number present."""
    fs, root = pafs.LocalFileSystem(), str(tmp_path)
    assert newest(fs, root) is None
    assert publish(fs, root, 0, "zero")
    for serial in range(1, 30):
        barrier = threading.Barrier(4)
        won: list[int] = []

        def race(writer: int, serial: int = serial, barrier: threading.Barrier = barrier,
                 won: list[int] = won) -> None:
            barrier.wait()
            if publish(fs, root, serial, f"{writer} " * 10_000):
                won.append(writer)

        threads = [threading.Thread(target=race, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1
        assert newest(fs, root) == (serial, f"{won[0]} " * 10_000)
    assert not create_if_absent(fs, f"{root}/{MANIFESTS}/{29:020d}.json", "again")
    assert not publish(fs, root, 3, "stale")  # deleted, created anew below the newest: gone
    assert os.listdir(f"{root}/{MANIFESTS}") == [f"{29:020d}.json"]


def test_a_state_written_before_numbered_publications_is_read_until_one_is_made(
        tmp_path: Path) -> None:
    """The one ``manifest.json`` of a location written by an earlier deltalog is its newest
    manifest (publication -1) while nothing is published; its taker-over's publication 0
    supersedes it."""
    fs, root = pafs.LocalFileSystem(), str(tmp_path)
    (tmp_path / LEGACY_MANIFEST).write_text("before")
    assert newest(fs, root) == (-1, "before")
    assert publish(fs, root, 0, "taken over")
    assert newest(fs, root) == (0, "taken over")


def test_a_remote_store_publishes_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyarrow's in-memory file system (as a bucket is reached): checked, then written."""
    remote = pafs._MockFileSystem()
    assert publish(remote, "/state", 0, "a") and not publish(remote, "/state", 0, "b")
    assert publish(remote, "/state", 1, "c") and newest(remote, "/state") == (1, "c")
    assert not publish(remote, "/state", 0, "d") and newest(remote, "/state") == (1, "c")
