"""The plan IR is plain data: every plan — data patterns under every strategy, rules plans
with their strata, support and witness programs, aggregates, pulls, find specifications —
survives a JSON round trip unchanged.

The queries are the samples and every query of the Datalog feature tables: the oracle
property tests' (features, pulls) and the unit tables' (``tests/unit/datalog``, the
engine's forms, magic sets) that compile (the others are refusals).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from tests.property import test_datalog_features, test_pull
from tests.unit import test_engine_forms
from tests.unit.datalog import test_check, test_parse_features, test_parser
from tests.unit.datalog import test_pull as test_pull_parsing
from tests.unit.plan import test_magic
from tests.unit.plan.samples import CASE_IDS, CASES, QUERIES, query_sample_plan, sample_plan
from workers.datalog import compile_query
from workers.errors import WorkersError
from workers.plan import QueryPlan, explain, query_plan

UNIT_TABLES = (test_check, test_parse_features, test_parser, test_pull_parsing,
               test_engine_forms, test_magic)
# the unit tables' queries need these inputs when they name ``%``
RULES = {test_magic: test_magic.RULES}


def tabled_queries(module: ModuleType) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Every query text (with its ``inputs`` column) in a module's parametrized tables."""
    for test in vars(module).values():
        for mark in getattr(test, "pytestmark", ()):
            if mark.name != "parametrize":
                continue
            names = mark.args[0].split(",") if isinstance(mark.args[0], str) else mark.args[0]
            names = [n.strip() for n in names]
            for row in mark.args[1]:
                values = getattr(row, "values", None) or (  # pytest.param(...) has values
                    row if len(names) > 1 else (row,))
                columns = dict(zip(names, values, strict=True))
                for value in columns.values():
                    if isinstance(value, str) and value.lstrip("[{").startswith(":find"):
                        yield value, tuple(columns.get("inputs", ()))


def compiled_plans() -> Iterator[Any]:
    for name, query, inputs in test_datalog_features.FEATURES + test_pull.QUERIES:
        yield pytest.param(query_plan(compile_query(query, inputs)), id=name)
    for module in UNIT_TABLES:
        for query, inputs in tabled_queries(module):
            for given in (inputs, (RULES[module], *inputs)) if module in RULES else (inputs,):
                try:
                    plan = query_plan(compile_query(query, given))
                except WorkersError:
                    continue  # a refusal the table checks, or inputs it leaves out
                yield pytest.param(plan, id=f"{module.__name__.rsplit('.', 1)[1]}: {query}")
                break


FEATURE_PLANS = list(compiled_plans())


def round_trip(plan: QueryPlan) -> QueryPlan:
    return QueryPlan.from_dict(json.loads(json.dumps(plan.to_dict())))


@pytest.mark.parametrize(("name", "strategy"), CASES, ids=CASE_IDS)
def test_flat_plan_round_trips_through_json(name: str, strategy: str) -> None:
    plan = sample_plan(name, strategy)
    assert round_trip(plan) == plan


@pytest.mark.parametrize("name", QUERIES)
def test_sample_plan_round_trips_through_json(name: str) -> None:
    plan = query_sample_plan(name)
    assert round_trip(plan) == plan


@pytest.mark.parametrize("plan", FEATURE_PLANS)
def test_plan_of_every_feature_round_trips_through_json(plan: QueryPlan) -> None:
    """Equal, and — as ``==`` takes ``1`` for ``1.0`` and ``true`` — the same JSON and
    the same ``explain`` (constants of the same type)."""
    restored = round_trip(plan)
    assert restored == plan
    assert restored.to_dict() == plan.to_dict()
    assert explain(restored) == explain(plan)


def test_the_feature_tables_give_plans_of_every_kind() -> None:
    plans = [p.values[0] for p in FEATURE_PLANS]
    from_properties = len(test_datalog_features.FEATURES) + len(test_pull.QUERIES)
    assert len(plans) >= from_properties + 40  # the unit tables' queries too
    assert any(p.body.keeps_relations for p in plans)
    assert any(p.find.aggregated for p in plans) and any(p.find.pulls for p in plans)
    assert {p.find.spec for p in plans} == {"relation", "collection", "tuple", "scalar"}
    assert any(rule.witness is not None for p in plans if p.body.keeps_relations
               for stratum in p.body.strata for r in stratum.relations for rule in r.rules)
    assert any(r.name.startswith("magic:") for p in plans if p.body.keeps_relations
               for stratum in p.body.strata for r in stratum.relations)


def test_a_dict_of_another_node_is_refused() -> None:
    data = sample_plan("triangle", "delta").body.to_dict()
    with pytest.raises(ValueError, match="expected a QueryPlan, got Plan"):
        QueryPlan.from_dict(data)
