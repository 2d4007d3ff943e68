"""Golden ``explain`` output for sample queries, and the IR round trip for every plan.

Regenerate the golden files after an intended planner change with
``DELTALOG_REGEN_GOLDEN=1 pytest tests/unit/plan`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from workers.datalog import compile_query
from workers.plan import STRATEGIES, Plan, explain, plan_query

GOLDEN = Path(__file__).parents[2] / "data" / "golden" / "plans"
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


def _plan(name: str, strategy: str) -> Plan:
    return plan_query(compile_query(SAMPLES[name], INPUTS.get(name, ())), strategy)


@pytest.mark.parametrize(("name", "strategy"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_explain_matches_golden(name: str, strategy: str) -> None:
    text = explain(_plan(name, strategy))
    path = GOLDEN / f"{name}.{strategy}.txt"
    if os.environ.get("DELTALOG_REGEN_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize(("name", "strategy"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_plan_round_trips_through_json(name: str, strategy: str) -> None:
    plan = _plan(name, strategy)
    assert Plan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan


def test_delta_term_reads_new_before_and_old_after_its_pattern() -> None:
    plan = _plan("four-cycle", "delta")
    for term in plan.terms:
        for level in term.program.levels:  # type: ignore[union-attr]
            for spec in level.extenders:
                assert spec.role.value == ("new" if spec.pattern < term.pattern else "old")


def test_every_pattern_weight_is_applied_exactly_once_per_term() -> None:
    plan = _plan("four-cycle", "delta")
    for term in plan.terms:
        program = term.program  # type: ignore[union-attr]
        weighted = [spec.pattern for level in program.levels for spec in level.extenders
                    if spec.weighted] + [c.pattern for c in program.checks]
        assert sorted([*weighted, term.pattern]) == [0, 1, 2, 3]


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'fast'"):
        plan_query(compile_query(SAMPLES["triangle"]), "fast")
