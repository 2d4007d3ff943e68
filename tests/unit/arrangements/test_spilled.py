"""The spilled dictionary (the driver's under ``executor=spark``): the same ids, lookups and
values as the in-memory one, whatever was written out, merged or hashed alike."""

from __future__ import annotations

import datetime
import os
import pickle
import uuid
from typing import Any

import edn_format
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.arrangements import spilled as spilled_module
from workers.arrangements.spilled import SpilledValueIds
from workers.arrangements.values import ValueIds, object_key
from workers.db.bulk import intern_column, lookup_column
from workers.edn import keyword

values = st.one_of(st.integers(-3, 40), st.integers(-2**63, 2**63 - 1),
                   st.sampled_from([-1.0, 0.0, -0.0, 1.0, 2.5, True, False, 2**70, "1", "a",
                                    keyword("a"), edn_format.Keyword("b"),
                                    uuid.UUID(int=7), datetime.date(2026, 11, 28)]),
                   st.text(max_size=3))
# A step interns one value, or a column of ints, or a column of any values.
steps = st.one_of(values, st.lists(st.integers(-5, 60), max_size=30).map(np.array),
                  st.lists(values, max_size=12).map(tuple))


def _intern(ids: ValueIds, step: Any) -> list[int]:
    if isinstance(step, np.ndarray):
        return ids.intern_ints(step.astype(np.int64)).tolist()  # type: ignore[no-any-return]
    if isinstance(step, tuple):
        return intern_column(ids, list(step)).tolist()  # type: ignore[no-any-return]
    return [ids.intern(step)]


@settings(max_examples=150)
@given(st.lists(steps, max_size=40), st.lists(values, max_size=20), st.integers(1, 5),
       st.integers(1, 4))
def test_the_spilled_dictionary_answers_as_the_one_in_memory(
        steps: list[Any], asked: list[Any], spill: int, merge_rows: int) -> None:
    """Small spills and merges of a few rows at a time: every path through the files."""
    memory, spilled = ValueIds(), SpilledValueIds(spill_values=spill)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spilled_module, "MERGE_ROWS", merge_rows)
        for step in steps:
            assert _intern(spilled, step) == _intern(memory, step)
    assert spilled.size == memory.size
    everything = np.arange(memory.size)
    assert spilled.values(everything) == memory.values(everything)
    assert [spilled.value(i) for i in range(memory.size)] == memory.values(everything)
    assert [type(x) for x in spilled.values(everything)] == [
        type(x) for x in memory.values(everything)]
    for x in asked:
        assert spilled.lookup(x) == memory.lookup(x)
    assert lookup_column(spilled, asked).tolist() == lookup_column(memory, asked).tolist()
    ints = np.array([x for x in asked if type(x) is int and abs(x) < 2**63], np.int64)
    assert spilled.lookup_ints(ints).tolist() == memory.lookup_ints(ints).tolist()
    picked = everything[::2].astype(np.int32)
    assert sorted(map(repr, spilled.objects(picked))) == sorted(
        map(repr, memory.objects(picked)))
    copied = spilled.copy()
    assert type(copied) is ValueIds and copied.values(everything) == memory.values(everything)


def test_hashes_that_collide_cost_a_comparison_never_a_wrong_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every object's key hashes alike here: each is told apart by its value in the log."""

    class Colliding:
        def __init__(self, key: Any) -> None:
            self.key = key

        def __hash__(self) -> int:
            return 1

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Colliding) and other.key == self.key

    monkeypatch.setattr(spilled_module, "object_key", lambda x: Colliding(object_key(x)))
    ids = SpilledValueIds(spill_values=2)
    words = [f"w{i}" for i in range(9)]
    assigned = [ids.intern(w) for w in words]
    assert assigned == list(range(9)) and len(ids._hashes) >= 1
    assert [ids.lookup(w) for w in reversed(words)] == assigned[::-1]
    assert lookup_column(ids, [*words, "w9"]).tolist() == [*assigned, -1]  # all at once
    assert ids.lookup("w9") is None
    assert intern_column(ids, ["w9", "w3"]).tolist() == [9, 3]


