"""Sample queries planned under every strategy, shared by the plan tests."""

from __future__ import annotations

from workers.datalog import compile_query
from workers.plan import STRATEGIES, Plan, plan_query

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


def sample_plan(name: str, strategy: str) -> Plan:
    return plan_query(compile_query(SAMPLES[name], INPUTS.get(name, ())), strategy)
