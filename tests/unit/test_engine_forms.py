"""Datalog forms of issue 18 through the Engine, one-shot and registered, with the results
Datomic's and Datascript's documentation and test suites give."""

from __future__ import annotations

from typing import Any

import pytest

from workers.edn import keyword
from workers.engine import Engine
from workers.zset import add_into

# Datascript test/datascript/test/query_or.cljc
OR_DB = """[{:db/id 1 :name "Ivan" :age 10} {:db/id 2 :name "Ivan" :age 20}
            {:db/id 3 :name "Oleg" :age 10} {:db/id 4 :name "Oleg" :age 20}
            {:db/id 5 :name "Ivan" :age 10} {:db/id 6 :name "Ivan" :age 20}]"""


def engine_with(tx: str) -> Engine:
    engine = Engine()
    engine.transact(tx)
    return engine


def test_with_without_aggregate_returns_a_bag() -> None:
    """Datomic: the :with variables are removed, "leaving a bag (not a set!)"."""
    engine = engine_with('[{:db/id 1 :name "Ivan"} {:db/id 2 :name "Ivan"} '
                         '{:db/id 3 :name "Oleg"}]')
    query = "[:find ?name :with ?e :where [?e :name ?name]]"
    assert engine.query(query) == {("Ivan",): 2, ("Oleg",): 1}
    maps = engine.query("[:find ?name :keys name :with ?e :where [?e :name ?name]]")
    assert sorted(maps, key=lambda m: m[keyword("name")]) == \
        [{keyword("name"): "Ivan"}] * 2 + [{keyword("name"): "Oleg"}]
    view = engine.register("q", query)
    assert view == {("Ivan",): 2, ("Oleg",): 1}
    change = engine.transact('[{:db/id 4 :name "Ivan"} {:db/id 5 :name "Ivan"} '
                             '[:db/retract 3 :name "Oleg"]]')["q"]
    assert change == {("Ivan",): 2, ("Oleg",): -1}  # native Z-set weights
    assert add_into(view, change) == engine.result("q") == {("Ivan",): 4}


@pytest.mark.parametrize(("query", "expected"), [
    ("[:find (min ?k) (max ?k) :where [_ :k ?k]]", {(keyword("a/b"), keyword("a-/b"))}),
    ("[:find ?k :where [_ :k ?k] [(< ?k :a-/a)]]", {(keyword("a/b"),)}),
], ids=str)
def test_keywords_order_by_namespace_then_name(query: str, expected: Any) -> None:
    """Clojure: (compare :a/b :a-/b) is negative — namespaces "a" < "a-"."""
    engine = engine_with("[[:db/add 1 :k :a-/b] [:db/add 2 :k :a/b]]")
    assert set(engine.query(query)) == expected


# Datascript test/datascript/test/query_find_specs.cljc
PEOPLE = """[[:db/add 1 :name "Petr"] [:db/add 1 :age 44] [:db/add 2 :name "Ivan"]
             [:db/add 2 :age 25] [:db/add 3 :name "Sergey"] [:db/add 3 :age 11]]"""


@pytest.mark.parametrize(("query", "expected"), [
    ("[:find ?name . :where [1 :name ?name]]", "Petr"),
    ("[:find [?name ?age] :where [1 :name ?name] [1 :age ?age]]", ("Petr", 44)),
    ("[:find (count ?name) . :where [_ :name ?name]]", 3),
    ("[:find [(count ?name)] :where [_ :name ?name]]", (3,)),
    ("[:find [(count ?name) ...] :where [_ :name ?name]]", [3]),
    ("[:find ?name . :where [4 :name ?name]]", None),
    ("[:find [?name ?age] :where [4 :name ?name] [4 :age ?age]]", None),
    ("[:find [?n ?a] :keys n a :where [?e :name ?n] [(= ?n \"Ivan\")] [?e :age ?a]]",
     {keyword("n"): "Ivan", keyword("a"): 25}),  # Datascript query_return_map
], ids=str)
def test_find_specification_shapes_the_one_shot_result(query: str, expected: Any) -> None:
    assert engine_with(PEOPLE).query(query) == expected


