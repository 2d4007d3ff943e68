"""Datomic's data model (tests/unit/db/data_model.py) on the local executor: transaction by
transaction, and each transaction as a batch (the bulk path where it applies)."""

from __future__ import annotations

import pytest

from tests.unit.db.data_model import CASES, Case, check
from workers.engine import Engine


@pytest.mark.parametrize("made", CASES)
def test_one_transaction_at_a_time(made: Case) -> None:
    check(made, Engine)


@pytest.mark.parametrize("made", CASES)
def test_each_transaction_as_a_batch(made: Case) -> None:
    check(made, lambda: Engine(bulk_datoms=1), batched=True)
