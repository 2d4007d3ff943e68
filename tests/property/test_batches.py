"""A batch of transactions applied as one tick (``transact_many``) gives exactly the
consolidated changes of applying them one by one, refuses the same ones, and leaves the
same database — and so does the same batch stepped in pieces (``transact_in_chunks``)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.property.strategies import (
    SCHEMA_TX,
    SCORE_TX,
    churn_streams,
    plain_tx_streams,
    tx_streams,
)
from tests.property.test_datalog_features import UNREACHABLE
from tests.property.test_incremental_matches_recompute import QUERIES
from workers.engine import Engine
from workers.errors import TransactionError
from workers.zset import add_into

# Queries with state of their own (DRed, stratified negation, aggregates, pulled maps) step
# in pieces too.
MAINTAINED = ["[:find ?x ?y :where [?x :g/to ?y] (not [?y :g/to ?x])]",
              "{:find [?a ?b] :where [(cut ?a ?b)] :rules " + UNREACHABLE + "}",
              "[:find ?a (count ?b) (max ?b) :where [?a :g/to ?b]]",
              "[:find ?a (pull ?b [* {:g/to [:age]} :g/_to]) :where [?a :g/to ?b]]"]


def _engines(bulk_datoms: int) -> tuple[Engine, Engine, Engine]:
    """One engine for transactions one by one, two for batches (whole, and in chunks)."""
    engines = Engine(), Engine(bulk_datoms=bulk_datoms), Engine(bulk_datoms=bulk_datoms)
    for engine in engines:
        engine.transact(SCHEMA_TX)
        for i, query in enumerate(QUERIES[:4] + QUERIES[8:12] + MAINTAINED):
            engine.register(f"q{i}", query)
    return engines


@given(stream=tx_streams, cuts=st.lists(st.integers(0, 12), max_size=3),
       chunk=st.integers(1, 4))
def test_a_batch_is_the_sum_of_its_transactions(stream: list[list[Any]], cuts: list[int],
                                                chunk: int) -> None:
    _check_batches(stream, cuts, chunk, bulk_datoms=0)


@given(stream=plain_tx_streams, cuts=st.lists(st.integers(0, 12), max_size=3),
       chunk=st.integers(1, 4), bulk_datoms=st.sampled_from([0, 10**9]))
def test_a_plain_batch_normalised_at_once_is_the_sum_of_its_transactions(
        stream: list[list[Any]], cuts: list[int], chunk: int, bulk_datoms: int) -> None:
    """Independent batches take the bulk path (``bulk_datoms=0``), the others and every
    batch under ``10**9`` the per-transaction one: the same changes, refusals, database."""
    _check_batches(stream, cuts, chunk, bulk_datoms)


@given(stream=churn_streams, cuts=st.lists(st.integers(0, 16), max_size=3),
       chunk=st.integers(1, 4))
def test_a_dependent_batch_normalised_at_once_is_the_sum_of_its_transactions(
        stream: list[list[Any]], cuts: list[int], chunk: int) -> None:
    """Batches touching datoms and entities several times, entities retracted by the
    transactions that add to them (``tests/property/test_bulk.py``: they take the bulk path)."""
    _check_batches(stream, cuts, chunk, bulk_datoms=0)


@given(stream=st.one_of(churn_streams, tx_streams))
def test_a_transaction_normalised_at_once_changes_and_refuses_as_op_by_op(
        stream: list[list[Any]]) -> None:
    """``transact`` takes the bulk path from ``bulk_datoms`` ops (here every transaction):
    the same changes, the same refusals with the same messages, the same database."""
    op_by_op, at_once = Engine(), Engine(bulk_datoms=0)
    for engine in (op_by_op, at_once):
        for tx in (SCHEMA_TX, SCORE_TX):
            engine.transact(tx)
        for i, query in enumerate(QUERIES[:4] + MAINTAINED):
            engine.register(f"q{i}", query)
    for tx in stream:
        outcomes: list[Any] = []
        for engine in (op_by_op, at_once):
            try:
                outcomes.append(engine.transact(tx))
            except TransactionError as error:
                outcomes.append(str(error))
        assert outcomes[1] == outcomes[0]
    assert set(at_once.db.datoms()) == set(op_by_op.db.datoms())


def one_at_a_time(engine: Engine, stream: list[list[Any]], start: int, end: int
                  ) -> tuple[dict[str, dict[Any, int]], list[int]]:
    """The oracle of the batch ``stream[start:end]``: its transactions through ``engine``
    one at a time (tx ids their positions), their summed changes and the refused ones."""
    expected: dict[str, dict[Any, int]] = {}
    refused = []
    for tx_id, tx in enumerate(stream[start:end], start):
        try:
            for query, rows in engine.transact(tx, tx_id=tx_id).items():
                add_into(expected.setdefault(query, {}), rows)
        except TransactionError:
            refused.append(tx_id)
    return {q: rows for q, rows in expected.items() if rows}, refused


def _check_batches(stream: list[list[Any]], cuts: list[int], chunk: int,
                   bulk_datoms: int) -> None:
    one_by_one, batched, chunked = _engines(bulk_datoms)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    for start, end in pairwise(bounds):
        expected, expected_refused = one_at_a_time(one_by_one, stream, start, end)
        changes, refused = batched.transact_many(
            (tx, tx_id) for tx_id, tx in enumerate(stream[start:end], start))
        assert changes == expected
        assert [r.tx_id for r in refused] == expected_refused
        assert set(batched.db.datoms()) == set(one_by_one.db.datoms())
        pieces, refused = chunked.transact_in_chunks(
            ((tx, tx_id) for tx_id, tx in enumerate(stream[start:end], start)), chunk)
        summed: dict[str, dict[Any, int]] = {}
        for piece in pieces:
            for query, rows in piece.items():
                add_into(summed.setdefault(query, {}), rows)
        assert {q: rows for q, rows in summed.items() if rows} == changes
        assert [r.tx_id for r in refused] == expected_refused
        assert set(chunked.db.datoms()) == set(one_by_one.db.datoms())
