"""A batch of transactions applied as one tick (``transact_many``) gives exactly the
consolidated changes of applying them one by one, refuses the same ones, and leaves the
same database."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.property.strategies import SCHEMA_TX, tx_streams
from tests.property.test_incremental_matches_recompute import QUERIES
from workers.engine import Engine
from workers.errors import TransactionError
from workers.zset import add_into


def _engines() -> tuple[Engine, Engine]:
    engines = Engine(), Engine()
    for engine in engines:
        engine.transact(SCHEMA_TX)
        for i, query in enumerate(QUERIES[:4] + QUERIES[8:12]):
            engine.register(f"q{i}", query)
    return engines


@given(stream=tx_streams, cuts=st.lists(st.integers(0, 12), max_size=3))
def test_a_batch_is_the_sum_of_its_transactions(stream: list[list[Any]],
                                                cuts: list[int]) -> None:
    one_by_one, batched = _engines()
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    for start, end in pairwise(bounds):
        expected: dict[str, dict[Any, int]] = {}
        expected_refused = []
        for tx_id, tx in enumerate(stream[start:end], start):
            try:
                for query, rows in one_by_one.transact(tx, tx_id=tx_id).items():
                    add_into(expected.setdefault(query, {}), rows)
            except TransactionError:
                expected_refused.append(tx_id)
        changes, refused = batched.transact_many(
            (tx, tx_id) for tx_id, tx in enumerate(stream[start:end], start))
        assert changes == {q: rows for q, rows in expected.items() if rows}
        assert [r.tx_id for r in refused] == expected_refused
        assert set(batched.db.state.datoms()) == set(one_by_one.db.state.datoms())
