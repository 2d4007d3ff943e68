"""Planning: a checked query becomes a Plan — frozen IR data every executor runs.

``plan_query`` picks index orders and variable orders (from arrangement statistics) and
builds the delta terms of one strategy; ``explain`` prints a Plan as stable text.
"""

from workers.plan.explain import explain
from workers.plan.ir import (
                             BinaryTerm,
                             DeltaTerm,
                             ExtenderSpec,
                             JoinProgram,
                             Level,
                             Plan,
                             RecursiveStage,
                             Role,
                             Step,
                             StepKind,
)
from workers.plan.planner import STRATEGIES, plan_query

__all__ = ["STRATEGIES", "BinaryTerm", "DeltaTerm", "ExtenderSpec", "JoinProgram", "Level",
           "Plan", "RecursiveStage", "Role", "Step", "StepKind", "explain", "plan_query"]
