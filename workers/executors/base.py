"""The executor contract: every executor runs the same Plan IR and gives the same changes."""

from __future__ import annotations

from typing import Any, Protocol

from workers.arrangements import MemoryArrangement
from workers.executors.work import Work
from workers.plan.ir import Plan

Row = tuple[Any, ...]


class Executor(Protocol):
    """Runs plans over arrangements it only reads.

    ``prepare`` binds a plan to the shared state and the per-tick delta arrangement once;
    ``step`` returns the tick's set changes of the query (+1 enters, -1 leaves), computed
    from the delta arrangement against the state *before* the tick; ``evaluate`` returns the
    full result over the current state.  Executors never write arrangements.
    """

    def prepare(self, plan: Plan, old: MemoryArrangement, delta: MemoryArrangement) -> Any: ...

    def step(self, prepared: Any, work: Work) -> dict[Row, int]: ...

    def evaluate(self, prepared: Any, work: Work) -> dict[Row, int]: ...
