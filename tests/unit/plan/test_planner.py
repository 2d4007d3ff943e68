"""The planner's delta terms: which state each pattern reads, each weight applied once."""

from __future__ import annotations

import pytest

from tests.unit.plan.samples import SAMPLES, sample_plan
from workers.datalog import compile_query
from workers.plan import plan_query


def test_delta_term_reads_new_before_and_old_after_its_pattern() -> None:
    plan = sample_plan("four-cycle", "delta").body
    for term in plan.terms:
        for level in term.program.levels:  # type: ignore[union-attr]
            for spec in level.extenders:
                assert spec.role.value == ("new" if spec.pattern < term.pattern else "old")


def test_every_pattern_weight_is_applied_exactly_once_per_term() -> None:
    plan = sample_plan("four-cycle", "delta").body
    for term in plan.terms:
        program = term.program  # type: ignore[union-attr]
        weighted = [spec.pattern for level in program.levels for spec in level.extenders
                    if spec.weighted] + [c.pattern for c in program.checks]
        assert sorted([*weighted, term.pattern]) == [0, 1, 2, 3]


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'fast'"):
        plan_query(compile_query(SAMPLES["triangle"]), "fast")
