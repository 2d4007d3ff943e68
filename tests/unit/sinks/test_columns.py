"""A query's ``:find`` as table columns: names, kinds from the schema, and the values each
column takes (canonical EDN where the query does not say the type)."""

from __future__ import annotations

import datetime
import uuid

import pytest

from workers.datalog import compile_query
from workers.edn import keyword
from workers.sinks.columns import Column, SinkError, columns_of, encoders, row_key, table_row

TYPES = {"age": "db.type/long", "name": "db.type/string", "score": "db.type/double",
         "kind": "db.type/keyword", "at": "db.type/instant", "id": "db.type/uuid",
         "ok": "db.type/boolean", "friend": "db.type/ref"}


@pytest.mark.parametrize(("edn", "columns"), [
    ("{:find [?e ?a] :where [[?e :age ?a]]}", [("e", "edn"), ("a", "long")]),
    ("{:find [?n ?s ?k ?t ?i ?o] :where [[?e :name ?n] [?e :score ?s] [?e :kind ?k] "
     "[?e :at ?t] [?e :id ?i] [?e :ok ?o]]}",
     [("n", "string"), ("s", "double"), ("k", "keyword"), ("t", "instant"), ("i", "uuid"),
      ("o", "boolean")]),
    ("{:find [?f] :where [[?e :friend ?f]]}", [("f", "edn")]),  # a ref: any entity id
    ("{:find [?v] :where [[?e :untyped ?v]]}", [("v", "edn")]),
    ("{:find [?e (count ?a) (count-distinct ?a) (sum ?a) (min ?a) (avg ?a) (median ?a) "
     "(distinct ?a) (max 2 ?a)] :where [[?e :age ?a]]}",
     [("e", "edn"), ("count_a", "long"), ("count_distinct_a", "long"), ("sum_a", "long"),
      ("min_a", "long"), ("avg_a", "double"), ("median_a", "edn"), ("distinct_a", "edn"),
      ("max_2_a", "edn")]),
    ("{:find [(sum ?n)] :where [[?e :name ?n]]}", [("sum_n", "edn")]),
    ("{:find [?e (pull ?e [:name])] :where [[?e :age _]]}", [("e", "edn"), ("pull_e", "edn")]),
    ("{:find [?x] :where [[?e :age ?x] [?e :name ?x]]}", [("x", "edn")]),  # types disagree
    ("{:find [?b] :where [[?e :age ?a] [(+ ?a 1) ?b]]}", [("b", "edn")]),  # a function's
    ("{:find [?weight ?row-key ?Weight] :where [[?weight :age ?row-key] [?row-key :x ?Weight]]}",
     [("weight_2", "edn"), ("row_key_2", "long"), ("weight_3", "edn")]),
    ("{:find [?a ?b] :keys [from to] :where [[?a :age ?b]]}", [("from", "edn"), ("to", "long")]),
], ids=lambda x: x if isinstance(x, str) else "")
def test_columns_of_the_find(edn: str, columns: list[tuple[str, str]]) -> None:
    assert columns_of(compile_query(edn), TYPES) == tuple(Column(*c) for c in columns)


def test_untyped_values_keep_their_kind_as_edn() -> None:
    encode = encoders([Column("v", "edn")])[0]
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert [encode(v) for v in (5, 5.0, "5", keyword("five"), True, None)] == [
        "5", "5.0", '"5"', ":five", "true", "nil"]
    assert encode(when) == '#inst "2026-01-02T03:04:05.000000Z"'
    assert encode(frozenset({2, 1})) == "#{1 2}"
    assert encode((1, "a")) == '[1 "a"]'
    assert encode(uuid.UUID(int=1)) == '#uuid "00000000-0000-0000-0000-000000000001"'


def test_typed_columns_take_their_values_and_refuse_others() -> None:
    long, keyword_column, double = encoders(
        [Column("a", "long"), Column("k", "keyword"), Column("s", "double")])
    assert long(7) == 7 and keyword_column(keyword("g/to")) == ":g/to" and double(2) == 2.0
    with pytest.raises(SinkError, match=r"column a .bigint, from the schema. got \"7\""):
        long("7")
    with pytest.raises(SinkError, match="got true"):
        long(True)


def test_a_row_key_depends_on_the_values_and_their_kinds() -> None:
    assert row_key((1, "a")) == row_key((1, "a"))
    assert len({row_key((1,)), row_key(("1",)), row_key((1.0,)), row_key((keyword("1"),))}) == 4
    encode = encoders([Column("e", "edn"), Column("a", "long")])
    assert table_row((keyword("x"), 3), 2, encode) == (row_key((keyword("x"), 3)), ":x", 3, 2)
    with pytest.raises(SinkError, match="a row of 1 values for a table of 2 columns"):
        table_row((1,), 1, encode)
