"""A shared state's dictionary read in its files (value → id runs beside the values files):
stable keys, a follower that copies nothing, runs folded by compaction, files written once."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import edn_format
import numpy as np
import pytest
from edn_format.immutable_dict import ImmutableDict
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import Numbering, ValueIds, int_key
from workers.db.codec import encode_schema
from workers.db.schema import BUILTIN_SCHEMA
from workers.edn import keyword
from workers.errors import WorkersError
from workers.executors.spark import dictionary as dictionary_module
from workers.executors.spark import runs as runs_module
from workers.executors.spark import state_dictionary as state_dictionary_module
from workers.executors.spark.dictionary import DriverValues
from workers.executors.spark.runs import value_key
from workers.executors.spark.shared import StateFollower
from workers.executors.spark.state import Marks, StateStore, keys_name, values_name

TEXTS = ["", "a", "straße ✓", "1", "a longer text, hashed the same in every process"]
values = st.one_of(st.integers(-5, 60), st.integers(-2**63, 2**63 - 1),
                   st.sampled_from([1, 1.0, True, False, "1", 0.0, -0.0, keyword("a"), "a",
                                    uuid.UUID(int=7), datetime.date(2026, 11, 28),
                                    datetime.datetime(2026, 11, 28, 19, 30,
                                                      tzinfo=datetime.UTC)]),
                   st.sampled_from([(4, 1), [4, 1], (4.0, 1), frozenset({1}), None,
                                    Decimal("1.5"), Decimal("1.50"), ((1,), "x"), 2**70,
                                    ImmutableDict({1: "a"}), edn_format.Symbol("s")]),
                   st.text(max_size=3))


def _marks(ids: Numbering, position: int) -> Marks:
    return Marks(position, 0, encode_schema(BUILTIN_SCHEMA), ids.size)


def _writer(location: str, ids: ValueIds) -> StateStore:
    store = StateStore(location, values=DriverValues(lambda: ids), retain_seconds=3600.0)
    store.reset(DatomColumns.of({}), _marks(ids, 0))
    return store


def _numbered(store: StateStore, ids: ValueIds, xs: list[Any]) -> None:
    """The writer numbers ``xs`` and appends a version."""
    ids.intern_values(xs)
    store.append(DatomColumns.of({(ids.size, 0, 0): 1}), _marks(ids, ids.size))


def test_keys_are_the_same_in_every_process_and_kinds_stay_apart(tmp_path: Path) -> None:
    """Text's keys do not depend on the process's hash seed; 1, 1.0, True and "1" have
    four ids in a follower, which gives each back as it was numbered."""
    script = ("import json, sys; from workers.executors.spark.runs import value_key; "
              "print(json.dumps([value_key(x) for x in json.loads(sys.argv[1])]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", script, json.dumps(TEXTS)], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert [tuple(k) for k in json.loads(out)] == [value_key(x) for x in TEXTS]
    assert len({value_key(x) for x in [1, 1.0, True, "1", (1,), (1.0,)]}) == 6
    assert value_key(0.0) == value_key(-0.0)
    assert value_key((1, "a")) == value_key([1, "a"])  # one value, as the dictionary has it
    assert value_key(frozenset({"a", "b", 3})) == value_key(frozenset({3, "b", "a"}))
    location = str(tmp_path)
    ids = ValueIds()
    store = _writer(location, ids)
    _numbered(store, ids, [1, 1.0, True, "1", keyword("k")])
    follower = StateFollower.open(location, memory_values=2).ids
    asked = [1, 1.0, True, "1", keyword("k"), False, 2]
    assert follower.lookup_values(asked).tolist() == [0, 1, 2, 3, 4, -1, -1]
    assert [follower.lookup(x) for x in asked] == [0, 1, 2, 3, 4, None, None]
    got = follower.values(np.arange(5))
    assert [(type(x), x) for x in got] == [(int, 1), (float, 1.0), (bool, True), (str, "1"),
                                           (type(keyword("k")), keyword("k"))]


def test_a_follower_opening_a_state_reads_only_what_it_is_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No copy of the dictionary: nothing written to the temporary directory, and only the
    rows of the values asked decoded, whatever the dictionary's size."""
    location = str(tmp_path / "state")
    ids = ValueIds()
    store = _writer(location, ids)
    for start in range(0, 30_000, 10_000):
        _numbered(store, ids, [f"v{i}" for i in range(start, start + 10_000)]
                  + list(range(start, start + 10_000)))
    store.compact_in_background()
    store.settle()
    _numbered(store, ids, ["last"])
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    decoded: list[int] = []
    rows = state_dictionary_module.decoded_rows
    monkeypatch.setattr(state_dictionary_module, "decoded_rows",
                        lambda batch, start=0: decoded.append(batch.num_rows) or rows(batch, start))
    follower = StateFollower.open(location, memory_values=16).ids
    assert follower.size == ids.size and not decoded
    asked = ["v17", "v29999", "last", 12_345, "absent", -1]
    assert follower.lookup_values(asked).tolist() == [
        -1 if ids.lookup(x) is None else ids.lookup(x) for x in asked]
    chosen = np.array([0, 7, ids.size - 1, 40_000])
    assert follower.values(chosen) == ids.values(chosen)
    assert sum(decoded) <= 8 and follower.resident == 0
    assert not os.listdir(scratch)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.one_of(st.lists(values, max_size=6).map(tuple), st.just("compact"),
                                st.just("follow")), max_size=16),
       asked=st.lists(values, max_size=12), merge_rows=st.integers(1, 4),
       piece=st.integers(1, 5))
