"""Work counters: how much an executor did in one tick, independent of wall time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Work:
    """``calls``: extender operations (count, propose, intersect, seed and check lookups);
    ``elements``: values those operations touched (seed tuples, proposals, intersected
    candidates)."""

    calls: int = 0
    elements: int = 0

    def add(self, other: Work) -> None:
        self.calls += other.calls
        self.elements += other.elements
