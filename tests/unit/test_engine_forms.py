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
    assert engine.query("[:find ?name :keys name :with ?e :where [?e :name ?name]]") == \
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
