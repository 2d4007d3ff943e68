"""workers.plan.lower: rules evaluated from the values their calls bind (magic sets) — the
required-binding form ``(name [?p] ...)`` and rules whose body needs its head bound — with
the results Datomic's documentation and the issue's examples give, one-shot and live."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_engine import PEOPLE
from workers.edn import keyword
from workers.engine import Engine
from workers.testing import evaluate_from_scratch

# Ivan 15, Petr 37, Ivan 37, Oleg 15, Anna 40, Kate 8; Oleg's parent is Petr, Anna's Oleg,
# Kate's Anna.
RULES = """[[(adult [?p]) [?p :age ?a] [(>= ?a 18)]]
            [(older [?a] ?b) [(> ?a ?b)]]
            [(big ?x) [(> ?x 36)]]
            [(next-age ?a ?n) [(inc ?a) ?n]]
            [(descendant [?a] ?d) [?d :parent ?a]]
            [(descendant [?a] ?d) [?m :parent ?a] (descendant ?m ?d)]]"""


def case(query: str, expected: set[tuple[Any, ...]]) -> Any:
    return pytest.param(query, expected, id=query)


@pytest.mark.parametrize(("query", "expected"), [
    # the example: the caller binds ?p
    case("[:find ?n :in $ % :where [?p :name ?n] (adult ?p)]", {("Petr",), ("Ivan",), ("Anna",)}),
    # a body that only compares its head variables: evaluated from the call's bindings
    case("[:find ?n :in $ % :where [?p :name ?n] [?p :age ?a] [2 :age ?b] (older ?a ?b)]",
         {("Anna",)}),
    case("[:find ?n :in $ % :where [?p :name ?n] [?p :age ?a] (big ?a)]",
         {("Petr",), ("Ivan",), ("Anna",)}),
    case("[:find ?n ?x :in $ % :where [?p :name ?n] [?p :age 8] (next-age 8 ?x)]",
         {("Kate", 9)}),
    case("[:find ?n :in $ % :where [?p :name ?n] [?p :age ?a] (not (big ?a))]",
         {("Ivan",), ("Oleg",), ("Kate",)}),
    # Datomic's recursive rule from a bound ancestor: only Petr's descendants are derived
    case("[:find ?n :in $ % :where [?a :name \"Petr\"] (descendant ?a ?d) [?d :name ?n]]",
         {("Oleg",), ("Anna",), ("Kate",)}),
    case("[:find ?d :in $ % :where (descendant 4 ?d)]", {(5,), (6,)}),
])
def test_rule_bound_from_its_call_gives_the_documented_result(query: str,
                                                              expected: set[Any]) -> None:
    engine = Engine()
    engine.transact(PEOPLE)
    assert set(engine.query(query, [RULES])) == expected
    assert set(engine.register("q", query, [RULES])) == expected
    assert set(evaluate_from_scratch(query, engine.db.datoms(), [RULES])) == expected


@pytest.mark.parametrize(("query", "rules", "inputs", "expected"), [
    # datascript#441: a required argument bound by an :in scalar (expected #{[:foo]})
    pytest.param("[:find ?need :in $ % ?name :where (needs ?name ?need)]",
                 "[[(needs [?name] ?need) [?name :needs ?need]]]", [keyword("george")],
                 {(keyword("foo"),)}, id="datascript#441"),
    # datalevin#205: a rule whose body only computes from its required argument
    pytest.param("[:find ?greeting :in $ % :where (say-hello \"kipz\" ?greeting)]",
                 "[[(say-hello [?name] ?result) [(ground \"hello, \") ?greeting]"
                 " [(str ?greeting ?name) ?result]]]", [], {("hello, kipz",)},
                 id="datalevin#205"),
])
def test_reported_required_binding_cases(query: str, rules: str, inputs: list[Any],
                                         expected: set[Any]) -> None:
    engine = Engine()
    engine.transact('[[:db/add :george :wants :foo] [:db/add :george :needs :foo]'
                    ' [:db/add :sally :needs :bar]]')  # strings would be tempids
    assert set(engine.query(query, [rules, *inputs])) == expected
    assert set(engine.register("q", query, [rules, *inputs])) == expected


def test_a_rule_kept_live_follows_the_values_its_calls_demand() -> None:
    engine = Engine()
    engine.transact(PEOPLE)
    query = "[:find ?n :in $ % :where [?a :name \"Oleg\"] (descendant ?a ?d) [?d :name ?n]]"
    assert engine.register("q", query, [RULES]) == {("Anna",): 1, ("Kate",): 1}
    assert engine.transact("[[:db/retract 5 :parent 4] [:db/add 7 :name \"Max\"]"
                           " [:db/add 7 :parent 4]]") == {"q": {("Anna",): -1, ("Kate",): -1,
                                                                 ("Max",): 1}}
    assert engine.transact("[[:db/add 5 :parent 7]]") == {"q": {("Anna",): 1, ("Kate",): 1}}


def test_only_demanded_values_are_derived() -> None:
    """The descendant relation holds the tuples of the called ancestor and its descendants,
    not of every entity (that is what binding from the call site buys)."""
    engine = Engine()
    engine.transact(PEOPLE)
    engine.register("q", "[:find ?d :in $ % :where (descendant 5 ?d)]", [RULES])
    relations = engine._queries["q"].prepared.local.strata
    sizes = {r.name: len(r.state.rows) for stratum in relations for r in stratum.relations}
    assert sizes["magic:descendant"] == 2  # 5, and its child 6
    assert sizes["rule:descendant"] == 1  # (5 6)
