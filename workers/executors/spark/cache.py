"""The state as a task sees it: opened once per Python worker process, then caught up.

Spark reuses its Python worker processes from task to task (``spark.python.worker.reuse``,
on by default), so a module-level cache lives as long as the process.  A task asks for the
state at its step's version (:class:`~workers.executors.spark.state.Manifest`); the cache
answers with an :class:`ArrangementRegistry` holding exactly that version:

- same epoch, cached version ``c`` and the manifest still lists every batch after ``c``:
  read just those batch files and apply them (one spine update each) — a tick's cost;
- otherwise (first use, a restored state, or a compaction folded batches the cache never
  read into the base): read the base and every batch again.

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
from workers.executors.spark.state import Manifest, Part, read_part


@dataclass(slots=True)
class OpenState:
    epoch: str
    version: int
    db: ArrangementRegistry


_OPEN: dict[str, OpenState] = {}  # by location: this process's copy of each state


def open_state(manifest: Manifest) -> ArrangementRegistry:
    """The registry at ``manifest``'s version, from this process's cache when it can."""
    found = _OPEN.get(manifest.location)
    if found is None or not _can_catch_up(found, manifest):
        found = OpenState(manifest.epoch, -1, ArrangementRegistry())
        _OPEN[manifest.location] = found
        _apply(found, manifest, manifest.base)
    for part in manifest.batches:
        if part.version > found.version:
            _apply(found, manifest, (part,))
    return found.db


def _can_catch_up(found: OpenState, manifest: Manifest) -> bool:
    if found.epoch != manifest.epoch or found.version > manifest.version:
        return False
    first = manifest.batches[0].version if manifest.batches else manifest.version + 1
    return found.version >= manifest.base_version and found.version + 1 >= first


def _apply(found: OpenState, manifest: Manifest, parts: tuple[Part, ...]) -> None:
    """Parts of one version (a batch, or the base's buckets) as one update."""
    if not parts:
        return
    columns = DatomColumns.concatenate([read_part(manifest.location, p) for p in parts])
    if len(columns):
        found.db.apply_columns(columns)
    found.version = parts[0].version


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
