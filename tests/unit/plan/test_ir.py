"""The plan IR is plain data: every sample plan survives a JSON round trip unchanged."""

from __future__ import annotations

import json

import pytest

from tests.unit.plan.samples import CASE_IDS, CASES, sample_plan
from workers.plan import Plan


@pytest.mark.parametrize(("name", "strategy"), CASES, ids=CASE_IDS)
def test_plan_round_trips_through_json(name: str, strategy: str) -> None:
    plan = sample_plan(name, strategy)
    assert Plan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
