"""A small tick's step done ahead, with its read: under ``executor=spark`` one job per tick.

Normalising a tick's transactions reads the state (the driver fetches what it reads:
:mod:`~workers.executors.spark.window`), and stepping its queries is a second job.  For a
small batch of plain datoms the two are one task
(:meth:`~workers.executors.spark.executor.SparkExecutor.read_and_step`): it reads what the
driver will normalise against, *assumes* the delta the driver will find
(:func:`~workers.db.bulk.assumed_delta`, from the batch's events and the same state), steps
the queries the batch may change by it, and reads what their pulls will read after it.
The protocol, per tick:

1. the read-and-step's result is kept here (:meth:`Ahead.keep`) at the state's version;
2. the tick's step (:meth:`Ahead.step`) takes its rows when the state is still at that
   version, its plans were among those stepped ahead (the same objects: the engine's
   prepared plans) and the driver's delta is the assumed one (the same Z-set) — the
   usual case (the metric ``outcome="used"``); otherwise it is stepped again
   (``"stepped_again"``);
3. the tick's pull reads (:meth:`Ahead.read`) take what was read ahead when it holds what
   they ask, at the version after the tick;
4. the tick is over (:meth:`Ahead.forget`): whatever was not used is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workers import metrics
from workers.arrangements.batch import Ids, Ints, sort_order
from workers.arrangements.delta import DatomColumns
from workers.executors.work import Work
from workers.plan.ir import Plan
from workers.zset import ZSet
from workers.zset.row import Row

Version = tuple[str, int]  # a state's epoch and version
_ASSUMED = {outcome: metrics.SPARK_ASSUMED_STEPS.labels(outcome)
            for outcome in ("used", "stepped_again")}


@dataclass(frozen=True, slots=True)
class PulledAhead:
    """What pulling reads after a tick, read in the state after the assumed delta
    (``version``, once the tick is appended): the datoms of the ids ``seeds``, ``hops``
    steps on."""

    version: Version
    seeds: Ints
    hops: int
    datoms: tuple[Ids, Ids, Ids]

    def answers(self, version: Version, forward: Ints, backward: Ints, pairs: Ints,
                triples: Ints, hops: int) -> bool:
        """Whether this read holds what a fetch asks at ``version`` (a superset of it is as
        good: the readers walk from what they want)."""
        return (version == self.version and not len(pairs) and not len(triples)
                and hops <= self.hops and bool(np.isin(forward, self.seeds).all())
                and bool(np.isin(backward, self.seeds).all()))


@dataclass(frozen=True, slots=True)
class Speculated:
    """A tick's step done with its read, kept until the tick's steps: the state's version
    it read, the plans, the delta it assumed, each plan's set changes and the tasks' work,
    the job's seconds, and what the plans' pulls read after the tick."""

    version: Version
    plans: tuple[Plan, ...]
    delta: DatomColumns
    rows: list[ZSet[Row]]
    works: list[Work | None]
    seconds: float
    pulled: PulledAhead | None

    def holds(self, version: Version, plans: Sequence[Plan],
              delta: DatomColumns) -> list[int] | None:
        """The positions of ``plans`` among the speculated ones, when this step is theirs at
        ``version`` by ``delta``; else None."""
        positions = {id(plan): i for i, plan in enumerate(self.plans)}
        if version != self.version or any(id(plan) not in positions for plan in plans):
            return None
        return [positions[id(plan)] for plan in plans] if same(delta, self.delta) else None


class Ahead:
    """What was done ahead for the tick at hand (the module's protocol)."""

    def __init__(self) -> None:
        self._step: Speculated | None = None  # the tick's step, done with its read
        self._pulled: PulledAhead | None = None  # the used step's read for the tick's pulls

    def keep(self, speculated: Speculated) -> None:
        """Step 1: a read-and-step's result, for this tick's step."""
        self._step = speculated

    def step(self, version: Version, plans: Sequence[Plan], delta: DatomColumns
             ) -> tuple[Speculated, list[int]] | None:
        """Step 2: the step done ahead and the positions of ``plans`` in it, when it is
        theirs at ``version`` by ``delta``; None: step them.  Either way it is used up."""
        speculated, self._step = self._step, None
        if speculated is None:
            return None
        positions = speculated.holds(version, plans, delta)
        _ASSUMED["stepped_again" if positions is None else "used"].inc()
        if positions is None:
            return None
        self._pulled = speculated.pulled  # the tick's pulls read what was read ahead
        return speculated, positions

    def read(self, version: Version, forward: Ints, backward: Ints, pairs: Ints,
             triples: Ints, hops: int) -> tuple[Ids, Ids, Ids] | None:
        """Step 3: the datoms read ahead, when they answer this read at ``version`` (None:
        read them); the tick is over then (pulls read once, last)."""
        pulled = self._pulled
        self.forget()
        if pulled is not None and pulled.answers(version, forward, backward, pairs, triples,
                                                 hops):
            return pulled.datoms
        return None

    def forget(self) -> None:
        """Step 4: the tick is over (or reads anew)."""
        self._step = self._pulled = None


def same(one: DatomColumns, other: DatomColumns) -> bool:
    """Whether two deltas are one Z-set (each consolidated, in any order)."""
    if len(one) != len(other):
        return False
    ordered = [(c.e[o], c.a[o], c.v[o], c.w[o]) for c in (one, other)
               for o in [sort_order(c.e, c.a, c.v)]]
    return all(np.array_equal(x, y) for x, y in zip(*ordered, strict=True))
