"""Golden ``explain`` output for the sample queries under every strategy.

Regenerate the golden files after an intended planner change with
``DELTALOG_REGEN_GOLDEN=1 pytest tests/unit/plan`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.plan.samples import CASE_IDS, CASES, sample_plan
from workers.plan import explain

GOLDEN = Path(__file__).parents[2] / "data" / "golden" / "plans"


@pytest.mark.parametrize(("name", "strategy"), CASES, ids=CASE_IDS)
def test_explain_matches_golden(name: str, strategy: str) -> None:
    text = explain(sample_plan(name, strategy))
    path = GOLDEN / f"{name}.{strategy}.txt"
    if os.environ.get("DELTALOG_REGEN_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