def test_only_the_latest_values_stay_in_memory() -> None:
    ids = SpilledValueIds(spill_values=1000)
    ids.intern_ints(np.arange(100_000, dtype=np.int64) * 3)
    assert ids.size == 100_000 and ids.resident == ids._tier.size < 1000
    assert ids.nbytes < 100_000  # ValueIds holds ~26 B a value
    assert len(ids._ints) <= 2 * np.log2(100_000 / 1000)  # merged as a binary counter
    assert ids.lookup(3 * 99_999) == 99_999 and ids.lookup(1) is None


@settings(max_examples=100)
@given(st.lists(steps, max_size=30), st.lists(steps, max_size=10), st.integers(1, 5),
       st.integers(1, 4))
def test_a_snapshot_dictionary_written_a_piece_at_a_time_answers_as_the_one_in_memory(
        before: list[Any], after: list[Any], spill: int, merge_rows: int) -> None:
    """A snapshot's entries written to the files ``merge_rows`` ids at a time (a restore
    under Spark), then numbering goes on in both: the same ids, values and lookups."""
    memory = ValueIds()
    for step in before:
        _intern(memory, step)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spilled_module, "MERGE_ROWS", merge_rows)
        spilled = SpilledValueIds.from_entries(*memory.entries(), spill_values=spill)
        assert spilled.resident == 0 and spilled.size == memory.size
        for step in after:
            assert _intern(spilled, step) == _intern(memory, step)
    everything = np.arange(memory.size)
    assert spilled.values(everything) == memory.values(everything)
    asked = [x for step in before + after for x in (
        step.tolist() if isinstance(step, np.ndarray) else step if isinstance(step, tuple)
        else [step])]
    assert lookup_column(spilled, asked).tolist() == lookup_column(memory, asked).tolist()
    kinds, payloads, objects = spilled.entries()  # the files' own columns, as a save reads
    assert spilled.resident == 0
    assert [kinds.tolist(), payloads.tolist(), list(map(repr, objects))] == [
        part.tolist() if isinstance(part, np.ndarray) else list(map(repr, part))
        for part in memory.entries()]


@pytest.mark.parametrize("entries", [
    ([0, 0], [5, 5], []),  # an int twice
    ([1, 1], [0, 1], ["x", "x"]),  # an object twice
    ([0, 1], [5, 0], [5]),  # an int as an object
    ([2], [0], []),  # no such kind
    ([1], [3], ["x"]),  # an object's index out of place
    ([0], [1, 2], []),  # columns of different lengths
])
def test_entries_that_do_not_describe_a_dictionary_are_refused_as_in_memory(
        entries: tuple[list[int], list[int], list[Any]]) -> None:
    kinds, payloads, objects = np.array(entries[0], np.int8), np.array(entries[1]), entries[2]
    with pytest.raises(ValueError) as in_memory:
        ValueIds.from_entries(kinds, payloads, objects)
    with pytest.raises(ValueError) as in_files:
        SpilledValueIds.from_entries(kinds, payloads, objects, spill_values=1)
    assert str(in_files.value) == str(in_memory.value)


def test_objects_of_one_hash_are_told_apart_by_value_when_entries_are_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct objects whose hashes collide are a dictionary; one object twice is not."""
    monkeypatch.setattr(spilled_module, "hash", lambda _: 1, raising=False)
    kinds = np.ones(3, np.int8)
    assert SpilledValueIds.from_entries(kinds, np.arange(3), ["a", "b", "c"]).lookup("c") == 2
    with pytest.raises(ValueError, match="twice"):
        SpilledValueIds.from_entries(kinds, np.arange(3), ["a", "b", "a"])


def test_every_public_method_answers_from_the_files_not_the_unset_columns() -> None:
    """The inherited columns are left unset: a method not overridden would read them."""
    public = {name for name in vars(ValueIds) if not name.startswith("_")} - {"from_entries"}
    above = SpilledValueIds.__mro__[:SpilledValueIds.__mro__.index(ValueIds)]
    overridden = {name for cls in above for name in vars(cls)}
    assert public <= overridden, public - overridden


def test_the_files_are_the_process_own_and_go_with_the_dictionary() -> None:
    ids = SpilledValueIds(spill_values=1)
    ids.intern("x")
    directory = ids._directory
    assert os.stat(directory).st_mode & 0o077 == 0  # private
    with pytest.raises(TypeError):
        pickle.dumps(ids)
    del ids
    assert not os.path.exists(directory)
