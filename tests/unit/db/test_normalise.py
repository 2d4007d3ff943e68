"""workers.db.normalise: ops + db → effective delta (set semantics, cardinality, conflicts)."""

import re

import pytest

from tests.unit.db.txdb import TxDb, case, kw
from workers.errors import ErrorCode, TransactionError

NAME, AGE, TAG, X = kw("name"), kw("age"), kw("tag"), kw("x")
FRIEND, LIKES, A, B = kw("friend"), kw("likes"), kw("a"), kw("b")
NAME_ONE = "[{:db/ident :name :db/cardinality :db.cardinality/one}]"
AGE_ONE = "[{:db/ident :age :db/cardinality :db.cardinality/one}]"
TAG_MANY = "[{:db/ident :tag :db/cardinality :db.cardinality/many}]"
FRIEND_REF = "[{:db/ident :friend :db/valueType :db.type/ref}]"
IVAN = '[[:db/add 1 :name "Ivan"]]'
IVAN_TO_PETR = {(1, NAME, "Ivan"): -1, (1, NAME, "Petr"): 1}


@pytest.mark.parametrize(("before", "tx", "delta"), [
    case([IVAN], '[[:db/add 1 :name "Ivan"]]', {}),
    case([], '[[:db/retract 1 :name "Ivan"]]', {}),
    case([IVAN], '[[:db/retract 1 :name "Petr"]]', {}),
    case([], "[[:db/retract 1 :name]]", {}),
    case([], "[[:db/retractEntity 1]]", {}),
    case([], '[[:db/add 1 :name "Ivan"] [:db/add 1 :name "Ivan"]]', {(1, NAME, "Ivan"): 1}),
    case(["[[:db/add 1 :tag :a]]"], "[{:db/id 1 :tag [:a :b]}]", {(1, TAG, B): 1}),
])
def test_the_db_is_a_set_so_present_adds_and_absent_retracts_are_no_ops(before, tx, delta):
    assert TxDb(*before).transact(tx) == delta


@pytest.mark.parametrize(("before", "tx", "delta"), [
    case([NAME_ONE, IVAN], '[[:db/add 1 :name "Petr"]]', IVAN_TO_PETR),
    case([NAME_ONE, IVAN], '[{:db/id 1 :name "Petr"}]', IVAN_TO_PETR),
    case([NAME_ONE, IVAN], '[[:db/retract 1 :name "Ivan"] [:db/add 1 :name "Petr"]]', IVAN_TO_PETR),
    case([NAME_ONE, IVAN], '[[:db/add 1 :name "Ivan"]]', {}),
    case([NAME_ONE, IVAN], '[[:db/add 2 :name "Petr"]]', {(2, NAME, "Petr"): 1}),
    case([IVAN], '[{:db/ident :name :db/cardinality :db.cardinality/one} [:db/add 1 :name "Petr"]]',
         {(NAME, kw("db/ident"), NAME): 1,
          (NAME, kw("db/cardinality"), kw("db.cardinality/one")): 1, **IVAN_TO_PETR}),
])
def test_cardinality_one_add_replaces_the_old_value(before, tx, delta):
    assert TxDb(*before).transact(tx) == delta


@pytest.mark.parametrize(("before", "tx", "delta"), [
    case([TAG_MANY, "[[:db/add 1 :tag :a]]"], "[[:db/add 1 :tag :b]]", {(1, TAG, B): 1}),
    case([TAG_MANY], "[[:db/add 1 :tag :a] [:db/add 1 :tag :b]]", {(1, TAG, A): 1, (1, TAG, B): 1}),
    case(["[[:db/add 1 :tag :a]]"], "[[:db/add 1 :tag :b]]", {(1, TAG, B): 1}),
])
def test_cardinality_many_and_undeclared_attributes_keep_every_value(before, tx, delta):
    assert TxDb(*before).transact(tx) == delta


