"""A database for transaction tests: EDN text in, effective delta out."""

from __future__ import annotations

from typing import Any

import pytest

from workers import edn
from workers.arrangements import ArrangementRegistry
from workers.db import BUILTIN_SCHEMA, normalise, parse_tx
from workers.edn import keyword as kw
from workers.errors import TransactionError

__all__ = ["TxDb", "case", "kw", "row"]


class TxDb:
    """The shared arrangements plus the schema in force, changed one transaction at a time."""

    def __init__(self, *txs: str) -> None:
        self.db = ArrangementRegistry()
        self.schema = BUILTIN_SCHEMA
        self.tx = 0  # transactions numbered from 1, as the engine does
        self.tempids: dict[Any, int] = {}  # the last transaction's
        for tx in txs:
            self.transact(tx)

    def transact(self, tx: Any) -> dict[Any, int]:
        """Normalise ``tx`` (EDN text or Python forms), apply its delta and return the delta."""
        forms = edn.read(tx) if isinstance(tx, str) else tx
        self.tx += 1
        normalised = normalise(parse_tx(forms), self.db, self.schema, self.tx)
        self.db.apply(self.db.encode(normalised.delta))
        self.schema = normalised.schema
        self.tempids = normalised.tempids
        return normalised.delta

    def transact_one_by_one(self, batch: list[Any]) -> tuple[dict[Any, int],
                                                             list[tuple[int, str]]]:
        """The oracle of a batch: each transaction in turn, a refused one skipped; their
        summed delta and the refusals (index, message)."""
        delta: dict[Any, int] = {}
        refused = []
        for i, tx in enumerate(batch):
            try:
                for datom, weight in self.transact(tx).items():
                    delta[datom] = delta.get(datom, 0) + weight
            except TransactionError as error:
                refused.append((i, str(error)))
        return {d: w for d, w in delta.items() if w}, refused

    def datoms(self) -> dict[Any, int]:
        return dict.fromkeys(self.db.datoms(), 1)


def case(before: list[str], tx: str, *expected: Any) -> Any:
    """A table row ``(before, tx, *expected)`` whose test id is the EDN of ``tx`` and ``before``."""
    test_id = " ".join([tx, "after", *before]) if before else tx
    return pytest.param(before, tx, *expected, id=test_id)


def row(tx: str, *expected: Any) -> Any:
    """A table row ``(tx, *expected)`` whose test id is the EDN of ``tx``."""
    return pytest.param(tx, *expected, id=tx)
