"""workers.datalog.parser: EDN query text (or forms) → Query AST."""

import datetime
from typing import Any

import edn_format
import pytest

from workers import edn
from workers.datalog import Blank, Constant, Pattern, Query, Variable, parse_query
from workers.datalog.ast import InScalar
from workers.edn import Keyword, Symbol, keyword

V, C, P, _ = Variable, Constant, Pattern, Blank()
E, A, X = V("?e"), V("?a"), V("?x")
NAME = keyword("name")


def row(text: str, *rest: Any) -> Any:
    """A table row whose test id is the query's EDN text."""
    return pytest.param(text, *rest, id=text)


@pytest.mark.parametrize(("text", "query"), [
    row('[:find ?e :where [?e :name "Ivan"]]', Query((E,), (P(E, C(NAME), C("Ivan")),))),
    row("[:find e name :where [e :name name]]",
        Query((V("e"), V("name")), (P(V("e"), C(NAME), V("name")),))),
    row("[:find ?e :where [?e :name _]]", Query((E,), (P(E, C(NAME), _),))),
    row("[:find ?e :where [?e :name]]", Query((E,), (P(E, C(NAME), _),))),
    row("[:find ?e :where [?e]]", Query((E,), (P(E, _, _),))),
    row("[:find ?e :where [_ _ ?e]]", Query((E,), (P(_, _, E),))),
    row('[:find ?e :where [$ ?e :name "Ivan"]]', Query((E,), (P(E, C(NAME), C("Ivan")),))),
    row("[:find ?e :where [?e ?e ?e]]", Query((E,), (P(E, E, E),))),
    row("[:find ?e ?a :where [?e ?a ?e]]", Query((E, A), (P(E, A, E),))),
    row("[:find ?e :where [?e :name] [?e :age]]",
        Query((E,), (P(E, C(NAME), _), P(E, C(keyword("age")), _)))),
    row("[:find ?e :in $ ?x :where [?e :name ?x]]",
        Query((E,), (P(E, C(NAME), X),), (InScalar(X),))),
    row("[:find ?e :in ?x :where [?e :name ?x]]",
        Query((E,), (P(E, C(NAME), X),), (InScalar(X),))),
    row("[:where [?e :name] :find ?e]", Query((E,), (P(E, C(NAME), _),))),
])
def test_parse_query_builds_the_ast(text, query):
    assert parse_query(text) == query


@pytest.mark.parametrize(("vector", "map_form"), [
    ('[:find ?e :where [?e :name "Ivan"]]', '{:find [?e] :where [[?e :name "Ivan"]]}'),
    ("[:find ?e ?x :where [?e :a ?x] [?x :b]]", "{:find [?e ?x] :where [[?e :a ?x] [?x :b]]}"),
    ("[:find ?e :in $ ?x :where [?e :a ?x]]", "{:find [?e] :in [$ ?x] :where [[?e :a ?x]]}"),
], ids=lambda text: text)
def test_map_form_and_vector_form_give_equal_asts(vector, map_form):
    assert parse_query(vector) == parse_query(map_form)


@pytest.mark.parametrize("position", [0, 1, 2], ids=["e", "a", "v"])
@pytest.mark.parametrize(("constant", "value"), [
    row(":pizza", keyword("pizza")),
    row('"Ivan"', "Ivan"),
    row("42", 42),
    row("1.5", 1.5),
    row("true", True),
    row("false", False),
    row('#inst "2020-01-02"', datetime.date(2020, 1, 2)),
])
def test_constant_in_each_pattern_position_keeps_its_value_and_type(constant, value, position):
    terms = ["?e", "?a", "?v"]
    terms[position] = constant
    pattern = parse_query(f"[:find ?e :where [{' '.join(terms)}]]").where[0]
    got = pattern.terms[position]
    assert got == C(value)
    assert type(got.value) is type(value)


def test_pattern_source_is_the_clause_as_written_and_does_not_take_part_in_equality():
    pattern = parse_query('[:find ?e :where [$ ?e :name "Ivan"]]').where[0]
    assert pattern.source == [Symbol("$"), Symbol("?e"), NAME, "Ivan"]
    assert pattern == P(E, C(NAME), C("Ivan"), source="anything else")


def test_query_source_is_the_text_parsed():
    text = "[:find ?e :where [?e :name]]"
    assert parse_query(text).source == text


@pytest.mark.parametrize("text", ['[:find ?e :where [?e :name "Ivan"]]',
                                  "{:find [?e] :in [$ ?x] :where [[?e :likes :pizza]]}"])
def test_parse_query_accepts_forms_already_read(text):
    assert parse_query(edn_format.loads(text)) == parse_query(text)
    assert parse_query(edn.read(text)) == parse_query(text)


def test_keyword_constants_from_forms_already_read_are_interned():
    query = parse_query(edn_format.loads("[:find ?e :where [?e :likes :pizza]]"))
    assert all(type(t.value) is Keyword for t in query.where[0].terms if isinstance(t, Constant))


def test_pattern_variables_are_distinct_and_in_position_order():
    assert parse_query("[:find ?e :where [?x ?e ?x]]").where[0].variables == (X, E)


def test_query_variables_are_every_where_variable_in_order_of_appearance():
    assert parse_query("[:find ?e :where [?e :a ?x] [?x :b ?a] [?a]]").variables == (E, X, A)
