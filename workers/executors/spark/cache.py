"""The state as a task sees it: opened once per Python worker process, then caught up.

Spark reuses its Python worker processes from task to task (``spark.python.worker.reuse``,
on by default), so a module-level cache lives as long as the process.  A task asks for the
state at its step's version (:class:`~workers.executors.spark.state.Manifest`); the cache
answers with an :class:`ArrangementRegistry` holding exactly that version:

- same epoch, cached version ``c`` and the manifest's batches continue from ``c`` (each
  of its versions after ``c`` is listed, none folded with ``c`` or an older one): read
  just those batch files and apply their sum (one spine update) — a tick's cost;
- otherwise (first use, a restored state, or a compaction folded batches the cache never
  read into the base or into one batch with some it did): read the base and every batch
  again;
- and whenever the manifest's base has an index the cache was not opened from (a
  compaction built one): open that index — a file mapped, nothing sorted, its pages shared
  with every other Python worker that maps it — and read the batches after it, instead of
  keeping a copy this process built and merged itself.

A task only ever asks for the newest version its driver wrote, so the cache only goes
forward.  The registry's value dictionary stays empty: tasks read ids, and a plan's
constants come with the plan (:class:`PlanIds`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.arrangements import ArrangementRegistry
from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import ValueIds
from workers.executors.spark.state import Manifest, Part, read_index, read_part


@dataclass(slots=True)
class OpenState:
    epoch: str
    version: int
    db: ArrangementRegistry
    index: str | None = None  # the index it was opened from (None: built from the parts)


_OPEN: dict[str, OpenState] = {}  # by location: this process's copy of each state


def open_state(manifest: Manifest) -> ArrangementRegistry:
    """The registry at ``manifest``'s version, from this process's cache when it can."""
    found = _OPEN.get(manifest.location)
    if (found is None or not _can_catch_up(found, manifest)
            or manifest.index not in (None, found.index)):
        found = OpenState(manifest.epoch, -1, ArrangementRegistry(), manifest.index)
        _OPEN[manifest.location] = found
        if manifest.index is not None:
            found.db.apply_batch(read_index(manifest.location, manifest.index),
                                 manifest.base_rows)
            found.version = manifest.base_version
    _apply(found, manifest, tuple(p for p in manifest.parts() if p.version > found.version))
    return found.db


def _can_catch_up(found: OpenState, manifest: Manifest) -> bool:
    """Whether the cache holds a version the manifest's batches continue from: the first
    batch it lacks starts right after it (not inside a folded batch)."""
    if (found.epoch != manifest.epoch or found.version > manifest.version
            or found.version < manifest.base_version):
        return False
    newer = [p for p in manifest.batches if p.version > found.version]
    return not newer or newer[0].first == found.version + 1


def _apply(found: OpenState, manifest: Manifest, parts: tuple[Part, ...]) -> None:
    """Parts listed in version order (the batches after the cached version, after the
    base's buckets when none is cached) as one update: their sum is the change to the
    newest of them, and one batch of it is built and merged once.  A Python worker
    opening a 10^7 state's index under the 36 batches a load left took 1.3-1.6 s to apply
    them one by one (a spine's merges as it grew) and 1.7-2.6 s more to merge them before
    a scan; summed, 1.1-2.4 s in all (0.9 s of CPU; the rest is this VM's first touch of
    memory, ``docs/spark.md``)."""
    if not parts:
        return
    columns = DatomColumns.concatenate([read_part(manifest.location, p) for p in parts])
    if len(columns):
        found.db.apply_columns(columns)
    found.version = parts[-1].version


def forget() -> None:
    """Drop every cached state (tests)."""
    _OPEN.clear()


class PlanIds(ValueIds):
    """The ids of a plan's constants, as numbered by the driver's dictionary: what a task's
    registry answers ``intern`` with (``with_ids``); any other value is an error."""

    __slots__ = ("_ids",)

    def __init__(self, ids: dict[Any, int]) -> None:
        super().__init__()
        self._ids = ids

    @staticmethod
    def key(value: Any) -> Any:
        """Values equal in Python but distinct in the dictionary (``1``, ``1.0``, ``True``)
        keep apart under their type."""
        return type(value), value

    def intern(self, value: Any) -> int:
        return self._ids[self.key(value)]

    def lookup(self, value: Any) -> int | None:
        return self._ids.get(self.key(value))
