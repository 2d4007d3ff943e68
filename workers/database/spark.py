"""The Spark database (``executor=spark``): Spark's state files are the database.

The driver holds no datoms: its arrangements are a window the tick's reads fill
(:class:`~workers.executors.spark.window.StateWindow`, whose reads are Spark jobs), its
dictionary is the state's too (read in its files:
:class:`~workers.executors.spark.state_dictionary.StateDictionary`), and a tick's write
appends a batch to the state — through the one
:class:`~workers.executors.spark.versions.StateVersions` that moves it (the executor's
jobs only read the version it is at).  A shared state's
writer and followers are :class:`SparkReplication`'s (:mod:`workers.database.replication`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from workers.arrangements import ArrangementRegistry
from workers.arrangements.batch import Ids, Ints
from workers.arrangements.delta import DatomColumns, IdDelta, TickDelta, summed_weight
from workers.arrangements.values import Numbering, ValueIds
from workers.database.base import Ahead, Pulled
from workers.database.memory import apply
from workers.database.replication import Caught, WorkerStamp, not_following, not_writing
from workers.db import Schema
from workers.db.codec import decode_schema
from workers.db.schema import SCHEMA_ATTRIBUTES
from workers.db.tx import BatchOps
from workers.executors.spark.executor import SparkExecutor
from workers.executors.spark.versions import StateVersions
from workers.executors.spark.window import StateWindow


class SparkDatabase:
    """A :class:`~workers.database.base.Database` in Spark's state, read through a window."""

    def __init__(self, arrangements: ArrangementRegistry, spark: SparkExecutor,
                 memory_values: int) -> None:
        """``arrangements``: the window's (the executors read them); ``memory_values``:
        the values of the dictionary kept in memory."""
        self._arrangements, self._state = arrangements, spark.state
        self.window = StateWindow(arrangements, spark, memory_values)
        self._replication = SparkReplication(spark.state, self.window, memory_values)

    @property
    def arrangements(self) -> ArrangementRegistry:
        return self._arrangements

    @property
    def replication(self) -> SparkReplication:
        return self._replication

    @property
    def opened(self) -> tuple[Schema, int] | None:
        opened = self._state.opened
        if opened is None:
            return None
        return decode_schema(opened.marks.schema), opened.marks.position

    @property
    def datoms(self) -> int:
        return self.window.datoms

    @property
    def fetch(self) -> Callable[[Ints, Ints], None] | None:
        return self.window.read_datoms

    def read_transactions(self, batch: BatchOps, schema: Schema, ahead: Ahead) -> None:
        self.window.read_transactions(batch, schema, ahead)

    def read_pulled(self, pulled: Iterable[Pulled], delta: IdDelta | None) -> None:
        """What pulling reads — from the entities and values the delta names and the pulled
        entities of the rows (all those held when the delta changes the schema: every map
        is read again), as far as the deepest pattern reaches, up to the roots
        (:meth:`~workers.pull.PullReader.roots`) and down again."""
        seeds: list[Any] = []
        depth = 0
        schema_changed = delta is not None and _changes_schema(delta, self._arrangements.ids)
        for pulling, changed in pulled:
            depth = max(depth, pulling.depth)
            seeds += pulling.entities(changed)
            if schema_changed:
                seeds += pulling.held()
        ids = self.window.ids_of(seeds)
        if delta is not None:
            ids = np.concatenate([ids, *_entities_and_values(delta)])
        self.window.read(ids, ids, hops=2 * depth if delta is not None else depth)

    def apply(self, delta: IdDelta, tick: TickDelta, position: int, schema: Schema,
              complete: bool) -> None:
        """The window takes the delta (what the tick's pulls read next), and the state a
        version appended (a follower's: the version its writer wrote)."""
        apply(self._arrangements, delta, tick)
        change = summed_weight(delta)
        self.window.applied(change, position, schema, complete)
        self._state.applied(tick.columns())

    def moved(self, position: int) -> None:
        self.window.moved(position)

    def forget(self) -> None:
        self.window.forget()

    def idle(self) -> None:
        """The state's batches summed into its base while there is time (its writer's)."""
        self._arrangements.state.compact_idle()
        self._state.idle()

    def compact_for_scan(self) -> None:
        self._arrangements.state.compact_for_scan()

    def attribute_stats(self, a: Any) -> tuple[int, int]:
        return self.window.attribute_stats(a)

    def columns(self) -> tuple[Ids, Ids, Ids]:
        """Read from the state into files the columns map: not on the heap."""
        return self.window.columns()

    def dictionary(self, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
                   objects: list[Any]) -> ValueIds:
        return self.window.dictionary(kinds, payloads, objects)

    def restore(self, values: Numbering, columns: tuple[Ids, Ids, Ids], position: int,
                schema: Schema) -> None:
        """The snapshot becomes Spark's state; the driver keeps the dictionary."""
        self.window.restored(values, columns, position, schema)


