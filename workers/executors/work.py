"""Work counters: how much an executor did in one tick, independent of wall time (the time
and the executor are kept beside them for the metrics)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Work:
    """``calls``: extender operations (count, propose, intersect, seed and check lookups);
    ``elements``: values those operations touched (seed tuples, proposals, intersected
    candidates); ``seconds`` and ``executor``: how long the step took and where it ran."""

    calls: int = 0
    elements: int = 0
    seconds: float = 0.0
    executor: str = "local"

    def add(self, other: Work) -> None:
        self.calls += other.calls
        self.elements += other.elements
