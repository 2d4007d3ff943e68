"""The value dictionary: dense ids in order of first sight, stable, with Python's equality
(the tries' keys have it: docs/semantics.md), numbers held in NumPy columns."""

from __future__ import annotations

import pickle

import edn_format
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.arrangements import values as values_module
from workers.arrangements.values import ValueIds
from workers.db.bulk import lookup_column
from workers.edn import keyword


def test_ids_are_dense_in_order_of_first_sight_and_stable() -> None:
    ids = ValueIds()
    assert [ids.intern(x) for x in [7, "seven", keyword("seven"), 7, "seven"]] == [0, 1, 2, 0, 1]
    assert ids.size == 3
    assert [ids.value(i) for i in range(3)] == [7, "seven", keyword("seven")]


def test_equal_values_of_one_kind_share_an_id_and_come_back_as_interned() -> None:
    ids = ValueIds()
    one = ids.intern(1)
    assert len({one, ids.intern(1.0), ids.intern(True)}) == 3  # a long, a double, a boolean
    assert ids.intern(0.0) == ids.intern(-0.0) != ids.intern(0) != ids.intern(False)
    assert ids.intern(edn_format.Keyword("a/b")) == ids.intern(keyword("a/b"))
    assert len({ids.intern("1"), ids.intern(1.5), one}) == 3
    assert [type(ids.value(ids.intern(x))) for x in (1, 1.0, True)] == [int, float, bool]
    assert ids.intern(2**70) != ids.intern(float(2**70))  # beyond int64, still two kinds


def test_objects_are_the_values_that_are_not_longs_each_once() -> None:
    ids = ValueIds()
    column = np.array([ids.intern(x) for x in [7, 1.0, "a", 8, 1.0, True, 2**70]], np.int32)
    assert ids.objects(column) == [1.0, "a", True, 2**70]


def test_lookup_never_assigns_an_id() -> None:
    ids = ValueIds()
    ids.intern(5)
    assert ids.lookup(6) is None and ids.lookup("x") is None and ids.lookup(5.0) is None
    assert ids.lookup(5) == 0 and ids.size == 1


def test_numbers_keep_their_ids_when_merged_into_the_columns() -> None:
    ids = ValueIds()
    values = [(x * 7919) % 5003 - 2500 for x in range(5003)]  # several merges of the recent
    assigned = [ids.intern(x) for x in values]
    assert assigned == list(range(5003))
    assert [ids.lookup(x) for x in values] == assigned
    assert ids.value(4000) == values[4000]


def test_remembered_lookups_give_the_ids_of_the_columns() -> None:
    """Ints found in the columns are remembered, at most ``_FOUND_MEMO`` of them: a lookup
    answered from there, or searched again after they were forgotten, gives the same id."""
    ids = ValueIds()
    values = [(x * 7919) % 5003 for x in range(5003)]
    assigned = dict(zip(values, (ids.intern(x) for x in values), strict=True))
    ids.intern_ints(np.array([values[0]], np.int64))  # every number in the columns
    assert ids.lookup(-1) is None and ids.lookup(5003) is None
    for asked in (values[:10] * 3, values, values[::-1], values[:3] * 2):
        assert [ids.lookup(x) for x in asked] == [assigned[x] for x in asked]
        assert [ids.intern(x) for x in asked] == [assigned[x] for x in asked]
    assert ids.size == 5003


def test_a_column_of_ints_gets_the_ids_interning_each_in_turn_would() -> None:
    column = np.array([40, 3, 40, -2**63, 2**63 - 1, 3, 9], np.int64)
    one_by_one = ValueIds()
    one_by_one.intern(9)
    expected = [one_by_one.intern(int(x)) for x in column]
    bulk = ValueIds()
    bulk.intern(9)
    assert bulk.intern_ints(column).tolist() == expected
    assert [bulk.value(i) for i in expected] == column.tolist()


@given(st.lists(st.lists(st.integers(-5, 3000) | st.integers(-2**63, 2**63 - 1), max_size=300),
                max_size=12))
def test_columns_of_known_and_new_ints_get_the_ids_interning_each_in_turn_would(
        columns: list[list[int]]) -> None:
    """Columns after columns (the later ones partly known: read from ``_direct``, the
    others numbered): the ids, new ones included, are those of interning one by one."""
    bulk, one_by_one = ValueIds(), ValueIds()
    for column in columns:
        expected = [one_by_one.intern(x) for x in column]
        assert bulk.intern_ints(np.array(column, np.int64)).tolist() == expected


@given(st.lists(st.one_of(st.integers(-5, 3000), st.lists(st.integers(-5, 3000), max_size=300)),
                max_size=30))
