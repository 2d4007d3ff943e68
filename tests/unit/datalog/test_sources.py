"""Collections as data sources (workers.datalog.sources): matched position by position, of
one kind, on their first positions; a named database; what stays refused."""

from __future__ import annotations

import re
from typing import Any

import pytest

from workers import edn
from workers.engine import Engine
from workers.errors import ErrorCode, QueryError

DATA = '[[:db/add 1 :name "Ivan"] [:db/add 1 :age 15] [:db/add 2 :name "Petr"]]'


@pytest.fixture(scope="module")
def engine() -> Engine:
    engine = Engine()
    engine.transact(edn.read(DATA))
    return engine


def rows(engine: Engine, query: str, *inputs: str) -> set[tuple[Any, ...]]:
    return set(engine.query(query, [edn.read(i) for i in inputs]))


@pytest.mark.parametrize(("where", "source", "expected"), [
    # a tuple longer than the pattern matches on its first positions
    ("[?e :name ?n] [$s ?n ?x]", '[["Ivan" 1 :extra] ["Petr" 2]]', {(1, 1), (2, 2)}),
    # a constant of another kind does not match (1, 1.0 and true are three values)
    ("[?e :age ?x] [$s ?x :teen]", "[[15 :teen] [15.0 :teen] [true :teen]]", {(1, 15)}),
    ("[?e :age _] [$s ?x 15]", "[[:a 15] [:b 15.0] [:c true]]", {(1, edn.keyword("a"))}),
    # a variable named twice needs one value
    ("[?e :name] [$s ?x ?x]", "[[1 1] [2 3] [4 4.0]]", {(1, 1), (2, 1)}),
    # a tuple shorter than the pattern does not match
    ("[?e :name] [$s ?x _ _]", "[[1 2] [3 4 5]]", {(1, 3), (2, 3)}),
])
def test_a_collection_is_matched_position_by_position(
        engine: Engine, where: str, source: str, expected: set[tuple[Any, ...]]) -> None:
    assert rows(engine, f"[:find ?e ?x :in $ $s :where {where}]", source) == expected


def test_a_pattern_without_variables_is_a_test(engine: Engine) -> None:
    query = '[:find ?e :in $ $s :where [?e :name] [$s "on"]]'
    assert rows(engine, query, '[["on"] ["off"]]') == {(1,), (2,)}
    assert rows(engine, query, '[["off"]]') == set()


def test_a_source_is_the_default_of_the_clauses_it_prefixes(engine: Engine) -> None:
    query = '[:find ?e :in $ $s :where [?e :name ?n] ($s not [?n :banned] ($ not [?e :age]))]'
    assert rows(engine, query, '[["Ivan" :banned] ["Petr" :banned]]') == {(1,)}


def test_a_query_naming_the_database_is_given_no_input_for_it(engine: Engine) -> None:
    assert rows(engine, '[:find ?n :in $db ?e :where [$db ?e :name ?n]]', "1") == {("Ivan",)}
    # given an input, the first source is a collection
    assert rows(engine, "[:find ?a :in $xs ?b :where [$xs ?a ?b]]", "[[3 4] [5 6]]",
                "4") == {(3,)}


@pytest.mark.parametrize(("query", "inputs", "code", "message"), [
    ("[:find ?e :in $ $s :where [$t ?e]]", ["[[1]]"], ErrorCode.QUERY_INPUTS,
     "$t is not a source of the :in clause"),
    ("[:find ?e :in $ $s :where [$s ?e]]", ["3"], ErrorCode.QUERY_INPUTS,
     "source $s must be a collection of tuples, got 3"),
    ("[:find ?e :in $ $s % :where [?e :name] (r ?e)]", ["[[1]]", "[[(r ?x) [$s ?x]]]"],
     ErrorCode.QUERY_UNSUPPORTED, "rule r: [$s ?x] names a source: a rule reads the database $"),
    ("[:find ?e :in $ $s :where ($s adult ?e)]", ["[[1]]"], ErrorCode.QUERY_UNSUPPORTED,
     "a source before a rule call is not supported"),
    ("[:find ?e :in $ $s :where [?e :name] [$s]]", ["[[1]]"], ErrorCode.QUERY_SHAPE,
     "a data pattern on $s needs a term"),
], ids=str)
def test_what_a_source_cannot_do_is_refused_by_name(
        engine: Engine, query: str, inputs: list[str], code: ErrorCode, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)) as raised:
        engine.query(query, [edn.read(i) for i in inputs])
    assert raised.value.code is code
