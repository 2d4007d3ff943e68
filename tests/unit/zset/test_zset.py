"""workers.zset.zset: consolidate and the Z-set group laws (add, neg, scale)."""

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.zset import add, add_into, consolidate, neg, scale, signed

elements = st.sampled_from(["a", "b", "c", "d"])
weights = st.integers(-3, 3).filter(bool)
zsets = st.dictionaries(elements, weights)
factors = st.integers(-3, 3)


def row(text: str, *values: Any) -> Any:
    """A table row whose test id is its EDN-like text (``[[a +1] [a -1]]``: element, weight)."""
    return pytest.param(*values, id=text)


# -- consolidate ---------------------------------------------------------------------------

@pytest.mark.parametrize(("pairs", "zset"), [
    row("[]", [], {}),
    row("[[a +1]]", [("a", 1)], {"a": 1}),
    row("[[a +1] [a +2]]", [("a", 1), ("a", 2)], {"a": 3}),
    row("[[a +1] [a -1]]", [("a", 1), ("a", -1)], {}),
    row("[[a 0]]", [("a", 0)], {}),
    row("[[a +2] [b -1] [a -2]]", [("a", 2), ("b", -1), ("a", -2)], {"b": -1}),
])
def test_consolidate_sums_weights_of_equal_elements_and_drops_zeros(pairs, zset):
    assert consolidate(pairs) == zset


@given(st.lists(st.tuples(elements, st.integers(-3, 3))))
def test_consolidate_equals_summing_with_a_counter(pairs):
    sums: Counter[str] = Counter()
    for element, weight in pairs:
        sums[element] += weight
    assert consolidate(pairs) == {e: w for e, w in sums.items() if w}


# -- group laws ----------------------------------------------------------------------------

@given(zsets)
def test_a_plus_minus_a_is_empty(a):
    assert add(a, neg(a)) == {}


@given(zsets)
def test_empty_is_the_identity_of_add(a):
    assert add(a, {}) == a
    assert add({}, a) == a


@given(zsets, zsets)
def test_add_is_commutative(a, b):
    assert add(a, b) == add(b, a)


@given(zsets, zsets, zsets)
def test_add_is_associative(a, b, c):
    assert add(add(a, b), c) == add(a, add(b, c))


@given(zsets)
def test_scale_by_zero_is_empty(a):
    assert scale(a, 0) == {}


@given(zsets)
def test_scale_by_minus_one_is_neg(a):
    assert scale(a, -1) == neg(a)


@given(zsets, zsets, factors)
def test_scale_distributes_over_add(a, b, k):
    assert scale(add(a, b), k) == add(scale(a, k), scale(b, k))


@pytest.mark.parametrize("operation", [
    pytest.param(lambda a, b, k: add(a, b), id="add"),
    pytest.param(lambda a, b, k: add_into(dict(a), b), id="add_into"),
    pytest.param(lambda a, b, k: neg(a), id="neg"),
    pytest.param(lambda a, b, k: scale(a, k), id="scale"),
    pytest.param(lambda a, b, k: consolidate([*a.items(), *b.items()]), id="consolidate"),
])
@given(a=zsets, b=zsets, k=factors)
def test_no_operation_leaves_a_zero_weight(operation, a, b, k):
    assert 0 not in operation(a, b, k).values()


@given(zsets, zsets)
def test_add_into_adds_in_place_and_returns_the_target(a, b):
    target = dict(a)
    assert add_into(target, b) is target
    assert target == add(a, b)


@given(zsets, zsets)
def test_add_leaves_its_arguments_unchanged(a, b):
    a_before, b_before = dict(a), dict(b)
    add(a, b)
    assert (a, b) == (a_before, b_before)


@pytest.mark.parametrize(("weight", "shown"), [(1, "+"), (-1, "-"), (2, "+2"), (-3, "-3")])
def test_signed_shows_a_weight_as_a_change_does(weight, shown):
    assert signed(weight) == shown