def test_small_ints_are_found_without_a_search_and_exactly(
        steps: list[int | list[int]]) -> None:
    """Ints interned one by one or as columns (merges, growth of ``_direct``), then asked
    of the dictionary, a copy, a pickled one and one from entries: each gives the id
    interning gave, and the dense small ones never search the column."""
    ids, assigned = ValueIds(), {}
    for step in steps:
        if isinstance(step, int):
            assigned.setdefault(step, ids.intern(step))
        else:
            got = ids.intern_ints(np.array(step, np.int64)).tolist()
            for x, i in zip(step, got, strict=True):
                assert assigned.setdefault(x, i) == i
    asked = range(-6, 3002)
    want = [assigned.get(x) for x in asked]
    again = ValueIds.from_entries(*(part.copy() for part in ids.entries()))
    for other in (ids, ids.copy(), pickle.loads(pickle.dumps(ids)), again):
        assert [other.lookup(x) for x in asked] == want


def test_a_dense_int_is_found_without_searching_the_column(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ids = ValueIds()
    ids.intern_ints(np.arange(0, 10000, 2, dtype=np.int64)[::-1].copy())  # ids 4999..0
    ids.intern(3)  # a recent one, not in the column
    monkeypatch.setattr(values_module, "bisect_left", None)  # a search would raise
    assert [ids.lookup(x) for x in (0, 34, 9998, 3, 5)] == [4999, 4982, 0, 5000, None]


values = st.one_of(st.integers(-3, 3), st.sampled_from([-1.0, 0.0, 1.0, 2.5, True, False]),
                   st.sampled_from(["1", "a", keyword("a"), edn_format.Keyword("b")]),
                   st.integers(-2**63, 2**63 - 1))


def _kind(x: object) -> type:
    return type(x) if isinstance(x, bool | float | int) else object


@given(st.lists(values, max_size=40))
def test_two_values_share_an_id_exactly_when_equal_and_of_one_kind(xs: list[object]) -> None:
    ids = ValueIds()
    assigned = [ids.intern(x) for x in xs]
    for x, i in zip(xs, assigned, strict=True):
        for y, j in zip(xs, assigned, strict=True):
            assert (i == j) == (x == y and _kind(x) is _kind(y))
        assert ids.value(i) == x and _kind(ids.value(i)) is _kind(x) and ids.lookup(x) == i


@given(st.lists(values, max_size=40), st.lists(st.integers(0, 39), max_size=60))
def test_a_column_of_ids_decodes_as_each_id_alone(xs: list[object], picks: list[int]) -> None:
    ids = ValueIds()
    for x in xs:
        ids.intern(x)
    column = np.array([p % ids.size for p in picks] if ids.size else [], np.int64)
    decoded = ids.values(column)
    assert decoded == [ids.value(i) for i in column.tolist()]
    assert [_kind(x) for x in decoded] == [_kind(ids.value(i)) for i in column.tolist()]


@given(st.lists(st.one_of(values, st.lists(st.integers(-5, 3000), max_size=300)), max_size=30),
       st.lists(values, max_size=60))
def test_a_column_is_looked_up_as_each_value_alone(steps: list[object], asked: list[object]
                                                    ) -> None:
    """Values interned one by one or as int columns (recent ones not yet merged, ``_direct``
    grown or not), then a column asked at once: each id as ``lookup`` gives it, -1 for
    none, and nothing numbered."""
    ids = ValueIds()
    for step in steps:
        if isinstance(step, list):
            ids.intern_ints(np.array(step, np.int64))
        else:
            ids.intern(step)
    size = ids.size
    ints = [x for x in asked if type(x) is int] + list(range(-6, 3002))
    for column in (asked, ints):
        want = [-1 if (i := ids.lookup(x)) is None else i for x in column]
        assert lookup_column(ids, column).tolist() == want
    assert ids.size == size


def test_no_more_ids_than_an_int32_column_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(values_module, "MAX_IDS", 2)
    ids = ValueIds()
    ids.intern("a")
    with pytest.raises(OverflowError):
        ids.intern_ints(np.array([1, 2], np.int64))
    ids.intern(1)
    with pytest.raises(OverflowError):
        ids.intern(2)
    assert ids.lookup(1) == 1 and ids.size == 2


@given(st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=3),
                          st.floats(allow_nan=False), st.booleans()), max_size=40))
def test_entries_give_back_a_dictionary_with_the_same_ids(xs: list[object]) -> None:
    ids = ValueIds()
    for x in xs:
        ids.intern(x)
    again = ValueIds.from_entries(*(part.copy() for part in ids.entries()))
    assert [again.value(i) for i in range(again.size)] == [ids.value(i) for i in range(ids.size)]
    assert [again.lookup(x) for x in xs] == [ids.lookup(x) for x in xs]
    assert again.intern("new one") == ids.size  # numbering goes on after them


@pytest.mark.parametrize(("kinds", "payloads", "objects"), [
    ([0, 0], [5, 5], []),  # an int twice
    ([1, 1], [0, 1], ["a", "a"]),  # an object twice
    ([1, 0], [1, 3], ["a", "b"]),  # an object's index out of place
    ([2], [0], []),  # no such kind
], ids=["int-twice", "object-twice", "index", "kind"])
def test_entries_that_are_no_dictionary_are_refused(kinds: list[int], payloads: list[int],
                                                    objects: list[object]) -> None:
    with pytest.raises(ValueError):
        ValueIds.from_entries(np.array(kinds, np.int8), np.array(payloads, np.int64), objects)
