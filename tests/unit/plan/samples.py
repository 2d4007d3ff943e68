"""Sample queries for the plan tests: data patterns alone planned under every strategy, and
one query per part of the IR beyond them (rules, negation, aggregates, pull, magic sets,
find specifications)."""

from __future__ import annotations

from typing import Any

from workers.datalog import compile_query
from workers.plan import STRATEGIES, QueryPlan, query_plan

SAMPLES = {
    "triangle": "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}",
    "four-cycle": "{:find [?a ?b ?c ?d] :where [[?a :g/to ?b] [?b :g/to ?c] [?c :g/to ?d] "
                  "[?d :g/to ?a]]}",
    "two-path": "{:find [?a ?c] :where [[?a :g/to ?b] [?b :g/to ?c]]}",
    "people-input": "[:find ?n :in $ ?age :where [?e :name ?n] [?e :age ?age]]",
    "variable-attribute": "{:find [?e ?a] :where [[?e ?a 3] [?e :name _]]}",
    "repeated-variable": "{:find [?x] :where [[?x :g/to ?x]]}",
    "constants-only": "{:find [?b] :where [[1 :g/to 2] [2 :g/to ?b]]}",
}
INPUTS = {"people-input": (30,)}
CASES = [(name, strategy) for name in SAMPLES for strategy in STRATEGIES]
CASE_IDS = [f"{name}-{strategy}" for name, strategy in CASES]

REACH = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]"
DESCENDANT = ("[[(descendant [?a] ?d) [?d :parent ?a]]"
              " [(descendant [?a] ?d) [?m :parent ?a] (descendant ?m ?d)]]")
# name -> (query, inputs): planned under the default strategy.
QUERIES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "recursive-rules": ("[:find ?a ?b :in $ % :where (reach ?a ?b)]", (REACH,)),
    "negation": ("[:find ?e :where [?e :name ?n] (not [?e :age 30])]", ()),
    "or-predicate-function": ('[:find ?e ?y :where (or [?e :tag 1] [?e :name "Ivan"]) '
                              "[?e :age ?a] [(> ?a 18)] [(inc ?a) ?y]]", ()),
    "aggregates": ("[:find ?n (count ?e) (max 2 ?a) (median ?a) :with ?t "
                   ":where [?e :name ?n] [?e :age ?a] [?e :tag ?t]]", ()),
    "with-bag": ("[:find ?n :with ?e :where [?e :name ?n]]", ()),
    "pull": ('[:find ?e (pull ?e [* {:friend [:name [:age :default 0]]} [:g/_to :as "in" '
             ":limit 3]]) :where [?e :name]]", ()),
    "pull-aggregated": ("[:find (pull ?e [:name]) (count ?t) :where [?e :tag ?t]]", ()),
    "magic-sets": ('[:find ?n :in $ % :where [?a :name "Petr"] (descendant ?a ?d) '
                   "[?d :name ?n]]", (DESCENDANT,)),
    "find-scalar": ("[:find (count ?e) . :where [?e :name]]", ()),
    "find-collection": ("[:find [?n ...] :where [_ :name ?n]]", ()),
    "find-tuple-keys": ("[:find [?n ?a] :keys name age :where [?e :name ?n] [?e :age ?a]]",
                        ()),
}


def sample_plan(name: str, strategy: str) -> QueryPlan:
    return query_plan(compile_query(SAMPLES[name], INPUTS.get(name, ())), strategy)


def query_sample_plan(name: str) -> QueryPlan:
    query, inputs = QUERIES[name]
    return query_plan(compile_query(query, inputs))
