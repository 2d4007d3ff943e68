"""Snapshots of the database with the tx offset they include, so a restart replays only the
log after them.  Written atomically (temporary file, fsync, rename); the newest two kept.

Snapshots are taken right after a committed tick, so their offset never runs ahead of the
committed progress.  They are pickles: read them only from a directory you trust.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
from pathlib import Path

from workers.arrangements.values import ValueIds
from workers.engine import EngineState

log = logging.getLogger("deltalog.checkpoint")
KEEP = 2
PREFIX, SUFFIX = "snapshot-", ".pickle"


class SnapshotStore:
    """A directory of snapshots named by the last tx offset they include."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def save(self, state: EngineState) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / f"{PREFIX}{state.tx:020d}{SUFFIX}"
        fd, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                pickle.dump(state, file, protocol=pickle.HIGHEST_PROTOCOL)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        for old in self._snapshots()[:-KEEP]:  # workers may share the directory
            old.unlink(missing_ok=True)
        return target

    def latest(self, at_most: int) -> EngineState | None:
        """The newest readable snapshot whose offset is at most ``at_most`` (committed
        progress).  One this version cannot read (written by an older one, whose database
        had another form, or damaged) is skipped with a warning: the log after an older
        snapshot, or the whole log, rebuilds the same state."""
        for path in reversed(self._snapshots()):
            if int(path.name[len(PREFIX):-len(SUFFIX)]) <= at_most:
                try:
                    with path.open("rb") as file:
                        state = pickle.load(file)
                except FileNotFoundError:  # another worker sharing the directory pruned it
                    continue
                except Exception as error:  # unpickling raises whatever the bytes lead to
                    log.warning("snapshot %s unreadable, skipped: %r", path, error)
                    continue
                if not _this_version(state):
                    log.warning("snapshot %s is not this version's database, skipped", path)
                    continue
                return state
        return None

    def _snapshots(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"{PREFIX}*{SUFFIX}"))


def _this_version(state: object) -> bool:
    """An :class:`EngineState` of this version, every field there (an older version's
    state unpickles into the class with its fields in the wrong slots)."""
    return (isinstance(state, EngineState) and all(hasattr(state, f) for f in (
        "values", "columns", "schema", "tx")) and isinstance(state.values, ValueIds)
            and isinstance(state.columns, tuple) and len(state.columns) == 3
            and isinstance(state.tx, int))
