"""Planning: a checked query becomes a QueryPlan — frozen IR data every executor runs.

``query_plan`` plans a query's body — data patterns alone by ``plan_query`` (index orders
and variable orders from arrangement statistics, the delta terms of one strategy), anything
else as strata of derived relations (``plan_rules``) — and its ``:find``; ``explain`` prints
a QueryPlan as stable text.
"""

from workers.plan.explain import explain
from workers.plan.ir import (
                             BinaryTerm,
                             Body,
                             DeltaTerm,
                             ExtenderSpec,
                             Find,
                             FindColumn,
                             JoinProgram,
                             Level,
                             Plan,
                             QueryPlan,
                             RecursiveStage,
                             Role,
                             RulesPlan,
                             Step,
                             StepKind,
)
from workers.plan.planner import STRATEGIES, plan_query
from workers.plan.query import query_plan
from workers.plan.rules import plan_rules

__all__ = ["STRATEGIES", "BinaryTerm", "Body", "DeltaTerm", "ExtenderSpec", "Find",
           "FindColumn", "JoinProgram", "Level", "Plan", "QueryPlan", "RecursiveStage", "Role",
           "RulesPlan", "Step", "StepKind", "explain", "plan_query", "plan_rules", "query_plan"]
