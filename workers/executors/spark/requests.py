"""What the driver ships to Spark's tasks (pickled into each): a step of the tick's queries
or an evaluation (:class:`Tick`), a join program's rows (:class:`Rows`), a read
(:class:`Fetch`), a read and step at once (:class:`Speculation`), a compaction
(:class:`Compaction`) — each naming the state's version its tasks open (a manifest), and
the plans' constants numbered by the driver (:func:`constants`: tasks read ids only).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workers.arrangements.batch import Ints
from workers.arrangements.delta import DatomColumns
from workers.arrangements.relation import RelationArrangement
from workers.arrangements.values import Numbering
from workers.db.bulk import Events
from workers.executors.extenders import Relations
from workers.executors.spark.cache import PlanIds
from workers.executors.spark.jobs import WorkCounts
from workers.executors.spark.state import Manifest
from workers.plan.ir import JoinProgram, Plan, Step, StepKind
from workers.pull.maintain import PullReads
from workers.zset import ZSet
from workers.zset.row import Row


@dataclass(frozen=True, slots=True)
class Tick:
    """What every task of one step of the tick's queries (or one evaluation, of one plan)
    needs (pickled into the task)."""

    manifest: Manifest
    plans: tuple[Plan, ...]
    constants: dict[Any, int]
    delta: DatomColumns
    shares: int
    counters: WorkCounts  # what the tasks did for each plan
    least_width: int = 0  # rows of other kinds in the same job (:class:`Speculation`)

    @property
    def width(self) -> int:
        """The columns of the step's rows: the widest query's (the others padded)."""
        return max(self.least_width, *(len(plan.find) for plan in self.plans))


@dataclass(frozen=True, slots=True)
class Rows:
    """A join program of derived relations, the rows it starts from and the relations'
    tuples (each a state and a change), for :func:`~workers.executors.spark.tasks.join`."""

    manifest: Manifest
    program: JoinProgram
    constants: dict[Any, int]
    delta: DatomColumns
    shares: int
    rows: ZSet[Row]
    relations: dict[str, tuple[RelationArrangement, RelationArrangement]]
    counters: WorkCounts  # of one plan: the program


@dataclass(frozen=True, slots=True)
class Fetch:
    """Datoms the driver asks for: those whose entity is one of ``forward`` and those whose
    value is one of ``backward`` (ids); then, ``hops`` times, those of every entity or value
    the datoms found so far hold (one share only: a hop crosses shares).  Besides, those
    under each ``(e, a)`` row of ``pairs``, each ``(e, a, v)`` row of ``triples`` that
    is present, and every datom of the ``attributes`` (a schema change checks their data;
    keyed by entity like the rest, so each share reads its own entities' datoms)."""

    manifest: Manifest
    forward: Ints
    backward: Ints
    hops: int
    shares: int
    pairs: Ints
    triples: Ints
    attributes: Ints = field(default_factory=lambda: np.zeros(0, np.int64))


@dataclass(frozen=True, slots=True)
class Speculation:
    """A small tick's read and step in one task (:func:`~.tasks.speculate`): the datoms the
    driver normalises against (``read``), the step of ``tick``'s queries by the delta the
    task assumes from the batch's ``events`` and the state
    (:func:`~workers.db.bulk.assumed_delta`), and what the queries' ``pulls`` read after
    the tick."""

    tick: Tick
    read: Fetch
    events: Events
    pulls: PullReads | None


@dataclass(frozen=True, slots=True)
class Compaction:
    """The base of ``manifest``'s version as ``buckets`` files ``{stem}-{bucket}.arrow``."""

    manifest: Manifest
    stem: str
    buckets: int

    def name(self, bucket: int) -> str:
        return f"{self.stem}-{bucket}.arrow"


def constants(node: Any, ids: Numbering) -> dict[Any, int]:
    """The ids of every constant in a plan (numbered now if new), keyed as :class:`PlanIds`
    looks them up."""
    found: dict[Any, int] = {}

    def walk(item: Any) -> None:
        if isinstance(item, Step) and item.kind is StepKind.CONST:
            found[PlanIds.key(item.arg)] = ids.intern(item.arg)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for field in dataclasses.fields(item):
                walk(getattr(item, field.name))
        elif isinstance(item, tuple):
            for each in item:
                walk(each)

    walk(node)
    return found


def tuples(relations: Relations) -> dict[str, tuple[RelationArrangement, RelationArrangement]]:
    """Derived relations as their tuples alone (a task builds the tries it reads)."""
    def rows_of(arrangement: RelationArrangement) -> RelationArrangement:
        copy = RelationArrangement()
        copy.rows = arrangement.rows
        return copy
    return {name: (rows_of(state), rows_of(change))
            for name, (state, change) in relations.items()}