class SparkReplication:
    """The role of an engine towards a Spark state: alone (not shared), its writer
    (``SparkSettings.share``) or a follower (``SparkSettings.follow``)."""

    def __init__(self, state: StateVersions, window: StateWindow, memory_values: int) -> None:
        """``memory_values``: the values of a dictionary opened anew kept in memory."""
        self._state, self._window, self._memory_values = state, window, memory_values

    @property
    def following(self) -> bool:
        return self._state.follower is not None

    def stamp(self, stamp: WorkerStamp) -> None:
        self._window.refused = stamp

    def stamped(self) -> WorkerStamp:
        manifest = self._state.store.manifest
        return () if manifest is None or manifest.stamp is None else manifest.stamp.marks.refused

    def lead(self) -> bool:
        """Values the follower numbered itself take the writer's numbering."""
        state = self._following()
        if state.follow() is not None:
            return False
        follower = state.follower
        assert follower is not None
        if not state.lead():  # its claim lost to a write since: it follows on first
            return False
        follower.ids.adopt_own()
        self._window.numbering(follower.ids.replica)
        return True

    def step_down(self) -> None:
        state = self._state
        if state.follower is not None or not state.store.shared:
            raise not_writing()
        state.step_down(self._memory_values)
        assert state.follower is not None
        self._window.numbering(state.follower.ids)

    def follow(self) -> Caught | None:
        """Raises :class:`~workers.executors.spark.shared.FollowerBehind` when it cannot
        (the writer replaced its state, or no longer keeps the versions between)."""
        followed = self._following().follow()
        if followed is None:
            return None
        stamp = followed.manifest.stamp
        assert stamp is not None
        return Caught(followed.delta, decode_schema(stamp.marks.schema), stamp.marks.position,
                      followed.renumbered)

    def reached(self) -> None:
        self._following().applied(DatomColumns.of({}))

    def follow_anew(self) -> tuple[Schema, int]:
        """The state and its dictionary opened anew at the writer's newest version (the
        window's dictionary too)."""
        opened = self._following().follow_anew(self._memory_values)
        self._window.opened_anew(opened)
        return decode_schema(opened.marks.schema), opened.marks.position

    def _following(self) -> StateVersions:
        if self._state.follower is None:
            raise not_following()
        return self._state


def _changes_schema(delta: IdDelta, ids: Numbering) -> bool:
    """Whether a delta holds a datom of a schema attribute."""
    schema = [i for i in map(ids.lookup, SCHEMA_ATTRIBUTES) if i is not None]
    attributes = delta.a if isinstance(delta, DatomColumns) else [d[1] for d in delta]
    return bool(np.isin(attributes, schema).any())


def _entities_and_values(delta: IdDelta) -> tuple[npt.NDArray[np.int64], ...]:
    """The ids a delta's datoms hold as entities and as values."""
    if isinstance(delta, DatomColumns):
        return delta.e.astype(np.int64), delta.v.astype(np.int64)
    return (np.array([d[0] for d in delta], np.int64), np.array([d[2] for d in delta], np.int64))
