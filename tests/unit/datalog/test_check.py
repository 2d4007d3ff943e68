"""workers.datalog.check: range restriction (check_query) and :in scalars (bind_inputs)."""

import re
import uuid
from typing import Any

import edn_format
import pytest

from workers.datalog import (
    Constant,
    Pattern,
    Query,
    Variable,
    bind_inputs,
    check_query,
    compile_query,
    parse_query,
)
from workers.datalog.ast import BindRel, BindScalar, FnBinding
from workers.edn import Keyword, keyword, show
from workers.errors import ErrorCode, QueryError

E, X = Variable("?e"), Variable("?x")
NAME = keyword("name")
BY_NAME = "[:find ?e :in $ ?x :where [?e :name ?x]]"


def row(text: str, *rest: Any) -> Any:
    """A table row whose test id is the query's EDN text."""
    return pytest.param(text, *rest, id=text)


def given(text: str, inputs: list[Any], message: str) -> Any:
    """A table row whose test id is the EDN of the inputs and of the query."""
    return pytest.param(text, inputs, message, id=f"{show(inputs)} to {text}")


@pytest.mark.parametrize("text", [
    "[:find ?e :where [?e :name]]",
    "[:find ?e ?x :where [?e :a ?y] [?y :b ?x]]",
    BY_NAME,
], ids=lambda text: text)
def test_safe_query_passes_check_unchanged(text):
    query = parse_query(text)
    assert check_query(query) is query


@pytest.mark.parametrize(("text", "message"), [
    row("[:find ?x :where [?e :name]]",
        "unsafe query: :find ?x does not occur in any :where pattern"),
    row("[:find ?e ?x :where [?e :name]]", ":find ?x does not occur"),
    row("[:find ?x :in $ ?y :where [?e :name ?y]]", ":find ?x does not occur"),
])
def test_find_variable_not_bound_by_where_is_refused_as_unsafe(text, message):
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        check_query(parse_query(text))
    assert info.value.code is ErrorCode.QUERY_UNSAFE


@pytest.mark.parametrize("text", [
    # Datascript #348: ?a is bound by :in, so it may appear in one branch only
    "[:find ?e :in $ ?a :where (or [?e :age ?a] [?e :name \"Oleg\"])]",
    # ... or by a clause around the or, before or after it (deltalog orders clauses itself)
    "[:find ?e :where [?x :age ?a] (or [?e :age ?a] [?e :name \"Oleg\"])]",
    "[:find ?e :where (or [?e :age ?a] [?e :name \"Oleg\"]) [?x :age ?a]]",
    # Datascript query_or: branches that bind the same variables, in different orders
    "[:find ?e :where (or (and [?e :name \"Ivan\"] [1 :age ?a]) "
    "(and [2 :age ?a] [?e :name \"Oleg\"])) [?e :age ?a]]",
], ids=lambda text: text)
def test_or_branches_must_bind_the_same_free_variables_only(text):
    check_query(parse_query(text))


@pytest.mark.parametrize("text", [
    # Datascript test-errors: "All clauses in 'or' must use same set of free vars"
    "[:find ?e :where (or [?e :name _] [?e :age ?a])]",
    "[:find ?e :where [?e :name] (or [?e :age ?a] [?e :tag ?t])]",
], ids=lambda text: text)
def test_or_branches_with_different_free_variables_are_refused(text):
    with pytest.raises(QueryError, match=re.escape("must use the same free variables")) as info:
        check_query(parse_query(text))
    assert info.value.code is ErrorCode.QUERY_UNSAFE


def test_an_input_returned_by_find_becomes_a_one_row_relation():
    """The clauses still see the constant; :find reads it from ``[(ground "Ivan") ?x]``."""
    query = compile_query("[:find ?x ?e :in $ ?x :where [?e :name ?x]]", ["Ivan"])
    assert query.where == (FnBinding("ground", (Constant("Ivan"),), BindScalar(X)),
                           Pattern(E, Constant(NAME), Constant("Ivan")))


