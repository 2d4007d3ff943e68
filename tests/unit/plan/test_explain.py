"""Golden ``explain`` output: the sample queries under every strategy, and one query per
part of the IR beyond data patterns.

After an intended planner change, regenerate with ``pytest --update-golden tests/unit/plan``
(the rewritten tests fail once) and review ``git diff tests/data/golden/plans``.
"""

from __future__ import annotations

import pytest

from tests.fixtures.golden import Golden
from tests.unit.plan.samples import CASE_IDS, CASES, QUERIES, query_sample_plan, sample_plan
from workers.plan import explain


@pytest.mark.parametrize(("name", "strategy"), CASES, ids=CASE_IDS)
def test_explain_matches_golden(name: str, strategy: str, golden: Golden) -> None:
    golden(f"plans/{name}.{strategy}.txt", explain(sample_plan(name, strategy)))


@pytest.mark.parametrize("name", QUERIES)
def test_explain_of_every_part_of_the_ir_matches_golden(name: str, golden: Golden) -> None:
    golden(f"plans/{name}.txt", explain(query_sample_plan(name)))


def test_explain_shows_support_witness_and_premises_of_a_recursive_rule() -> None:
    text = explain(query_sample_plan("recursive-rules"))
    assert "support (rederive)" in text
    assert "witness (support check) -> premises rule:reach[?c ?b]" in text
    assert "old (over-delete)" in text and "new (insert)" in text


def test_explain_shows_the_find_specification_aggregates_and_pull() -> None:
    assert "find     (count ?e)\n" in explain(query_sample_plan("find-scalar"))
    assert "spec     scalar" in explain(query_sample_plan("find-scalar"))
    assert "spec     tuple :keys [name age]" in explain(query_sample_plan("find-tuple-keys"))
    assert "(max 2 ?a) (median ?a)" in explain(query_sample_plan("aggregates"))
    assert ('(pull ?e [* {:friend [:name [:age :default 0]]} [:g/_to :as "in" :limit 3]])'
            in explain(query_sample_plan("pull")))
