"""The fleet's snapshot store: the database at a transaction, shared by every worker, so a
restart — or a new worker on an empty disk — replays only the log after the newest snapshot.

Where: a directory (``snapshot_dir``, the default) or a URL (``snapshot_url``) that
``pyarrow.fs`` opens — ``file://``, ``s3://``, ``gs://``, ``hdfs://`` (``mock://`` is an
in-memory one, for tests).  A snapshot is named by the last transaction it includes,
``snapshot-<tx>.zip``: the database at a transaction is the same on every worker, so a name
is written once, whoever writes it.  Its contents are data, never code
(:mod:`workers.runtime.snapshot_format`).

Publishing a snapshot, in steps:

1. write the whole file under a temporary name of its own, ``snapshot-<tx>.<random>.tmp``
   (a directory shows a file while it grows; an object store shows an object only once its
   upload completes, but a worker dying mid-write must leave nothing a reader picks);
2. move it to its name: a rename on a filesystem (atomic), a server-side copy on an object
   store (the object appears whole).  Two workers publishing the same transaction write
   equal databases: the last move wins, and either is whole;
3. prune: keep the newest :data:`KEEP`; delete the temporaries of older transactions (left
   by a writer that died).

A reader lists the store and takes the newest snapshot at or below its bound; one that
vanished meanwhile (pruned by another worker) or does not read (damaged, cut short, of
another format: the format's checksums catch it) is skipped for the next older one, and
with none the whole log rebuilds the same state.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.fs as pafs

from workers.arrangements.values import ValueIds
from workers.config import mask_url
from workers.engine import EngineState
from workers.errors import ErrorCode, WorkersError
from workers.runtime import snapshot_format

log = logging.getLogger("deltalog.checkpoint")
KEEP = 3  # snapshots kept: a reader that loses a race with pruning has older ones to read
PREFIX, SUFFIX, TEMPORARY = "snapshot-", ".zip", ".tmp"
LEGACY = ".pickle"  # written by deltalog before this format: never read (pickles run code)
TX_DIGITS = 20  # names sort as numbers do
LISTING_ATTEMPTS = 10  # listings retried when a file vanishes while the directory is read
DOWNLOAD_PIECE = 1 << 24  # bytes of a remote snapshot copied at once


class SnapshotStore:
    """Snapshots named by their transaction in one directory of a ``pyarrow`` filesystem."""

    def __init__(self, filesystem: pafs.FileSystem, directory: str) -> None:
        self.filesystem, self.directory = filesystem, directory.rstrip("/")

    @classmethod
    def at(cls, location: str | Path) -> SnapshotStore:
        """The store at a URL (``s3://bucket/snapshots``, ``file:///var/lib/snapshots``) or a
        plain path (relative to the working directory)."""
        text = str(location)
        if "://" in text:
            try:
                filesystem, directory = pafs.FileSystem.from_uri(text)
            except (ValueError, OSError) as error:  # ArrowInvalid is a ValueError
                raise WorkersError(f"snapshot store {mask_url(text)}: {mask_url(str(error))}",
                                   code=ErrorCode.CONFIG) from None
            return cls(filesystem, directory)
        return cls(pafs.LocalFileSystem(), Path(text).absolute().as_posix())

    def save(self, state: EngineState) -> str | None:
        """Publish ``state`` (the steps above); its path in the store, or None when another
        writer pruned it first (it was older than every snapshot kept)."""
        target = self._path(f"{PREFIX}{state.tx:0{TX_DIGITS}d}{SUFFIX}")
        temporary = self._path(f"{PREFIX}{state.tx:0{TX_DIGITS}d}.{uuid.uuid4().hex}{TEMPORARY}")
        self.filesystem.create_dir(self.directory, recursive=True)
        try:
            with self.filesystem.open_output_stream(temporary) as stream:  # Step 1
                snapshot_format.write(state, stream)
            self.filesystem.move(temporary, target)  # Step 2
        except FileNotFoundError:
            log.info("snapshot at tx %d pruned by another writer before it was published",
                     state.tx)
            return None
        except BaseException:
            with contextlib.suppress(OSError):
                self.filesystem.delete_file(temporary)
            raise
        self._prune()  # Step 3
        return target

    def latest(self, at_most: int, dictionary: snapshot_format.Dictionary = ValueIds.from_entries
               ) -> EngineState | None:
        """The newest readable snapshot whose transaction is at most ``at_most``, its
        dictionary made by ``dictionary`` (:func:`snapshot_format.read`)."""
        for tx, path in reversed(self._snapshots(SUFFIX)):
            if tx > at_most:
                continue
            try:
                if isinstance(self.filesystem, pafs.LocalFileSystem):  # columns mapped
                    return snapshot_format.read(Path(path), dictionary)
                with self._downloaded(path) as local:
                    return snapshot_format.read(local, dictionary)
            except FileNotFoundError:  # another worker pruned it
                continue
            except (OSError, snapshot_format.SnapshotFormatError) as error:
                log.warning("snapshot %s unreadable, skipped: %s", path, error)
        for _, path in self._snapshots(LEGACY):
            log.warning("snapshot %s not read: a pickle (deltalog before its snapshot format), "
                        "and loading a pickle runs code; delete it once every worker is "
                        "upgraded", path)
        return None

    @contextlib.contextmanager
    def _downloaded(self, path: str) -> Iterator[Path]:
        """A remote snapshot copied to a local temporary file a piece at a time, so that it
        is read as a local one is — its columns and value entries mapped, never held on
        the heap.  The file goes when the read is done (what maps it keeps its pages)."""
        with tempfile.NamedTemporaryFile(prefix="deltalog-snapshot-", suffix=SUFFIX) as local, \
                self.filesystem.open_input_stream(path) as source:
            shutil.copyfileobj(source, local, DOWNLOAD_PIECE)
            local.flush()
            yield Path(local.name)

    def newest(self) -> int | None:
        """The transaction of the newest snapshot in the store (None: none yet)."""
        snapshots = self._snapshots(SUFFIX)
        return snapshots[-1][0] if snapshots else None

    def _prune(self) -> None:
        snapshots = self._snapshots(SUFFIX)
        if len(snapshots) <= KEEP:
            return
        oldest_kept = snapshots[-KEEP][0]
        for tx, path in snapshots[:-KEEP] + self._snapshots(TEMPORARY):
            if tx < oldest_kept:
                with contextlib.suppress(FileNotFoundError):
                    self.filesystem.delete_file(path)

    def _snapshots(self, suffix: str) -> list[tuple[int, str]]:
        """``(tx, path)`` of the files named ``snapshot-<tx>...<suffix>``, oldest first."""
        found = []
        for info in self._listing():
            name = info.base_name
            digits = name[len(PREFIX):len(PREFIX) + TX_DIGITS]
            if name.startswith(PREFIX) and name.endswith(suffix) and digits.isdigit():
                found.append((int(digits), info.path))
        return sorted(found)

    def _listing(self) -> list[pafs.FileInfo]:
        """The directory's entries.  A local listing reads each entry's details after its
        name, so a file another worker prunes in between fails the listing: list again (a
        few times at most; pruning keeps the directory small)."""
        selector = pafs.FileSelector(self.directory, allow_not_found=True)
        for _ in range(LISTING_ATTEMPTS - 1):
            try:
                return self.filesystem.get_file_info(selector)
            except FileNotFoundError:
                continue
        return self.filesystem.get_file_info(selector)

    def _path(self, name: str) -> str:
        return f"{self.directory}/{name}"


class Snapshots:
    """A worker's use of the store: the snapshot it starts from, and the ones it writes —
    every ``interval_s``, unless another worker sharing the store wrote a newer one since
    this worker last looked.  So a fleet sharing a store writes about one snapshot per
    interval (whoever's interval ends first; the others see it and wait one more), and a
    worker whose store nobody shares writes its own.  Two that look at the same moment both
    write: harmless, names are write-once and published whole."""

    def __init__(self, store: SnapshotStore, interval_s: float) -> None:
        self.store, self.interval_s = store, interval_s
        self._fresh = time.monotonic()  # when this worker last wrote or saw a new snapshot
        self._due = self._fresh + interval_s
        self._seen: int | None = None  # the newest snapshot this worker knows of

    def load(self, at_most: int, dictionary: snapshot_format.Dictionary = ValueIds.from_entries
             ) -> EngineState | None:
        """The newest readable snapshot at or below ``at_most`` (see :meth:`SnapshotStore.
        latest`)."""
        self._seen = self.store.newest()
        return self.store.latest(at_most, dictionary)

    def age_s(self) -> float:
        """Time since this worker wrote a snapshot or saw a newer one (or started)."""
        return time.monotonic() - self._fresh

    def save_if_due(self, position: int, state: Callable[[], EngineState]) -> bool:
        """Write the database at ``position`` if the interval has elapsed and the store has
        nothing newer from another worker; True when written.  A failed write is logged and
        tried again an interval later: snapshots only shorten recovery."""
        now = time.monotonic()
        if now < self._due:
            return False
        self._due = now + self.interval_s
        try:
            newest = self.store.newest()
            if newest is not None and newest > (-1 if self._seen is None else self._seen):
                self._seen, self._fresh = newest, now  # another worker wrote it
                return False
            if newest is not None and newest >= position:  # nothing to add
                return False
            if self.store.save(state()) is None:
                return False
        except (OSError, TypeError) as error:  # the store unreachable; a value it can't hold
            log.warning("snapshot at tx %d not written: %s", position, error)
            return False
        self._seen, self._fresh = position, time.monotonic()
        return True
