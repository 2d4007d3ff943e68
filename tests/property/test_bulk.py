"""A batch normalised at once (``normalise_bulk``) on random dependent batches — datoms and
entities touched several times, entities retracted by transactions that add to them,
refusals among them — is taken, and gives the delta and the refusals, messages included,
of normalising its transactions one after another."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given

from tests.property.strategies import SCHEMA_TX, SCORE_TX, churn_streams
from tests.unit.db.txdb import TxDb
from workers.db.bulk import normalise_bulk
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
