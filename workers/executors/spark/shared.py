"""Following a state another engine writes: a fleet on Spark writes its state once per tick.

The writer (``SparkSettings.share``) stamps each version of its state with its position,
the database's size and schema, and writes its dictionary beside the datoms
(:mod:`~workers.executors.spark.dictionary`).  A follower (``SparkSettings.follow``) writes
nothing: it steps its own queries from version to version by the writer's batches, and its
tasks read the writer's files.  What it needs of them:

- **the same ids**: its dictionary is the writer's, read where it is, in the state's files
  (:class:`~workers.executors.spark.state_dictionary.StateDictionary`: a value's id by
  binary search of the runs, an id's value by the values files' row counts; a follower
  starting reads neither whole).  Values only its own queries name (constants, functions' results,
  inputs) get ids of its own, numbered down from the largest id, so the writer's
  numbering never meets them.  When the writer later numbers one of them (a datom now
  holds it), the follower forgets its own id and its queries are bound anew
  (:attr:`Followed.renumbered`);
- **the batches between its version and the newest**, read by their names, and the files
  of the version it is at (its steps read the state before their delta): the writer keeps
  the files a version no longer names ``retain_seconds`` (``StateStore``).  A follower
  further behind — or one whose writer started a new epoch (a restored snapshot) — cannot
  step, and says so (:class:`FollowerBehind`): it opens the state anew at the newest
  version, as a follower starting does (``Engine.follow_anew``).

Writing changes hands at the newest version (``Engine.step_down``, ``Engine.lead``): the
follower taking over numbers its own values in the writer's dictionary and writes on, in
the same epoch; a writer starting where a shared state is takes it up the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import sorted_sum
from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import MAX_IDS, IdArray, Numbering, int_key, object_key
from workers.errors import ErrorCode, WorkersError
from workers.executors.spark.publish import newest
from workers.executors.spark.state import Manifest, Marks, Part, batch_name, filesystem, read_part
from workers.executors.spark.state_dictionary import StateDictionary


class FollowerBehind(WorkersError):
    """A follower cannot step to its writer's newest version (the message says why): it
    opens the state anew at the newest (``Engine.follow_anew``), and its worker owns its
    queries anew, caught up from their committed views."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=ErrorCode.SPARK)


@dataclass(frozen=True, slots=True)
class Followed:
    """One step of a follower: the newest version, the delta from the follower's version
    to it, and whether values the follower had numbered itself now have the writer's ids
    (its queries' constants and state must be bound anew before it steps)."""

    manifest: Manifest
    delta: DatomColumns
    renumbered: bool


def shared_state_at(location: str) -> bool:
    """Whether ``location`` holds a shared state (a writer sharing it there writes on)."""
    try:
        read_manifest(location)
    except WorkersError:
        return False
    return True


def read_manifest(location: str) -> Manifest:
    """The newest version of the shared state at ``location`` (its greatest publication:
    :mod:`~workers.executors.spark.publish`)."""
    published = newest(*filesystem(location))
    if published is None:
        raise WorkersError(f"no Spark state to follow at {location!r}: start its writer "
                           "first (executor=spark, sharing its state)", code=ErrorCode.SPARK)
    manifest = Manifest.from_json(location, published[1])
    if manifest.stamp is None or not manifest.stamp.shared:
        raise WorkersError(f"the Spark state at {location!r} is not shared: its writer must "
                           "share it to be followed", code=ErrorCode.SPARK)
    return manifest


class StateFollower:
    """A follower's side of a shared state: the versions it reads, and its dictionary."""

    def __init__(self, location: str, manifest: Manifest, ids: FollowerIds) -> None:
        """A follower at ``manifest``'s version, whose dictionary ``ids`` holds its values
        (a writer stepping down: its own)."""
        self.location, self.manifest, self.ids = location, manifest, ids

    @classmethod
    def open(cls, location: str, memory_values: int) -> StateFollower:
        """A follower at the writer's newest version, its dictionary the state's files
        (opened, not read: :mod:`~workers.executors.spark.state_dictionary`)."""
        manifest = read_manifest(location)
        return cls(location, manifest, FollowerIds(StateDictionary(manifest, memory_values)))

    @property
    def marks(self) -> Marks:
        """What the writer stamped the version this follower is at with."""
        assert self.manifest.stamp is not None, "a shared state is stamped"
        return self.manifest.stamp.marks

    def next(self) -> Followed | None:
        """The step to the writer's newest version (None: the follower is at it)."""
        latest = read_manifest(self.location)
        if latest.epoch != self.manifest.epoch:
            raise FollowerBehind(f"the Spark state at {self.location!r} was replaced (its "
                                 "writer restored a snapshot): follow it anew")
        assert latest.stamp is not None
        if latest.version == self.manifest.version:  # the position alone may have moved
            return None if latest.stamp.marks.position == self.marks.position else Followed(
                latest, DatomColumns.of({}), renumbered=False)
        batches = []
        for version in range(self.manifest.version + 1, latest.version + 1):
            try:
                batches.append(read_part(self.location,
                                         Part(batch_name(latest.epoch, version), version, 0)))
            except FileNotFoundError as error:
                raise FollowerBehind(
                    f"version {version} of the Spark state at {self.location!r} is gone: "
                    "this follower is further behind its writer than the writer keeps "
                    "replaced files (retain_seconds)") from error
        whole = DatomColumns.concatenate(batches)
        return Followed(latest, DatomColumns(*sorted_sum(whole.e, whole.a, whole.v, whole.w)),
                        self._extend(latest))

    def _extend(self, manifest: Manifest) -> bool:
        """The dictionary at ``manifest``'s version; whether one of the values numbered
        since had an id of the follower's own."""
        return self.ids.reached(manifest)