def test_find_collection_and_multiple_results_cut() -> None:
    engine = engine_with(PEOPLE)
    assert sorted(engine.query("[:find [?name ...] :where [_ :name ?name]]")) == \
        ["Ivan", "Petr", "Sergey"]
    assert engine.query("[:find [?name ?age] :where [?e :name ?name] [?e :age ?age]]") in \
        {("Petr", 44), ("Ivan", 25), ("Sergey", 11)}
    assert engine.query("[:find ?name . :where [_ :name ?name]]") in {"Ivan", "Petr", "Sergey"}
    # a bag keeps its copies in a collection
    assert engine.query("[:find [?a ...] :with ?e :where [?e :age ?a] [(< ?a 30)] "
                        "[(ground [1 2]) [?x ...]]]") in ([25, 11], [11, 25])


def test_registered_find_specification_streams_the_relation() -> None:
    engine = engine_with(PEOPLE)
    assert engine.register("q", "[:find ?name . :where [?e :age 44] [?e :name ?name]]") == \
        {("Petr",): 1}
    assert engine.transact("[[:db/add 4 :age 44] [:db/add 4 :name \"Anna\"]]") == \
        {"q": {("Anna",): 1}}


@pytest.mark.parametrize(("query", "inputs", "expected"), [
    # Datascript test-q-in "Query without DB"
    ("[:find ?a ?b :in ?a ?b]", [10, 20], {(10, 20): 1}),
    # an :in scalar returned next to what it selects
    ("[:find ?e ?n :in $ ?n :where [?e :name ?n]]", ["Ivan"], {(2, "Ivan"): 1}),
    ("[:find ?n (count ?e) :in $ [?n ?x] :where [?e :name ?n] [(some? ?x)]]", [["Petr", 1]],
     {("Petr", 1): 1}),
    # Datascript test-bindings "Placeholders"
    ("[:find ?x ?z :in [?x _ ?z]]", [[keyword("x"), keyword("y"), keyword("z")]],
     {(keyword("x"), keyword("z")): 1}),
    ("[:find ?x ?z :in [[?x _ ?z]]]", [[[keyword("x"), keyword("y"), keyword("z")],
                                        [keyword("a"), keyword("b"), keyword("c")]]],
     {(keyword("x"), keyword("z")): 1, (keyword("a"), keyword("c")): 1}),
    # Datascript test-nested-bindings: a map is a collection of [key value] entries
    ("[:find ?k ?v :in [[?k ?v] ...] :where [(> ?v 1)]]",
     [{keyword("a"): 1, keyword("b"): 2, keyword("c"): 3}],
     {(keyword("b"), 2): 1, (keyword("c"), 3): 1}),
    # ... its third case, with vector for range (not a deltalog built-in)
    ("[:find ?k ?x :in [[?k [?min ?max]] ...] :where [(vector ?min ?max) [?x ...]] "
     "[(even? ?x)]]", [{keyword("a"): [1, 7], keyword("b"): [2, 4]}],
     {(keyword("b"), 2): 1, (keyword("b"), 4): 1}),
    # nested forms in a function binding (Datascript's grammar)
    ("[:find ?x ?y :where [(ground [[1 [2 3]] [4 [5]]]) [[?x [?y ...]] ...]]]", [],
     {(1, 2): 1, (1, 3): 1, (4, 5): 1}),
    ("[:find ?n ?a :where [?e :name ?n] [?e :age ?a] [(vector ?a ?a) ?p] "
     "[(vector ?n ?p) [_ [?b ?a]]] [(< ?b 20)]]", [], {("Sergey", 11): 1}),
], ids=str)
def test_inputs_returned_and_nested_bindings(query: str, inputs: list[Any],
                                             expected: Any) -> None:
    engine = engine_with(PEOPLE)
    assert engine.query(query, inputs) == expected
    assert engine.register("q", query, inputs) == expected


def test_regex_literal_in_query_text_as_written_in_clojure() -> None:
    """Datomic's docs: [(re-find #"^I" ?name)] — a Clojure regex literal in the query."""
    engine = engine_with(PEOPLE)
    assert engine.query(r'[:find ?n :where [_ :name ?n] [(re-find #"^[IP]\w+r?" ?n)]]') == \
        {("Ivan",): 1, ("Petr",): 1}
    assert engine.query('[:find ?m :where [_ :name ?n] [(re-matches #"(.)e(.+)" ?n) [_ _ ?m]]]'
                        ) == {("tr",): 1, ("rgey",): 1}
