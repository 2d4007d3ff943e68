"""The one interface every benchmarked system implements, and the checks on what they return.

A peer loads a set of facts `(attribute, entity, value)`, computes one query's result, then
applies ticks of adds and retracts; after each tick it returns how many result rows changed
(appeared or disappeared). That count is the common currency: it is cheap to produce for an
incremental engine (the size of its output delta) and for a recomputing one (the symmetric
difference of two result sets), and two systems that maintain the same query must agree on
it tick by tick.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bench.data import Fact, Tick
from bench.harness import MismatchError
from bench.queries import Spec


class Peer(Protocol):
    """A system that maintains one query's result over a stream of ticks."""

    name: str
    last_work: int | None  # elements the engine touched in the last tick, when it counts them

    def unsupported(self, spec: Spec) -> str | None:
        """Why this peer cannot run `spec`, or None when it can."""
        ...

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        """Load `facts` and compute the initial result of `spec` (named `query`)."""
        ...

    def apply(self, tick: Tick) -> int:
        """Apply one tick; return the number of result rows that appeared or disappeared."""
        ...

    def close(self) -> None:
        """Release the peer's resources (connections, processes, threads)."""
        ...


class PeerFailure(RuntimeError):
    """A peer could not run (missing package, crash, time-out); recorded, the run goes on."""


def check_counts(label: str, want: Sequence[int], got: Sequence[int]) -> None:
    """Raise MismatchError at the first tick whose change count differs from the reference."""
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w != g:
            raise MismatchError(f"{label}: tick {i} changed {g} rows, the reference {w}")
    if len(got) > len(want):
        raise MismatchError(f"{label}: ran {len(got)} ticks, the reference only {len(want)}")


@dataclass
class SetChanges:
    """The `distinct` a bag engine's output lacks: integrates ±1 row changes and counts the
    rows whose presence flipped since the last `take`."""

    counts: dict[Hashable, int] = field(default_factory=dict)
    before: dict[Hashable, bool] = field(default_factory=dict)

    def add(self, row: Hashable, weight: int) -> None:
        """Record that `row`'s multiplicity changed by `weight`."""
        old = self.counts.get(row, 0)
        self.before.setdefault(row, old > 0)
        if old + weight:
            self.counts[row] = old + weight
        else:
            del self.counts[row]

    def take(self) -> int:
        """Rows that appeared or disappeared since the previous call."""
        counts = self.counts
        flipped = sum(1 for row, was in self.before.items() if was != (counts.get(row, 0) > 0))
        self.before.clear()
        return flipped

    def __len__(self) -> int:
        return len(self.counts)