@pytest.mark.parametrize(("text", "value", "variables", "rows"), [
    row("[:find ?k ?v :in [[?k ?v] ...]]", {"a": 1, "b": 2}, "?k ?v", (("a", 1), ("b", 2))),
    row("[:find ?x ?z :in [[?x _ ?z]]]", [[1, 2, 3], [4, 5, 6]], "?x ?z", ((1, 3), (4, 6))),
    row("[:find ?k ?x :in [[?k [?x ...]] ...]]", [["a", [1, 2]], ["b", []]], "?k ?x",
        (("a", 1), ("a", 2))),
    row("[:find ?x ?y :in [?x [?y ...]]]", [1, [2, 3]], "?x ?y", ((1, 2), (1, 3))),
])
def test_nested_input_bindings_become_the_relation_of_their_variables(text, value, variables,
                                                                      rows):
    """Datascript test-nested-bindings (a map is a collection of [key value] entries) and
    placeholders: one tuple per way the form binds the value."""
    ground = compile_query(text, [value]).where[0]
    assert ground == FnBinding("ground", (Constant(rows),),
                               BindRel(tuple(Variable(v) for v in variables.split())))


@pytest.mark.parametrize(("value", "constant"), [
    pytest.param("Ivan", "Ivan", id='"Ivan"'),
    pytest.param(42, 42, id="42"),
    pytest.param(1.5, 1.5, id="1.5"),
    pytest.param(True, True, id="true"),
    pytest.param(keyword("ivan"), keyword("ivan"), id=":ivan"),
    pytest.param(edn_format.Keyword("ivan"), keyword("ivan"), id="plain :ivan"),
    pytest.param(uuid.UUID(int=1), uuid.UUID(int=1), id="uuid"),
])
def test_compile_query_substitutes_inputs_as_constants(value, constant):
    query = compile_query(BY_NAME, [value])
    assert query == Query((E,), (Pattern(E, Constant(NAME), Constant(constant)),))
    assert type(query.where[0].v.value) is type(constant)


def test_input_keyword_is_interned():
    query = compile_query(BY_NAME, [edn_format.Keyword("ivan")])
    assert type(query.where[0].v.value) is Keyword


def test_inputs_bind_in_the_order_of_in():
    query = compile_query("[:find ?e :in $ ?a ?v :where [?e ?a ?v]]", [NAME, "Ivan"])
    assert query.where[0] == Pattern(E, Constant(NAME), Constant("Ivan"))


def test_bound_query_has_no_inputs_left_and_keeps_pattern_sources():
    parsed = parse_query(BY_NAME)
    bound = bind_inputs(parsed, ["Ivan"])
    assert bound.inputs == ()
    assert bound.where[0].source is parsed.where[0].source


@pytest.mark.parametrize(("text", "inputs", "message"), [
    given(BY_NAME, [], "query takes 1 input(s) (?x) after $, got 0"),
    given(BY_NAME, ["Ivan", "Petr"], "query takes 1 input(s) (?x) after $, got 2"),
    given("[:find ?e :where [?e :name]]", ["Ivan"], "query takes 0 input(s) (none) after $, got 1"),
    given(BY_NAME, [["Ivan"]], "input ?x must be a scalar value, got list"),
    given(BY_NAME, [("Ivan",)], "input ?x must be a scalar value, got tuple"),
    given(BY_NAME, [{"a": 1}], "input ?x must be a scalar value, got dict"),
    given(BY_NAME, [frozenset({1})], "input ?x must be a scalar value, got frozenset"),
    given(BY_NAME, [None], "input ?x must be a scalar value, got NoneType"),
    # worded as Datascript's (query.cljc test-bindings "Error reporting")
    given("[:find ?a :in [?a ...]]", [keyword("a")], "Cannot bind value :a to collection [?a ...]"),
    given("[:find ?k ?v :in [[?k ?v] ...]]", [[1, 2]], "Cannot bind value 1 to tuple [?k ?v]"),
    given("[:find ?k ?v :in [[?k ?v] ...]]", [[[1, 2, 3]]],
          "Too many elements in a collection [1 2 3] to bind tuple [?k ?v]"),
    given("[:find ?x ?y :in [?x [?y ...]]]", [[1, [None]]], "input ?y must be a scalar value"),
])
def test_wrong_inputs_are_refused_with_query_inputs(text, inputs, message):
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        compile_query(text, inputs)
    assert info.value.code is ErrorCode.QUERY_INPUTS


