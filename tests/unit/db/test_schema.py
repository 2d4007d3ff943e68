"""workers.db.schema and values: declared value types are checked, schema changes are checked."""

import re

import pytest

from tests.unit.db.txdb import TxDb, case, kw
from workers import edn
from workers.errors import ErrorCode, TransactionError

X = kw("x")
UUID = '#uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"'


def declare(value_type: str) -> str:
    return f"[{{:db/ident :x :db/valueType :db.type/{value_type}}}]"


def typed(value_type: str, value: str, *expected: str) -> object:
    return pytest.param(value_type, value, *expected, id=f":db.type/{value_type} {value}")


@pytest.mark.parametrize(("value_type", "value"), [
    typed("long", "42"),
    typed("long", "-1"),
    typed("double", "1.5"),
    typed("float", "1.5"),
    typed("string", '"Ivan"'),
    typed("boolean", "true"),
    typed("boolean", "false"),
    typed("keyword", ":pizza"),
    typed("instant", '#inst "2020-01-02T03:04:05Z"'),
    typed("instant", '#inst "2020-01-02"'),
    typed("uuid", UUID),
    typed("ref", "2"),
    typed("ref", ":ivan"),
    typed("ref", UUID),
])
def test_value_of_the_declared_type_is_accepted(value_type, value):
    db = TxDb(declare(value_type))
    assert db.transact(f"[[:db/add 1 :x {value}]]") == {(1, X, edn.read(value)): 1}


@pytest.mark.parametrize(("value_type", "value", "actual"), [
    typed("long", "true", "boolean"),
    typed("long", "1.5", "double"),
    typed("long", '"1"', "string"),
    typed("double", "1", "long"),
    typed("boolean", "1", "long"),
    typed("boolean", '"true"', "string"),
    typed("string", ":a", "keyword"),
    typed("keyword", '"a"', "string"),
    typed("instant", '"2020-01-02"', "string"),
    typed("uuid", '"f81d4fae-7dec-11d0-a765-00a0c91e6bf6"', "string"),
    typed("ref", "1.5", "double"),
    typed("ref", "true", "boolean"),
])
def test_value_of_another_type_is_refused_naming_attribute_value_and_type(value_type, value,
                                                                           actual):
    db = TxDb(declare(value_type))
    with pytest.raises(TransactionError) as info:
        db.transact(f"[[:db/add 1 :x {value}]]")
    assert info.value.code is ErrorCode.TX_TYPE
    assert str(info.value) == (f"value {value} ({actual}) does not match :x :db/valueType "
                               f":db.type/{value_type} in [1 :x {value}]")


def test_value_type_declared_in_the_same_transaction_is_checked(db):
    with pytest.raises(TransactionError, match=re.escape('value "s" (string) does not match')):
        db.transact('[{:db/ident :x :db/valueType :db.type/long} [:db/add 1 :x "s"]]')


def test_redeclaring_the_same_value_type_is_a_no_op():
    assert TxDb(declare("long")).transact(declare("long")) == {}


def test_schema_ident_must_be_a_keyword(db):
    with pytest.raises(TransactionError, match=re.escape('value "x" (string) does not match '
                                                         ":db/ident")) as info:
        db.transact('[{:db/ident "x"}]')
    assert info.value.code is ErrorCode.TX_TYPE


@pytest.mark.parametrize(("before", "tx", "message"), [
    case([], "[{:db/ident :x :db/valueType :db.type/text}]",
         "unknown :db/valueType :db.type/text for :x; one of :db.type/boolean"),
    case([], "[{:db/ident :x :db/valueType :long}]", "unknown :db/valueType :long for :x"),
    case([], "[{:db/ident :x :db/cardinality :db.cardinality/few}]",
         "unknown :db/cardinality :db.cardinality/few for :x; "
         "one of :db.cardinality/one, :db.cardinality/many"),
    case([declare("long")], declare("string"),
         "cannot change :db/valueType of :x from :db.type/long to :db.type/string"),
    case([declare("long")], "[[:db/add :x :db/valueType :db.type/string]]",
         "cannot change :db/valueType of :x from :db.type/long to :db.type/string"),
])
def test_invalid_schema_change_is_refused_with_schema(before, tx, message):
    db = TxDb(*before)
    with pytest.raises(TransactionError, match=re.escape(message)) as info:
        db.transact(tx)
    assert info.value.code is ErrorCode.SCHEMA


def test_retracting_an_absent_value_type_datom_keeps_the_declared_type():
    db = TxDb(declare("long"))
    assert db.transact("[[:db/retract :x :db/valueType :db.type/string]]") == {}
    with pytest.raises(TransactionError):
        db.transact('[[:db/add 1 :x "not a long"]]')


def test_retracting_an_absent_cardinality_datom_keeps_cardinality_one():
    db = TxDb("[{:db/ident :x :db/cardinality :db.cardinality/one}]", "[[:db/add 1 :x 1]]")
    assert db.transact("[[:db/retract :x :db/cardinality :db.cardinality/many]]") == {}
    assert db.transact("[[:db/add 1 :x 2]]") == {(1, X, 1): -1, (1, X, 2): 1}
