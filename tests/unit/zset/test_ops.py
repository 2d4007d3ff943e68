"""workers.zset.ops: the DBSP stream operators integrate, differentiate and distinct."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.zset import differentiate, distinct_change, integrate, is_set

elements = st.sampled_from(["a", "b", "c", "d"])
zsets = st.dictionaries(elements, st.integers(-3, 3).filter(bool))
streams = st.lists(zsets, max_size=8)


def row(text: str, *values: Any) -> Any:
    """A table row whose test id is its EDN-like text."""
    return pytest.param(*values, id=text)


# -- integrate and differentiate -----------------------------------------------------------

def test_integrate_gives_running_sums():
    changes = [{"a": 1}, {"a": -1, "b": 1}, {}, {"b": 1}]
    assert integrate(changes) == [{"a": 1}, {"b": 1}, {"b": 1}, {"b": 2}]


def test_differentiate_gives_per_step_changes():
    states = [{"a": 1}, {"b": 1}, {"b": 1}, {"b": 2}]
    assert differentiate(states) == [{"a": 1}, {"a": -1, "b": 1}, {}, {"b": 1}]


def test_integrate_returns_a_separate_dict_per_step():
    out = integrate([{"a": 1}, {}])
    out[0]["b"] = 1
    assert out[1] == {"a": 1}


@given(streams)
def test_integrate_after_differentiate_is_identity(states):
    assert integrate(differentiate(states)) == states


@given(streams)
def test_differentiate_after_integrate_is_identity(changes):
    assert differentiate(integrate(changes)) == changes


# -- distinct and sets ---------------------------------------------------------------------

@pytest.mark.parametrize(("before", "delta", "change"), [
    row("0 +1 enters", 0, 1, 1),
    row("0 +2 enters once", 0, 2, 1),
    row("1 +1 stays", 1, 1, 0),
    row("1 -1 leaves", 1, -1, -1),
    row("2 -1 stays", 2, -1, 0),
    row("2 -2 leaves", 2, -2, -1),
    row("3 -5 leaves", 3, -5, -1),
    row("0 -1 stays out", 0, -1, 0),
    row("-1 +2 enters", -1, 2, 1),
    row("1 0 unchanged", 1, 0, 0),
])
def test_distinct_change_is_the_change_of_membership(before, delta, change):
    assert distinct_change(before, delta) == change


@given(st.lists(st.integers(-3, 3), max_size=10))
def test_summed_distinct_changes_equal_distinct_of_the_integral(deltas):
    count, member = 0, 0
    for delta in deltas:
        member += distinct_change(count, delta)
        count += delta
        assert member == (1 if count > 0 else 0)


@pytest.mark.parametrize(("zset", "expected"), [
    row("{}", {}, True),
    row("{a 1}", {"a": 1}, True),
    row("{a 1 b 1}", {"a": 1, "b": 1}, True),
    row("{a 2}", {"a": 2}, False),
    row("{a -1}", {"a": -1}, False),
    row("{a 1 b -1}", {"a": 1, "b": -1}, False),
])
def test_is_set_when_every_weight_is_one(zset, expected):
    assert is_set(zset) is expected