ADULT = "[[(adult [?p]) [?p :age ?a] [(>= ?a 18)]] [(big [?x]) [(> ?x 10)]]]"


@pytest.mark.parametrize(("text", "inputs", "message"), [
    given("[:find ?p :in $ % :where (adult ?p)]", [ADULT],
          "(adult ?p): rule adult requires ?p to be bound by the caller"),
    given("[:find ?p :in $ % :where [?p :name] (adult _)]", [ADULT],
          "(adult _): rule adult requires _ to be bound"),
    given("[:find ?p :in $ % :where [?p :name] (not-join [?p] [?p :age _] (big ?a))]", [ADULT],
          "(big ?a): rule big requires ?a to be bound"),
    given("{:find [?x] :where [(r1 ?x ?y) (r2 ?y ?x)] :rules [[(r1 [?a] ?b) [?a :to ?b]] "
          "[(r2 [?a] ?b) [?a :to ?b]]]}", [], "rule r1 requires ?x to be bound"),
    given("{:find [?y] :where [[?x :a] (big ?y)] :rules [[(big ?x) [(> ?x 10)]]]}", [],
          "(big ?y): rule big requires ?y to be bound by the caller (its head marks the "
          "argument [?var], or its body cannot bind it)"),
    given("{:find [?y] :where [[?x :a] (dec ?x ?y)] :rules [[(dec ?a ?b) [(- ?b 1) ?a]]]}",
          [], "rule dec requires ?y to be bound"),
])
def test_a_rule_called_without_its_required_arguments_bound_is_refused(text, inputs, message):
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        compile_query(text, inputs)
    assert info.value.code is ErrorCode.QUERY_UNSAFE


@pytest.mark.parametrize("text", [
    "[:find ?p :in $ % :where (adult ?p) [?p :name]]",  # bound by a later clause
    "[:find ?a :in $ % :where [(ground 20) ?a] (big ?a)]",
    "[:find ?p :in $ % :where (adult 1) [?p :name]]",
    "[:find ?p :in $ % ?q :where (adult ?q) [?p :name]]",
], ids=lambda text: text)
def test_a_call_binding_its_required_arguments_anywhere_in_its_clauses_passes(text):
    inputs = [ADULT, 1] if "?q" in text else [ADULT]
    assert compile_query(text, inputs).where


def test_definitions_of_one_rule_must_agree_on_required_arguments():
    with pytest.raises(QueryError, match="or with different required ones"):
        compile_query("{:find [?x] :where [(r ?x)] :rules [[(r [?a]) [?a :b]] [(r ?a) [?a :c]]]}")


@pytest.mark.parametrize(("text", "inputs", "message", "code"), [
    pytest.param("[:find (min ?n ?a) :where [?e :age ?a] [?e :n ?n]]", [],
                 ":find (min ?n ?a): ?n must be an :in scalar", ErrorCode.QUERY_SHAPE,
                 id="n bound by :where"),
    pytest.param("[:find (max ?n ?a) :in $ ?n :where [?e :age ?a]]", ["3"],
                 'input ?n of (max ?n ?a) must be a non-negative long, got "3"',
                 ErrorCode.QUERY_INPUTS, id="n not a long"),
    pytest.param("[:find (max ?n ?a) :in $ ?n :where [?e :age ?a]]", [-1],
                 "must be a non-negative long, got -1", ErrorCode.QUERY_INPUTS, id="n negative"),
])
def test_the_n_of_min_n_is_a_non_negative_long_input(text, inputs, message, code):
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        compile_query(text, inputs)
    assert info.value.code is code


def test_the_n_of_min_n_becomes_a_constant():
    query = compile_query("[:find (min ?n ?a) :in $ ?n :where [?e :age ?a]]", [2])
    assert query.find[0].n == Constant(2)
