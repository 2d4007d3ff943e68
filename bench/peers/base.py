"""The one interface every benchmarked system implements, and the checks on what they return.

A peer loads a set of facts `(attribute, entity, value)`, computes one query's result, then
applies ticks of adds and retracts; after each tick it returns how many result rows changed
(appeared or disappeared). That count is the common currency: it is cheap to produce for an
incremental engine (the size of its output delta) and for a recomputing one (the symmetric
difference of two result sets), and two systems that maintain the same query must agree on
it tick by tick.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bench.data import Fact
from bench.queries import Spec


@dataclass(frozen=True)
class Tick:
    """One tick's net change: facts added (absent before) and retracted (present before)."""

    adds: tuple[Fact, ...] = ()
    removes: tuple[Fact, ...] = ()

    @classmethod
    def of(cls, ops: Iterable[tuple[bool, Fact]]) -> Tick:
        """A tick from (is_add, fact) ops."""
        ops = list(ops)
        return cls(tuple(f for add, f in ops if add), tuple(f for add, f in ops if not add))

    @classmethod
    def net(cls, ticks: Iterable[Tick]) -> Tick:
        """The net effect of consecutive ticks, as one tick (a fact added then retracted
        cancels): how a peer that ran out of time catches up with the stream."""
        weight: dict[Fact, int] = {}
        for tick in ticks:
            for f in tick.adds:
                weight[f] = weight.get(f, 0) + 1
            for f in tick.removes:
                weight[f] = weight.get(f, 0) - 1
        return cls(
            tuple(f for f, w in weight.items() if w > 0),
            tuple(f for f, w in weight.items() if w < 0),
        )

    def __len__(self) -> int:
        return len(self.adds) + len(self.removes)

    def to_json(self) -> dict[str, list[Fact]]:
        return {"adds": list(self.adds), "removes": list(self.removes)}

    @classmethod
    def from_json(cls, data: dict[str, list[list[object]]]) -> Tick:
        return cls(*(tuple(as_fact(f) for f in data[k]) for k in ("adds", "removes")))


def as_fact(item: Sequence[object]) -> Fact:
    """A fact decoded from JSON (a list) back into a tuple."""
    attribute, entity, value = item
    return str(attribute), int(entity), int(value)  # type: ignore[call-overload]


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


class MismatchError(RuntimeError):
    """A peer's per-tick change count differs from the reference's: the run is invalid."""


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
