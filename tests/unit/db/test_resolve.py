"""workers.db.resolve: tempids merged by the identities they share take the entity any of
them found, and conflict when they found two."""

from __future__ import annotations

import pytest

from tests.unit.db.txdb import TxDb, kw
from workers.errors import ErrorCode, TransactionError

SCHEMA = ("[{:db/ident :k :db/unique :db.unique/identity} "
          "{:db/ident :j :db/unique :db.unique/identity} "
          "{:db/ident :x :db/unique :db.unique/identity}]")


def test_tempids_merged_by_a_shared_identity_take_the_entity_one_of_them_found() -> None:
    db = TxDb(SCHEMA, "[{:db/id 1 :k 1}]")
    delta = db.transact('[{:db/id "a" :k 1} {:db/id "b" :j 5 :x 7} {:db/id "a" :j 5}]')
    assert db.tempids == {"a": 1, "b": 1}
    assert delta == {(1, kw("j"), 5): 1, (1, kw("x"), 7): 1}


def test_tempids_merged_by_a_shared_identity_whose_entities_differ_conflict() -> None:
    db = TxDb(SCHEMA, "[{:db/id 1 :k 1} {:db/id 2 :j 2}]")
    with pytest.raises(TransactionError, match="upsert conflict: tempid") as raised:
        db.transact('[{:db/id "a" :k 1 :x 9} {:db/id "b" :j 2 :x 9}]')
    assert raised.value.code == ErrorCode.TX_CONFLICT