def test_lookups_agree_with_the_dictionary_in_memory_through_appends_and_compactions(
        steps: list[Any], asked: list[Any], merge_rows: int, piece: int,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs written a few entries of a piece at a time and folded a few of each run at a
    time: a follower's lookups and values are the writer's in-memory ``ValueIds``'s at every
    version it steps to, and at the end."""
    location = str(tmp_path_factory.mktemp("state"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "MERGE_ROWS", merge_rows)
        patch.setattr(dictionary_module, "PIECE", piece)
        ids = ValueIds()
        store = _writer(location, ids)
        follower = StateFollower.open(location, memory_values=2)
        for step in steps:
            if step == "compact":
                store.compact_in_background()
                store.settle()
            elif step == "follow":
                followed = follower.next()
                if followed is not None:
                    follower.manifest = followed.manifest
                _agree(follower, ids, asked)
            else:
                _numbered(store, ids, list(step))
        follower.next()
        _agree(follower, ids, [*asked, *(ids.value(i) for i in range(ids.size))])
        copied = ValueIds.from_entries(*follower.ids.replica.entries())  # a snapshot's
        assert copied.values(np.arange(ids.size)) == ids.values(np.arange(ids.size))
        _agree(StateFollower.open(location, memory_values=2), ids, asked)


def _agree(follower: StateFollower, ids: ValueIds, asked: list[Any]) -> None:
    every = np.arange(follower.ids.size)
    assert follower.ids.values(every) == ids.values(every)
    assert [type(x) for x in follower.ids.values(every)] == [type(x) for x in ids.values(every)]
    want = [-1 if ids.lookup(x) is None or ids.lookup(x) >= follower.ids.size else ids.lookup(x)
            for x in asked]
    assert follower.ids.lookup_values(asked).tolist() == want
    assert [follower.ids.lookup(x) for x in asked] == [None if i < 0 else i for i in want]
    ints = np.array([x for x in asked if int_key(x) is not None], np.int64)
    assert follower.ids.lookup_ints(ints).tolist() == [
        w for x, w in zip(asked, want, strict=True) if int_key(x) is not None]


def test_a_writer_taken_over_from_overwrites_no_run_of_the_new_writer(tmp_path: Path) -> None:
    """A zombie writer resumed after a take-over writes a version the new writer wrote:
    the run of that version stays the new writer's (created only if absent), and a
    follower finds the new writer's ids."""
    location = str(tmp_path)
    ids = ValueIds()
    first = _writer(location, ids)
    _numbered(first, ids, ["a"])
    opened = StateFollower.open(location, memory_values=2)
    replica = opened.ids.replica
    second = StateStore(location, values=DriverValues(lambda: replica))
    assert second.take_over(opened.manifest)
    replica.intern_values(["second", 2])
    second.append(DatomColumns.of({(2, 0, 0): 1}), _marks(replica, 2))
    assert second.manifest is not None
    run = tmp_path / keys_name(values_name(second.manifest.epoch, 2))
    written = run.read_bytes()
    ids.intern_values(["zombie", 3])
    with pytest.raises(WorkersError, match="another writer wrote"):
        first.append(DatomColumns.of({(9, 0, 0): 1}), _marks(ids, 9))
    assert run.read_bytes() == written
    follower = StateFollower.open(location, memory_values=2).ids
    assert follower.lookup_values(["second", 2, "zombie", 3]).tolist() == [1, 2, -1, -1]


def test_a_state_written_before_the_runs_gets_them_when_opened(tmp_path: Path) -> None:
    location = str(tmp_path)
    ids = ValueIds()
    store = _writer(location, ids)
    _numbered(store, ids, ["a", 1, "b"])
    _numbered(store, ids, [2.0, "c", 3])
    runs = {run.name: run.read_bytes() for run in tmp_path.glob("*.keys")}
    assert len(runs) >= 2
    for run in tmp_path.glob("*.keys"):
        run.unlink()
    follower = StateFollower.open(location, memory_values=2).ids
    assert {run.name: run.read_bytes() for run in tmp_path.glob("*.keys")} == runs
    values = ["a", 1, "b", 2.0, "c", 3]
    assert follower.lookup_values(values).tolist() == ids.lookup_values(values).tolist()
    assert not list(tmp_path.glob(".aside-*"))
