"""A batch normalised at once (``normalise_bulk``) on random dependent batches — datoms and
entities touched several times, entities retracted by transactions that add to them,
refusals among them — is taken, and gives the delta and the refusals, messages included,
of normalising its transactions one after another; and what a Spark task assumes a tick's
delta is, is that delta when nothing is refused."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given

from tests.property.strategies import SCHEMA_TX, SCORE_TX, churn_streams
from tests.unit.db.txdb import TxDb
from workers.db.bulk import assumed_delta, batch_events, normalise_bulk
from workers.db.tx import parse_batch
from workers.errors import TransactionError


def _database(before: list[list[Any]]) -> TxDb:
    db = TxDb()
    for tx in [SCHEMA_TX, SCORE_TX, *before]:
        with contextlib.suppress(TransactionError):
            db.transact(tx)
    return db


@given(before=churn_streams, batch=churn_streams)
def test_a_dependent_batch_is_normalised_as_one_transaction_after_another(
        before: list[list[Any]], batch: list[list[Any]]) -> None:
    db = _database(before)
    bulk = normalise_bulk(parse_batch(batch), db.db, db.schema)
    assert bulk is not None
    delta = {db.db.decode(datom): weight for datom, weight in bulk.delta.as_dict().items()}
    expected_delta, expected_refused = _database(before).transact_one_by_one(batch)
    assert delta == expected_delta
    assert [(i, str(error)) for i, error in bulk.refused] == expected_refused


@given(before=churn_streams, batch=churn_streams)
def test_the_assumed_delta_is_the_batch_delta_when_nothing_is_refused(
        before: list[list[Any]], batch: list[list[Any]]) -> None:
    """What a Spark task assumes a small tick's delta is (before the driver has normalised
    it) is the batch's delta whenever none of its transactions is refused."""
    db = _database(before)
    parsed = parse_batch(batch)
    assumed = assumed_delta(db.db, batch_events(db.db.ids, db.schema, parsed))
    expected_delta, expected_refused = _database(before).transact_one_by_one(batch)
    if not expected_refused:
        assert {db.db.decode(datom): weight
                for datom, weight in assumed.as_dict().items()} == expected_delta