def _key(x: Any) -> Any:
    return x if int_key(x) is not None else object_key(x)


class FollowerIds:
    """A follower's dictionary (a :class:`~workers.arrangements.values.Numbering`):
    ``replica``, its writer's (the same ids), and above it ids of the follower's own,
    numbered down from the largest, for values only the follower's queries name (see the
    module's docstring)."""

    __slots__ = ("_own", "_own_values", "replica")

    def __init__(self, replica: StateDictionary) -> None:
        self.replica = replica
        self._own: dict[Any, int] = {}  # the follower's own values -> their ids
        self._own_values: list[Any] = []  # by id, down from MAX_IDS - 1 (kept once renumbered)

    @property
    def floor(self) -> int:
        """The smallest id of the follower's own."""
        return MAX_IDS - len(self._own_values)

    @property
    def size(self) -> int:
        return self.replica.size

    @property
    def resident(self) -> int:
        return self.replica.resident + len(self._own_values)

    @property
    def nbytes(self) -> int:
        return self.replica.nbytes

    def reached(self, manifest: Manifest) -> bool:
        """The writer's dictionary at ``manifest``'s version; whether one of the values it
        numbered since was the follower's own (it is the writer's from now on).  Those
        values alone are read, and each must have its own id (else the writer numbered a
        value twice)."""
        start = self.replica.size
        self.replica.reached(manifest)
        stop = self.replica.size
        values = self.replica.values(np.arange(start, stop))
        if not np.array_equal(self.replica.lookup_values(values), np.arange(start, stop)):
            raise WorkersError("the dictionary files of a shared Spark state number a value "
                               "twice", code=ErrorCode.SPARK)
        renumbered = [key for key in map(_key, values) if key in self._own]
        for key in renumbered:
            del self._own[key]
        return bool(renumbered)

    def adopt_own(self) -> None:
        """The follower becomes the writer: its own values are numbered in the replica
        (the writer's dictionary from now on)."""
        self.replica.intern_values([x for x in self._own_values if _key(x) in self._own])
        self._own.clear()

    def lookup(self, x: Any) -> int | None:
        found = self.replica.lookup(x)
        return self._own.get(_key(x)) if found is None else found

    def intern(self, x: Any) -> int:
        found = self.lookup(x)
        if found is None:
            if self.floor <= self.replica.size + 1:
                raise OverflowError(f"more than {MAX_IDS} distinct values: ids are int32")
            self._own_values.append(x)
            found = self._own[_key(x)] = self.floor
        return found

    def intern_values(self, xs: Sequence[Any]) -> IdArray:
        return np.array([self.intern(x) for x in xs], np.int32)

    def intern_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        return self.intern_values(xs.tolist())

    def lookup_values(self, xs: Sequence[Any]) -> IdArray:
        ids = self.replica.lookup_values(xs)
        return self._own_lookups(ids, xs)

    def lookup_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        return self._own_lookups(self.replica.lookup_ints(xs), xs.tolist())

    def _own_lookups(self, ids: IdArray, xs: Sequence[Any]) -> IdArray:
        """``ids`` with the missing ones (-1) looked up among the follower's own."""
        if self._own:
            for i in np.flatnonzero(ids < 0).tolist():
                ids[i] = self._own.get(_key(xs[i]), -1)
        return ids

    def value(self, i: int) -> Any:
        return self._own_values[MAX_IDS - 1 - i] if i >= self.floor else self.replica.value(i)

    def values(self, ids: npt.NDArray[np.integer[Any]]) -> list[Any]:
        column = np.asarray(ids, np.int64)
        own = column >= self.floor
        if not own.any():
            return self.replica.values(column)
        out = np.empty(len(column), object)
        out[~own] = self.replica.values(column[~own])
        out[own] = [self._own_values[MAX_IDS - 1 - i] for i in column[own].tolist()]
        return out.tolist()  # type: ignore[no-any-return]

    def objects(self, ids: IdArray) -> list[Any]:
        own = ids >= self.floor
        return self.replica.objects(ids[~own]) + [
            x for x in self.values(np.unique(ids[own])) if int_key(x) is None]

    def release(self) -> None:
        self.replica.release()

    def entries(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64], list[Any]]:
        raise WorkersError("a follower's dictionary is its writer's: the writer's snapshots "
                           "hold it", code=ErrorCode.SPARK)

    def copy(self) -> Numbering:
        return self.entries()  # type: ignore[return-value]  # it raises
