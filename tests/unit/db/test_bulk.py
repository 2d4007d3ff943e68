"""A batch normalised at once (``normalise_bulk``): the same delta and refusals as one by
one, whether its transactions touch the same datoms and retract entities or not; left to
the per-transaction path when one retracts an attribute or touches the schema."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.db.txdb import TxDb
from workers import edn
from workers.db import normalise, parse_tx
from workers.db.bulk import normalise_bulk
from workers.db.tx import parse_batch
from workers.errors import TransactionError

SCHEMA = ('[{:db/ident :age :db/cardinality :db.cardinality/one :db/valueType :db.type/long}'
          ' {:db/ident :name :db/cardinality :db.cardinality/one}]')
BEFORE = '[[:db/add 1 :age 30] [:db/add 1 :g/to 2] [:db/add 2 :name "Petr"] [:db/add 3 :g/to 1]]'


def _db() -> TxDb:
    return TxDb(SCHEMA, BEFORE)


def _bulk(db: TxDb, batch: list[str]) -> Any:
    return normalise_bulk(parse_batch([edn.read(tx) for tx in batch]), db.db, db.schema)


@pytest.mark.parametrize("batch", [
    pytest.param(['[[:db/add 1 :age 31] [:db/add 4 :g/to 1]]', '[[:db/retract 1 :g/to 2]]'],
                 id="replace a cardinality-one value, add, retract"),
    pytest.param(['[[:db/add 2 :name "Petr"] [:db/retract 3 :g/to 9]]'],
                 id="present added and absent retracted: no-ops"),
    pytest.param(['[[:db/add 1 :age 31] [:db/retract 1 :age 30]]', '[[:db/add 5 :g/to 6]]'],
                 id="a retraction the replacement makes too"),
    pytest.param(['[[:db/add 7 :g/to 8] [:db/retract 7 :g/to 8]]', '[[:db/add 9 :g/to 1]]'],
                 id="added and retracted in one transaction: refused"),
    pytest.param(['[[:db/add 7 :age "old"]]', '[[:db/add 8 :age 1] [:db/add 8 :age 2]]',
                  '[[:db/add 9 :age 3]]'], id="wrong type, two cardinality-one values"),
    pytest.param(['[[:db/add 4 :g/to 1]]', '[[:db/retract 4 :g/to 1]]', '[[:db/add 4 :g/to 1]]'],
                 id="a datom added, retracted, added again"),
    pytest.param(['[[:db/retract 1 :g/to 2]]', '[[:db/add 1 :g/to 2]]',
                  '[[:db/retract 1 :g/to 2]]'],
                 id="a present datom retracted, added, retracted again"),
    pytest.param(['[[:db/add 1 :age 31]]', '[[:db/add 1 :age 32]]', '[[:db/add 5 :age 1]]'],
                 id="a cardinality-one attribute replaced twice"),
    pytest.param(['[[:db/add 1 :age 31]]', '[[:db/add 1 :age 30]]'],
                 id="a cardinality-one value replaced and restored"),
    pytest.param(['[[:db/add 1 :age 31]]', '[[:db/retract 1 :age 31]]', '[[:db/add 1 :g/to 9]]'],
                 id="a replacement retracted: no value left"),
    pytest.param(['[[:db/add 4 :g/to 1]]', '[[:db/retractEntity 3]]', '[[:db/add 3 :name "x"]]'],
                 id="an entity retracted, then given a datom"),
    pytest.param(['[[:db/add 1 :g/to 5]]', '[[:db/retractEntity 1] [:db/add 1 :g/to 7]]'],
                 id="an entity retracted and given an absent datom in one transaction"),
    pytest.param(['[[:db/retractEntity 1] [:db/add 1 :g/to 2]]', '[[:db/add 3 :g/to 4]]'],
                 id="an entity retracted and given a present datom: refused"),
    pytest.param(['[[:db/retract 1 :g/to 2]]', '[[:db/retractEntity 1] [:db/add 1 :g/to 2]]',
                  '[[:db/retractEntity 1] [:db/add 1 :g/to 2]]'],
                 id="the same transaction accepted, then refused"),
    pytest.param(['[[:db/add 1 :g/to 2] [:db/add 1 :g/to 2]]', '[[:db/retractEntity 1]]',
                  '[[:db/retractEntity 1] [:db/add 1 :age 31] [:db/add 1 :age "x"]]'],
                 id="refused for its type after an entity retraction"),
])
def test_a_batch_gives_the_one_by_one_delta_and_refusals(batch: list[str]) -> None:
    db = _db()
    bulk = _bulk(db, batch)
    assert bulk is not None
    delta = {db.db.decode(datom): w for datom, w in bulk.delta.as_dict().items()}
    refused = [(i, str(error)) for i, error in bulk.refused]
    assert (delta, refused) == _db().transact_one_by_one(batch)


@pytest.mark.parametrize("batch", [
    pytest.param(['[[:db/retract 1 :age]]'], id="retract an attribute"),
    pytest.param(['[{:db/ident :tag :db/cardinality :db.cardinality/many}]'], id="schema"),
])
def test_other_batches_are_left_to_the_per_transaction_path(batch: list[str]) -> None:
    assert _bulk(_db(), batch) is None


def test_the_bulk_refusal_is_the_one_normalise_raises() -> None:
    tx = '[[:db/add 8 :age 1] [:db/add 8 :age 2] [:db/add 8 :age "x"]]'
    db = _db()
    with pytest.raises(TransactionError) as raised:
        normalise(parse_tx(edn.read(tx)), db.db, db.schema, 1)
    bulk = _bulk(db, [tx])
    assert bulk is not None and [str(e) for _, e in bulk.refused] == [str(raised.value)]


@pytest.mark.parametrize("batch", [
    pytest.param(['[[:db/add 4 :g/to 1] [:db/add 4 :g/to 1.0]]'], id="1 and 1.0 in the batch"),
    pytest.param(['[[:db/add 4 :name true]]'], id="a boolean in the batch"),
    pytest.param(['[[:db/add 5 :name 2]]'], id="a cardinality-one value replacing 2.0"),
    pytest.param(['[[:db/retractEntity 5]]'], id="an entity retraction retracting 2.0"),
])
def test_values_python_compares_across_kinds_are_left_to_the_per_transaction_path(
        batch: list[str]) -> None:
    """Inside a transaction 1, 1.0 and true are one value (docs/semantics.md), ids keep them
    apart: a batch that holds one, or may retract one, goes transaction by transaction."""
    assert _bulk(TxDb(SCHEMA, BEFORE, '[[:db/add 5 :name 2.0]]'), batch) is None


def test_an_entity_retraction_goes_one_by_one_when_the_schema_has_references() -> None:
    """Retracting an entity retracts the datoms that refer to it, which the bulk path does
    not look for."""
    db = TxDb(SCHEMA, '[{:db/ident :friend :db/valueType :db.type/ref}]', BEFORE)
    assert _bulk(db, ['[[:db/retractEntity 2]]']) is None
    assert _bulk(db, ['[[:db/add 4 :friend 2]]']) is not None
