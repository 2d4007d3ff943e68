"""workers.zset.row: ``1``, ``1.0`` and ``true`` are three values — in a row, a dict of rows,
a set of values — although Python finds them equal; a plain tuple of the same kinds still
equals a Row, both ways."""

from __future__ import annotations

import pickle
from decimal import Decimal
from typing import Any

import edn_format
import pytest
from edn_format.immutable_dict import ImmutableDict
from edn_format.immutable_list import ImmutableList

from workers.edn import dumps, keyword
from workers.zset.row import Row, ValueSet, same, value_key

# (a, b, whether they are one value)
SAME = [
    (1, 1, True),
    (1, 1.0, False),
    (1, True, False),
    (1.0, True, False),
    (0, False, False),
    (0, 0.0, False),
    (0.0, False, False),
    (1, Decimal(1), False),
    (1.5, 1.5, True),
    (True, True, True),
    ("a", "a", True),
    (keyword("k"), edn_format.Keyword("k"), True),  # interned and plain: one keyword
    ((1, 2), (1, 2), True),
    ((1, 2), (1.0, 2), False),
    (ImmutableList([1]), ImmutableList([1]), True),
    (ImmutableList([True]), ImmutableList([1]), False),
    (frozenset({1, 2}), frozenset({1, 2}), True),
    (frozenset({1}), frozenset({True}), False),
    (ImmutableDict({keyword("a"): 1}), ImmutableDict({keyword("a"): 1}), True),
    (ImmutableDict({keyword("a"): 1}), ImmutableDict({keyword("a"): 1.0}), False),
    (ImmutableDict({1: "x"}), ImmutableDict({True: "x"}), False),
    (None, None, True),
    (1, "1", False),
]


@pytest.mark.parametrize(("a", "b", "one"), SAME, ids=[f"{a!r}~{b!r}" for a, b, _ in SAME])
def test_same_is_equality_of_one_kind(a: Any, b: Any, one: bool) -> None:
    assert same(a, b) is one
    assert same(b, a) is one
    assert (Row((a,)) == Row((b,))) is one
    assert (Row((a,)) != Row((b,))) is (not one)
    if one:
        assert hash(Row((a,))) == hash(Row((b,)))


def test_rows_of_1_1dot0_and_true_are_three_keys() -> None:
    rows = {Row((1,)): 1, Row((1.0,)): 2, Row((True,)): 3}
    assert len(rows) == 3
    assert [rows[(1,)], rows[(1.0,)], rows[(True,)]] == [1, 2, 3]  # plain tuples find them
    assert len({Row((0,)), Row((0.0,)), Row((False,))}) == 3


def test_a_row_equals_a_plain_tuple_of_the_same_kinds_both_ways() -> None:
    assert {Row((1, "a")): 1} == {(1, "a"): 1}
    assert {Row((1, "a")): 1} == {(1, "a"): 1}
    assert {Row((1.0, "a")): 1} != {(1, "a"): 1}
    assert Row((True,)) != (1,) and Row((True,)) != (1,)
    assert not Row((True,)) == (1,)  # noqa: SIM201 — the reflected __eq__ is what is tested
    assert Row((1, 2)) != [1, 2]  # a tuple is not a list, as before
    assert Row() == ()


def test_a_plain_tuple_finds_its_row_of_the_same_kind_only() -> None:
    rows = {Row((True,)): 1}
    assert (True,) in rows and (1,) not in rows and (1.0,) not in rows
    assert rows.get((1,)) is None


def test_rows_print_pickle_and_nest_as_tuples() -> None:
    row = Row((1, 1.0, True, keyword("k")))
    assert repr(row) == "(1, 1.0, True, Keyword(k))"
    assert dumps(row) == "[1 1.0 true :k]"
    back = pickle.loads(pickle.dumps(row))
    assert back == row and type(back) is type(row)
    assert Row(((1,), 2)) != Row(((1.0,), 2))


def test_value_key_keeps_a_bag_of_values_apart() -> None:
    bag: dict[Any, int] = {}
    for value in (1, 1.0, True, 1, 0, 0.0, False):
        bag[value_key(value)] = bag.get(value_key(value), 0) + 1
    assert len(bag) == 6 and bag[value_key(1)] == 2
    assert [k[0] for k in bag] == [1, 1.0, True, 0, 0.0, False]


def test_a_value_set_holds_1_1dot0_and_true_as_three_elements() -> None:
    values = ValueSet([1, 1.0, True, 1])
    assert len(values) == 3
    assert sorted(map(repr, values)) == ["1", "1.0", "True"]
    assert 1.0 in values and True in values and 0 not in values
    assert ValueSet([1]) != ValueSet([True]) and ValueSet([1, 2]) == ValueSet([2, 1])
    assert len({ValueSet([1]), ValueSet([True]), ValueSet([1.0])}) == 3


def test_a_value_set_equals_a_plain_set_of_the_same_values() -> None:
    assert ValueSet([1, 2]) == frozenset({1, 2}) and frozenset({1, 2}) == ValueSet([1, 2])
    assert hash(ValueSet([1, 2])) == hash(frozenset({1, 2}))
    assert ValueSet([True]) != frozenset({1}) and frozenset({1}) != ValueSet([True])
    assert isinstance(ValueSet(), frozenset)


def test_a_value_set_iterates_in_an_order_of_its_values_only() -> None:
    assert list(ValueSet([3, "b", 1, "a"])) == list(ValueSet(["a", 1, "b", 3]))
    assert dumps(ValueSet([2, 1])) == dumps(ValueSet([1, 2]))
    assert dumps(ValueSet([True, 1])) in ("#{1 true}", "#{true 1}")
    back = pickle.loads(pickle.dumps(ValueSet([1, True])))
    assert back == ValueSet([True, 1]) and type(back) is ValueSet
