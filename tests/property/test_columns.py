"""A transaction given as columns (``Engine.transact_columns``) is the transaction of its
forms: the same changes, the same refusal (code and message), the same database after —
whether it takes the columnar path or is sent on as forms."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tests.property.strategies import AGE, NAME, SCHEMA_TX, TO
from tests.property.test_incremental_matches_recompute import QUERIES
from workers.edn import keyword
from workers.engine import Engine
from workers.errors import TransactionError

LIMIT = keyword("limit")  # typed :db.type/long
TYPED_TX = [{keyword("db/ident"): LIMIT, keyword("db/valueType"): keyword("db.type/long")}]

# No two values Python finds equal are of different kinds (1 and 1.0, 1 and true): inside
# one transaction of forms those are one value, a known limitation (docs/semantics.md) the
# columns do not share.
values = st.one_of(st.integers(1, 6), st.sampled_from(["Ivan", "Petr", 2.5, False, 2**64]))
datoms = st.tuples(st.integers(1, 8), st.sampled_from([TO, AGE, NAME, LIMIT]), values,
                   st.sampled_from([True, True, False]))
# Mostly plain columns; now and then a duplicate, a conflict, two values of a
# cardinality-one attribute, a value of the wrong type or out of range: each refused or
# handled as the forms are.
transactions = st.lists(datoms, min_size=1, max_size=8)


def _engines() -> tuple[Engine, Engine]:
    engines = Engine(), Engine()
    for engine in engines:
        engine.transact(SCHEMA_TX)
        engine.transact(TYPED_TX)
        for i, query in enumerate(QUERIES[:2]):
            engine.register(f"q{i}", query)
    return engines


def outcome(call: Any, *args: Any) -> Any:
    """The call's changes, or its refusal's code and message."""
    try:
        return call(*args)
    except TransactionError as error:
        return error.code, str(error)


def as_columns(tx: list[tuple[int, Any, Any, bool]], ints: bool) -> tuple[Any, ...]:
    e = np.array([d[0] for d in tx], np.int64)
    a = [d[1] for d in tx]
    v: Any = [d[2] for d in tx]
    if ints and all(type(x) is int and x < 2**63 for x in v):
        v = np.array(v, np.int64)
    return e, a, v, [d[3] for d in tx]


@given(stream=st.lists(transactions, min_size=1, max_size=4), ints=st.booleans())
def test_columns_are_the_transaction_of_their_forms(stream: list[Any], ints: bool) -> None:
    by_columns, by_forms = _engines()
    for tx in stream:
        e, a, v, added = as_columns(tx, ints)
        forms = [[keyword("db/add") if add else keyword("db/retract"), *datom[:3]]
                 for datom, add in zip(tx, added, strict=True)]
        assert outcome(by_columns.transact_columns, e, a, v, added) == outcome(
            by_forms.transact, forms)
        assert set(by_columns.db.datoms()) == set(by_forms.db.datoms())


@given(tx=st.lists(st.tuples(st.integers(1, 8), st.integers(1, 8)), min_size=1, max_size=8))
def test_one_attribute_for_every_datom(tx: list[tuple[int, int]]) -> None:
    by_columns, by_forms = _engines()
    e, v = np.array([d[0] for d in tx]), np.array([d[1] for d in tx])
    assert by_columns.transact_columns(e, TO, v) == by_forms.transact(
        [[keyword("db/add"), x, TO, y] for x, y in tx])
    assert set(by_columns.db.datoms()) == set(by_forms.db.datoms())
