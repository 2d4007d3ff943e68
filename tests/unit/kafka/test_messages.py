"""Domain values, transactions and result rows ↔ the dicts of the Avro schemas."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import edn_format
import pytest

from workers import edn
from workers.datalog.pull import frozen
from workers.edn import keyword
from workers.engine import Engine
from workers.errors import WorkersError
from workers.kafka.avro import AvroCodec
from workers.kafka.clients import Change
from workers.kafka.messages import (
    op_form,
    row_from_avro,
    row_to_avro,
    transaction_from_avro,
    transaction_to_avro,
    value_from_avro,
    value_to_avro,
)
from workers.zset.row import ValueSet

UTC = datetime.UTC
UUID = uuid.UUID("0b7d6d4e-3f43-4c4b-9d50-1b2c3d4e5f60")
INSTANT = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)

# (value, its Avro form, the value read back)
VALUES = [
    (42, 42, 42),
    (-(2**63), -(2**63), -(2**63)),
    (1.5, 1.5, 1.5),
    ("Ivan", "Ivan", "Ivan"),
    (True, True, True),
    (False, False, False),
    (keyword("g/to"), {"name": "g/to"}, keyword("g/to")),
    (edn_format.Keyword("plain"), {"name": "plain"}, keyword("plain")),
    (INSTANT, {"micros": 1714979289123456}, INSTANT),
    (datetime.datetime(2024, 5, 6, 10, 8, 9, 123456,
                       tzinfo=datetime.timezone(datetime.timedelta(hours=3))),
     {"micros": 1714979289123456}, INSTANT),
    (INSTANT.replace(tzinfo=None), {"micros": 1714979289123456}, INSTANT),
    (datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), {"micros": -1},
     datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    (datetime.date(2024, 5, 6), {"micros": 1714953600000000},
     datetime.datetime(2024, 5, 6, tzinfo=UTC)),
    (UUID, UUID.bytes, UUID),
]
VALUE_IDS = ["long", "min-long", "double", "string", "true", "false", "keyword",
             "plain-keyword", "instant-utc", "instant-plus-3", "naive-instant", "before-epoch",
             "date", "uuid"]


@pytest.mark.parametrize(("value", "avro", "back"), VALUES, ids=VALUE_IDS)
def test_value_round_trip(value: Any, avro: Any, back: Any) -> None:
    assert value_to_avro(value) == avro
    result = value_from_avro(value_to_avro(value))
    assert result == back
    assert type(result) is type(back)


def test_keyword_comes_back_interned() -> None:
    assert value_from_avro({"name": "g/to"}) is keyword("g/to")


@pytest.mark.parametrize("value", [INSTANT.replace(tzinfo=None), datetime.date(2024, 5, 6)],
                         ids=["naive", "date"])
def test_instants_come_back_in_utc(value: Any) -> None:
    assert value_from_avro(value_to_avro(value)).tzinfo is UTC


def test_row_round_trip_through_result_key_codec() -> None:
    row = (1, 2.5, "x", True, keyword("k/w"), INSTANT, UUID)
    codec = AvroCodec("result_key")
    decoded = codec.decode(codec.encode({"values": row_to_avro(row)}))
    back = row_from_avro(decoded["values"])
    assert back == row
    assert type(back[3]) is bool
    assert back[4] is keyword("k/w")


def test_1_1dot0_and_true_travel_as_three_rows_and_print_as_written() -> None:
    rows = [(1,), (1.0,), (True,), (0,), (0.0,), (False,), (ValueSet([1, 1.0, True]),)]
    codec = AvroCodec("result_change")
    back = [row_from_avro(codec.decode(codec.encode({
        "query": "q", "values": row_to_avro(row), "weight": 1, "tx_first": 1, "tx_last": 1,
        "snapshot": False}))["values"]) for row in rows]
    assert [type(row[0]) for row in back] == [int, float, bool, int, float, bool, ValueSet]
    assert len(dict.fromkeys(back)) == 7 and len(back[-1][0]) == 3  # keys of their own
    assert [Change(row, 1, 1, 1, False).as_json("q")["row"] for row in back[:6]] == [
        "[1]", "[1.0]", "[true]", "[0]", "[0.0]", "[false]"]


@pytest.mark.parametrize("collection", [
    pytest.param(frozenset({1, "x", keyword("k/w"), INSTANT, UUID, 2.5}), id="set"),
    pytest.param((3, 1, 1, "x", keyword("k/w"), INSTANT, UUID, 2.5), id="vector"),
])
def test_a_collection_of_values_round_trips_through_both_result_codecs(collection: Any) -> None:
    row = (keyword("k"), collection)
    for schema, record in (("result_key", {}), ("result_change", {
            "query": "q", "weight": 1, "tx_first": 1, "tx_last": 1})):
        codec = AvroCodec(schema)
        decoded = codec.decode(codec.encode({**record, "values": row_to_avro(row)}))
        assert row_from_avro(decoded["values"]) == row


def test_a_pulled_map_round_trips_through_both_result_codecs_as_canonical_edn() -> None:
    pulled = frozen(edn.read('{:name "Ivan" :aka ["a" "b"] "N" {:db/id :ivan} :s #{2 1} '
                             ':born #inst "2000-01-02T03:04:05Z" :score 1.0}'))
    row = (1, pulled, None)
    for schema, record in (("result_key", {}), ("result_change", {
            "query": "q", "weight": 1, "tx_first": 1, "tx_last": 1})):
        codec = AvroCodec(schema)
        decoded = codec.decode(codec.encode({**record, "values": row_to_avro(row)}))
        assert row_from_avro(decoded["values"]) == row
    assert value_to_avro(None) == {"text": "nil"}
    reordered = frozen(edn.read('{:score 1.0 :s #{1 2} :born #inst "2000-01-02T03:04:05Z" '
                                '"N" {:db/id :ivan} :aka ["a" "b"] :name "Ivan"}'))
    assert value_to_avro(reordered) == value_to_avro(pulled)  # equal maps, equal key bytes


def test_rows_of_a_pull_query_travel_through_avro() -> None:
    engine = Engine()
    engine.transact('[{:db/id 1 :name "Ivan" :friend 2} {:db/id 2 :name "Petr"}]')
    rows = engine.register("q", "[:find ?e (pull ?e [* {:friend [:name]}]) :where [?e :name]]")
    codec = AvroCodec("result_key")
    assert {row_from_avro(codec.decode(codec.encode({"values": row_to_avro(row)}))["values"]):
            weight for row, weight in rows.items()} == rows


def test_tail_prints_a_pulled_row_as_edn() -> None:
    row = (1, frozen(edn.read('{:name "Ivan" :friend [{:db/id 2}]}')), None)
    change = Change(row, -1, 3, 4, False)
    assert change.as_json("q")["row"] == '[1 {:name "Ivan" :friend [{:db/id 2}]} nil]'


SCHEMA_TX = """[{:db/ident :name :db/valueType :db.type/string
                 :db/cardinality :db.cardinality/one}
                {:db/ident :friend :db/valueType :db.type/ref}]"""
DATA_TX = """[{:db/id 1 :name "Ivan" :tag ["a" "b" "c"] :friend #{2 3}}
              {:db/id :petr :name "Petr"}
              [:db/add 3 :name "Oleg"]
              [:db/add 4 :score 1.5] [:db/add 4 :alive true] [:db/add 4 :kind :k/person]
              [:db/add 4 :born #inst "2000-01-02T03:04:05.123456Z"]
              [:db/add 4 :id #uuid "0b7d6d4e-3f43-4c4b-9d50-1b2c3d4e5f60"]
              [:db/add "tmp" :x 1] [:db/add 5 :x 1] [:db/add 5 :y 2] [:db/add 6 :z 0]]"""
CHANGE_TX = """[[:db/retract 1 :tag "a"] [:db/retract 4 :alive] [:db/retractEntity 5]
                [:db/retract 6 :z 0] [:db/add 1 :name "Ivanov"]]"""
QUERY = "[:find ?e ?a ?v :where [?e ?a ?v]]"


def _via_avro(text: str) -> list[list[Any]]:
    codec = AvroCodec("transaction")
    record = codec.decode(codec.encode(transaction_to_avro(edn.read(text), source="test")))
    assert record["source"] == "test"
    return transaction_from_avro(record)


def test_transaction_ops_by_kind() -> None:
    record = transaction_to_avro(edn.read(CHANGE_TX))
    assert record == {"source": None, "edn": None, "ops": [
        {"op": "ADD", "e": 1, "a": "name", "v": "Ivanov", "old": None},
        {"op": "RETRACT", "e": 1, "a": "tag", "v": "a", "old": None},
        {"op": "RETRACT", "e": 6, "a": "z", "v": 0, "old": None},
        {"op": "RETRACT_ATTRIBUTE", "e": 4, "a": "alive", "v": None, "old": None},
        {"op": "RETRACT_ENTITY", "e": 5, "a": None, "v": None, "old": None},
    ]}


MODEL_SCHEMA_TX = """[{:db/ident :email :db/valueType :db.type/string
                       :db/unique :db.unique/identity}
                      {:db/ident :lines :db/valueType :db.type/ref :db/isComponent true
                       :db/cardinality :db.cardinality/many}]"""
MODEL_TXS = [
    '[{:db/id "ivan" :email "i@x" :name "Ivan" :friend "petr"} {:db/id -2 :email "p@x"}]',
    '[[:db/add [:email "i@x"] :age 30] [:db/cas [:email "p@x"] :age nil 20]]',
    '[{:db/id [:email "i@x"] :lines [{:sku 1} {:sku 2}]} {:db/id 9 :_friend [:email "p@x"]}]',
    '[{:email "i@x" :name "Ivan I."} [:db.fn/cas [:email "i@x"] :age 30 31]]',
    '[[:db.fn/retractEntity [:email "i@x"]]]',
]


def test_the_data_model_through_avro_gives_the_same_database_and_ids() -> None:
    """Tempids, upserts, lookup refs, cas and nested or reverse maps (as EDN text) cross
    Avro with the same meaning: the same ids, the same datoms."""
    direct, via = Engine(), Engine()
    for text in ("[{:db/ident :friend :db/valueType :db.type/ref}]", MODEL_SCHEMA_TX,
                 *MODEL_TXS):
        expected = direct.transact(text)
        assert via.transact(_via_avro(text)).tempids == expected.tempids
        assert set(via.db.datoms()) == set(direct.db.datoms())
    assert len(direct.db) > 0


def test_entity_map_multi_values_become_one_add_each() -> None:
    ops = transaction_to_avro(edn.read('[{:db/id 1 :tag ["a" "b"]}]'))["ops"]
    assert sorted(op["v"] for op in ops) == ["a", "b"]


def test_forms_from_avro() -> None:
    assert transaction_from_avro(transaction_to_avro(edn.read(CHANGE_TX))) == [
        [keyword("db/add"), 1, keyword("name"), "Ivanov"],
        [keyword("db/retract"), 1, keyword("tag"), "a"],
        [keyword("db/retract"), 6, keyword("z"), 0],
        [keyword("db/retract"), 4, keyword("alive")],
        [keyword("db/retractEntity"), 5],
    ]


def _typed(form: Any) -> Any:
    """``form`` with each value beside its type: ``1``, ``1.0`` and ``true`` are not equal."""
    return [_typed(x) for x in form] if type(form) is list else (type(form), form)


OP_ENTITIES = [1, 0, -1, -(2**63), "tmp", "", {"name": "ivan"}, UUID.bytes,
               {"attribute": "p/email", "value": "a@x"}, {"attribute": "p/id", "value": 1.0}]
OP_VALUES = [None, 1, 1.0, True, False, 0, -(2**63), "Ivan", "", {"name": "g/to"},
             {"micros": 1714979289123456}, UUID.bytes, {"attribute": "p/id", "value": True}]


@pytest.mark.parametrize("kind", ["ADD", "RETRACT", "RETRACT_ATTRIBUTE", "RETRACT_ENTITY",
                                  "CAS"])
def test_every_op_is_read_as_its_op_form(kind: str) -> None:
    """The common ops' shortcut in ``transaction_from_avro`` gives exactly what
    ``op_form`` gives, values of every kind each as its own kind."""
    ops = [{"op": kind, "e": e, "a": a, "v": v, "old": old}
           for e in OP_ENTITIES for a in ("g/to", None) for v in OP_VALUES
           for old in ([None, 1, "x"] if kind == "CAS" else [None])]
    forms = transaction_from_avro({"ops": ops, "source": None, "edn": None})
    assert _typed(forms) == _typed([op_form(op) for op in ops])
    codec = AvroCodec("transaction")
    decoded = codec.decode(codec.encode({"ops": ops, "source": None, "edn": None}))
    assert _typed(transaction_from_avro(decoded)) == _typed(forms)


def test_transactions_through_avro_give_the_same_database_and_changes() -> None:
    direct, via = Engine(), Engine()
    direct.register("all", QUERY)
    via.register("all", QUERY)
    for text in (SCHEMA_TX, DATA_TX, CHANGE_TX):
        expected = direct.transact(text)
        assert expected["all"]
        assert via.transact(_via_avro(text)) == expected
        assert set(via.db.datoms()) == set(direct.db.datoms())
    assert len(direct.db) == 17
    assert via.result("all") == direct.result("all")
    assert via.schema[keyword("name")] == direct.schema[keyword("name")]
    assert direct.schema[keyword("name")].cardinality_one


def test_long_outside_64_bits_is_refused_or_preserved() -> None:
    codec = AvroCodec("transaction")
    value = 2**64 + 1
    try:
        record = codec.decode(codec.encode(transaction_to_avro([[keyword("db/add"), 1,
                                                                 keyword("x"), value]])))
    except WorkersError:
        return
    assert (record["ops"][0]["v"], type(record["ops"][0]["v"])) == (value, int)
