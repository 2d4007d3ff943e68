"""Lookup refs in queries (workers/datalog/lookup_refs.py): joined in as patterns, so a
registered query follows the unique value; the input shapes it does not take are refused."""

from __future__ import annotations

import pytest

from workers import edn
from workers.engine import Engine
from workers.errors import ErrorCode, QueryError

SCHEMA = ("[{:db/ident :p/email :db/unique :db.unique/identity} "
          "{:db/ident :p/friend :db/valueType :db.type/ref}]")
DATA = '[{:db/id 1 :p/email "a" :p/name "A" :p/friend 2} {:db/id 2 :p/email "b" :p/name "B"}]'


@pytest.fixture
def engine() -> Engine:
    made = Engine()
    made.transact(SCHEMA)
    made.transact(DATA)
    return made


@pytest.mark.parametrize(("query", "inputs", "expected"), [
    ('[:find ?n :where [[:p/email "a"] :p/name ?n]]', "[]", {("A",): 1}),
    ('[:find ?e :where [?e :p/friend [:p/email "b"]]]', "[]", {(1,): 1}),
    ('[:find ?n :where (not [[:p/email "a"] :p/name ?n]) [_ :p/name ?n]]', "[]", {("B",): 1}),
    ("[:find ?e ?n :in $ ?e :where [?e :p/name ?n]]", '[[:p/email "b"]]',
     {((edn.keyword("p/email"), "b"), "B"): 1}),
    ("[:find ?n :in $ [?e ...] :where [?e :p/name ?n]]", '[[[:p/email "a"] [:p/email "b"]]]',
     {("A",): 1, ("B",): 1}),
    ('[:find ?n :where [[:p/email "nobody"] :p/name ?n]]', "[]", {}),
], ids=str)
def test_a_lookup_ref_names_the_entity_holding_the_value(engine: Engine, query: str,
                                                        inputs: str, expected: object) -> None:
    assert engine.query(query, list(edn.read(inputs))) == expected


def test_a_registered_lookup_ref_follows_the_value_to_another_entity(engine: Engine) -> None:
    assert engine.register("q", '[:find ?n :where [[:p/email "a"] :p/name ?n]]') == {("A",): 1}
    moved = engine.transact('[[:db/retract 1 :p/email "a"] [:db/add 2 :p/email "a"]]')
    assert moved == {"q": {("A",): -1, ("B",): 1}}
    assert engine.transact("[[:db/retractEntity 2]]") == {"q": {("B",): -1}}


@pytest.mark.parametrize(("query", "inputs"), [
    ("[:find ?v :in $ [?e ...] :where [?e :p/name ?v]]", '[[[:p/email "a"] 2]]'),
    ("[:find ?v :in $ [[?e ?x]] :where [?e :p/name ?v]]", '[[[[:p/email "a"] 1]]]'),
], ids=["mixed with an id", "inside a tuple"])
def test_lookup_refs_mixed_or_in_tuples_are_refused_naming_the_input(
        engine: Engine, query: str, inputs: str) -> None:
    with pytest.raises(QueryError, match="lookup refs are supported as a scalar input or a "
                                         "collection of lookup refs only") as raised:
        engine.query(query, list(edn.read(inputs)))
    assert raised.value.code == ErrorCode.QUERY_UNSUPPORTED
