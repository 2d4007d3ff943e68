"""The executor contract: every executor runs the same Plan IR and gives the same changes.

An executor computes only: it reads the database's arrangements and the delta a step is
given, and writes neither (the engine's database applies the delta after every query has
stepped, so all of them read the same ``old``).  Three implement it —
:class:`~workers.executors.local.LocalExecutor` (row at a time, every plan),
:class:`~workers.executors.vectorised.VectorExecutor` (a frame at a time, the plans it
takes) and :class:`~workers.executors.spark.executor.SparkExecutor` (Spark jobs whose tasks
run the other two) — and :mod:`~workers.executors.dispatch` picks one per step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from workers.arrangements.delta import TickDelta
from workers.executors.work import Work
from workers.plan.ir import Plan
from workers.zset import ZSet
from workers.zset.row import Row

if TYPE_CHECKING:
    from workers.executors.local import LocalExecutor, PreparedPlan
    from workers.executors.rows import IdRows
    from workers.executors.rules import PreparedRules
    from workers.executors.spark.executor import SparkExecutor, SparkPlan
    from workers.executors.vectorised import Frame, VectorExecutor, VectorPlan

Prepared = TypeVar("Prepared")
Rows = TypeVar("Rows", covariant=True)


class Executor(Protocol[Prepared, Rows]):
    """Runs plans over arrangements it only reads.

    1. ``prepare`` binds a plan to the database's arrangements once (a query registering,
       or bound anew to a new dictionary);
    2. ``step`` returns the tick's set changes of the query (+1 enters, -1 leaves),
       computed from ``delta`` against the state *before* the tick, and the work it took;
    3. ``evaluate`` returns the full result over the current state, and its work.
    """

    name: str

    def prepare(self, plan: Plan) -> Prepared: ...

    def step(self, prepared: Prepared, delta: TickDelta) -> tuple[Rows, Work]: ...

    def evaluate(self, prepared: Prepared) -> tuple[Rows, Work]: ...


if TYPE_CHECKING:
    def conforming(local: LocalExecutor, vector: VectorExecutor, spark: SparkExecutor
                   ) -> tuple[Executor[PreparedPlan | PreparedRules, ZSet[Row]],
                              Executor[VectorPlan, Frame], Executor[SparkPlan, IdRows]]:
        """mypy's check that each executor follows the protocol (never run)."""
        return local, vector, spark
