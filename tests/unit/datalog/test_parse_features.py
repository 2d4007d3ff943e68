"""workers.datalog.parser: each clause and section beyond data patterns → its AST node."""

from typing import Any

import pytest

from workers.datalog import Blank, Constant, Pattern, Variable, parse_query
from workers.datalog.ast import (
    Aggregate,
    BindColl,
    BindRel,
    BindScalar,
    BindTuple,
    FnBinding,
    InColl,
    InRel,
    InRules,
    InScalar,
    InTuple,
    Not,
    Or,
    Predicate,
    Rule,
    RuleCall,
)
from workers.edn import keyword

V, C, _ = Variable, Constant, Blank()
E, A, B, X = V("?e"), V("?a"), V("?b"), V("?x")
AGE, TAG = keyword("age"), keyword("tag")


def row(text: str, expected: Any) -> Any:
    return pytest.param(text, expected, id=text)


@pytest.mark.parametrize(("clause", "expected"), [
    row("[(< ?a 30)]", Predicate("<", (A, C(30)))),
    row("[(!= ?a ?b)]", Predicate("not=", (A, B))),
    row('[(clojure.string/starts-with? ?a "I")]', Predicate("starts-with?", (A, C("I")))),
    row("[(inc ?a) ?b]", FnBinding("inc", (A,), BindScalar(B))),
    row('[(str ?a "-" ?b) ?x]', FnBinding("str", (A, C("-"), B), BindScalar(X))),
    row("[(vector ?a ?b) [?x _]]", FnBinding("vector", (A, B), BindTuple((X, _)))),
    row("[(ground [1 2]) [?x ...]]", FnBinding("ground", (C((1, 2)),), BindColl(X))),
    row("[(ground [[1 2]]) [[?a ?b]]]", FnBinding("ground", (C(((1, 2),)),), BindRel((A, B)))),
    row("(not [?e :age 30])", Not(None, (Pattern(E, C(AGE), C(30)),))),
    row("(not-join [?e] [?e :age ?a])", Not((E,), (Pattern(E, C(AGE), A),))),
    row("(or [?e :age 1] [?e :age 2])",
        Or(None, ((Pattern(E, C(AGE), C(1)),), (Pattern(E, C(AGE), C(2)),)))),
    row("(or-join [[?e] ?a] (and [?e :age ?a] [(> ?a 1)]))",
        Or((E, A), ((Pattern(E, C(AGE), A), Predicate(">", (A, C(1)))),), required=(E,))),
    row("(ancestor ?a _ 3)", RuleCall("ancestor", (A, _, C(3)))),
    row("[(missing? $ ?e :age)]", Not(None, (Pattern(E, C(AGE), _),))),
    row("[(get-else $ ?e :age 0) ?a]",
        Or((E, A), ((Pattern(E, C(AGE), A),),
                    (Not(None, (Pattern(E, C(AGE), _),)),
                     FnBinding("ground", (C(0),), BindScalar(A)))))),
    row("[(get-some $ ?e :age :tag) [?a ?b]]",
        Or((E, A, B), ((Pattern(E, C(AGE), V("?get-some#v")),
                        FnBinding("vector", (C(AGE), V("?get-some#v")), BindTuple((A, B)))),
                       (Pattern(E, C(TAG), V("?get-some#v")),
                        Not(None, (Pattern(E, C(AGE), _),)),
                        FnBinding("vector", (C(TAG), V("?get-some#v")), BindTuple((A, B))))))),
])
def test_clause_parses_into_its_node(clause, expected):
    assert parse_query(f"[:find ?e :where [?e :name] {clause}]").where[1] == expected


@pytest.mark.parametrize(("text", "find", "with_"), [
    pytest.param("[:find ?e (count ?a) :where [?e :age ?a]]", (E, Aggregate("count", A)), (),
                 id="count"),
    pytest.param("[:find (sum ?a) :with ?e :where [?e :age ?a]]", (Aggregate("sum", A),), (E,),
                 id="sum with"),
    pytest.param("[:find (median ?a) (min 3 ?a) (max ?x ?a) :in $ ?x :where [?e :age ?a]]",
                 (Aggregate("median", A), Aggregate("min", A, n=C(3)),
                  Aggregate("max", A, n=X)), (), id="median, min n, max ?n"),
])
def test_aggregates_and_with(text, find, with_):
    query = parse_query(text)
    assert (query.find, query.with_) == (find, with_)


def test_in_bindings_keep_their_shape():
    query = parse_query("[:find ?e :in $ % ?x [?a ?b] [?x ...] [[?a _]] :where [?e :age ?a]]")
    assert query.inputs == (InRules(), InScalar(X), InTuple((A, B)), InColl(X), InRel((A, _)))


def test_rules_section_and_keys():
    query = parse_query("{:find [?e] :keys [e] :where [(adult ?e)] "
                        ":rules [[(adult ?e) [?e :age ?a] [(>= ?a 18)]]]}")
    assert query.rules == (Rule("adult", (E,), (Pattern(E, C(AGE), A),
                                                 Predicate(">=", (A, C(18))))),)
    assert query.keys == (":keys", ("e",))


@pytest.mark.parametrize(("head", "params", "required"), [
    pytest.param("(r ?a ?b)", (A, B), (), id="(r ?a ?b)"),
    pytest.param("(r [?a] ?b)", (A, B), (0,), id="(r [?a] ?b)"),
    pytest.param("(r [?a ?b])", (A, B), (0, 1), id="(r [?a ?b])"),
])
def test_a_rule_head_may_require_its_leading_variables_bound(head, params, required):
    rule = parse_query(f"{{:find [?e] :where [(r ?e ?e)] :rules [[{head} [?a :b ?b]]]}}").rules[0]
    assert (rule.params, rule.required) == (params, required)