CONFLICTS = [
    case([], "[[:db/add 1 :tag :a] [:db/retract 1 :tag :a]]",
         "datoms conflict: [1 :tag :a] is both added and retracted in one transaction"),
    case(["[[:db/add 1 :tag :a]]"], "[[:db/retract 1 :tag] [:db/add 1 :tag :a]]",
         "datoms conflict: [1 :tag :a] is both added and retracted"),
    case(["[[:db/add 1 :tag :a]]"], "[[:db/retractEntity 1] [:db/add 1 :tag :a]]",
         "datoms conflict: [1 :tag :a] is both added and retracted"),
    case([NAME_ONE], '[[:db/add 1 :name "Ivan"] [:db/add 1 :name "Petr"]]',
         'datoms conflict: [1 :name "Ivan"] and [1 :name "Petr"] assert two values for '
         "cardinality-one :name"),
    case([NAME_ONE, IVAN], '[{:db/id 1 :name ["Ivan" "Petr"]}]',
         'datoms conflict: [1 :name "Ivan"] and [1 :name "Petr"]'),
]


@pytest.mark.parametrize(("before", "tx", "message"), CONFLICTS)
def test_conflicting_datoms_refuse_the_transaction_with_tx_conflict(before, tx, message):
    with pytest.raises(TransactionError, match=re.escape(message)) as info:
        TxDb(*before).transact(tx)
    assert info.value.code is ErrorCode.TX_CONFLICT


@pytest.mark.parametrize(("before", "tx", "message"), CONFLICTS)
def test_refused_transaction_leaves_the_db_and_schema_unchanged(before, tx, message):
    db = TxDb(*before)
    datoms, schema = db.datoms(), db.schema
    with pytest.raises(TransactionError):
        db.transact(tx)
    assert db.datoms() == datoms
    assert db.schema is schema


PEOPLE = ('[{:db/id 1 :name "Ivan" :friend 2 :likes 2} {:db/id 2 :name "Petr" :friend 1}'
          " {:db/id 3 :friend 2} {:db/id :ivan :friend 2}]")


@pytest.mark.parametrize(("before", "tx", "delta"), [
    case([FRIEND_REF, PEOPLE], "[[:db/retractEntity 2]]",
         {(2, NAME, "Petr"): -1, (2, FRIEND, 1): -1, (1, FRIEND, 2): -1, (3, FRIEND, 2): -1,
          (kw("ivan"), FRIEND, 2): -1}),
    case([FRIEND_REF, PEOPLE], "[[:db/retractEntity 3]]", {(3, FRIEND, 2): -1}),
    case([FRIEND_REF, PEOPLE, "[[:db/add 4 :friend :ivan]]"], "[[:db/retractEntity :ivan]]",
         {(kw("ivan"), FRIEND, 2): -1, (4, FRIEND, kw("ivan")): -1}),
    case([PEOPLE], "[[:db/retractEntity 3]]", {(3, FRIEND, 2): -1}),
])
def test_retract_entity_retracts_its_datoms_and_refs_pointing_at_it(before, tx, delta):
    assert TxDb(*before).transact(tx) == delta


@pytest.mark.parametrize(("before", "tx"), [
    case([FRIEND_REF, PEOPLE], "[[:db/retractEntity 2]]"),
    case([PEOPLE], "[[:db/retractEntity 2]]"),
])
def test_retract_entity_keeps_datoms_pointing_at_it_through_non_ref_attributes(before, tx):
    delta = TxDb(*before).transact(tx)
    assert (1, LIKES, 2) not in delta
    assert (2, NAME, "Petr") in delta


def _typed(delta: dict) -> dict:
    """The delta with each value's Python type spelled out, so 1, 1.0 and true stay apart."""
    return {(e, a, v, type(v).__name__): w for (e, a, v), w in delta.items()}


@pytest.mark.parametrize(("before", "tx", "delta"), [
    case(["[[:db/add 1 :x 1]]"], "[[:db/add 1 :x true]]", {(1, X, True, "bool"): 1}),
    case(["[[:db/add 1 :x 1]]"], "[[:db/add 1 :x 1.0]]", {(1, X, 1.0, "float"): 1}),
])
def test_values_of_different_kinds_are_different_datoms_across_transactions(before, tx, delta):
    assert _typed(TxDb(*before).transact(tx)) == delta


@pytest.mark.parametrize(("before", "tx", "delta"), [
    case([], "[[:db/add 1 :x 1] [:db/add 1 :x true]]",
         {(1, X, 1, "int"): 1, (1, X, True, "bool"): 1}),
    case([AGE_ONE, "[[:db/add 1 :age 1]]"], "[[:db/add 1 :age 1.0]]",
         {(1, AGE, 1, "int"): -1, (1, AGE, 1.0, "float"): 1}),
])
def test_values_of_different_types_are_different_datoms(before, tx, delta):
    assert _typed(TxDb(*before).transact(tx)) == delta
