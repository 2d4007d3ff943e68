"""A state's dictionary read where it is: in the state's files, not copied.

A state under ``executor=spark`` holds its dictionary both ways (``docs/spark.md``, "The
dictionary in the state"): id → value in its values files
(:mod:`~workers.executors.spark.dictionary`, one per version that numbered values, folded by
compaction into a base) and value → id in their runs (:mod:`~workers.executors.spark.runs`).
:class:`StateDictionary` answers the :class:`~workers.arrangements.values.Numbering`
protocol from them, as :class:`~workers.arrangements.spilled.SpilledValueIds` answers from
files of its own:

- ``lookup``: binary search of each run (a local file mapped, its pages dropped after each
  operation on a column and each tick, :meth:`release`); an object's hash found is checked
  against its value;
- ``value``: an id's row found by the values files' row counts (read at opening from the
  files' footers), decoded;
- values numbered since the state last held them all (the writer's, a follower taking over
  writing) sit in memory, in the tier, and are written by the state's next version; once
  the files hold them all and the tier has ``memory_values`` or more, the tier is dropped
  (:meth:`reached`).

So the writer's driver keeps no dictionary of its own, and a follower opening a state reads
the files' footers and the pages its lookups touch, never the whole dictionary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from workers.arrangements.spilled import SPILL_VALUES, MappedFiles, TieredValueIds
from workers.arrangements.values import (
    INT_KIND,
    OBJECT_KIND,
    IdArray,
    ValueIds,
    int_key,
    object_key,
)
from workers.errors import ErrorCode, WorkersError
from workers.executors.spark.dictionary import decoded_rows
from workers.executors.spark.runs import Run, ensure_run, object_hash, read_run
from workers.executors.spark.state import Manifest, filesystem, keys_name


@dataclass(frozen=True, slots=True)
class _Files:
    """One version's dictionary files, opened: the runs, and the values files' pieces with
    the id of each one's first row (``starts``, one more at the end: the size)."""

    runs: tuple[Run, ...]
    pieces: tuple[pa.RecordBatch, ...]
    starts: npt.NDArray[np.int64]

    @property
    def size(self) -> int:
        return int(self.starts[-1])


class StateDictionary(TieredValueIds):
    """The dictionary of a state's version (shared or not), read from its files (see the
    module's docstring); :meth:`reached` moves it to a later version of the same state."""

    __slots__ = ("_files", "_location", "_spill")

    def __init__(self, manifest: Manifest, memory_values: int = SPILL_VALUES) -> None:
        super().__init__()
        self._location, self._spill = manifest.location, memory_values
        self._files = _Files((), (), np.zeros(1, np.int64))
        self.reached(manifest)

    def reached(self, manifest: Manifest) -> None:
        """Read the dictionary of ``manifest`` (a later version of the same state) from now
        on: its files opened (not read), the tier dropped once they hold it all and it has
        ``memory_values`` values or more."""
        stamp = manifest.stamp
        assert stamp is not None, "a state holding its dictionary is stamped"
        files = self._opened(stamp.values_files(manifest.epoch))
        if files.size != stamp.marks.values:
            raise WorkersError(f"the dictionary files of the Spark state at "
                               f"{self._location!r} hold {files.size} values, its manifest "
                               f"says {stamp.marks.values}", code=ErrorCode.SPARK)
        self._files = files
        if not self._tier.size or (files.size >= self.size and self._tier.size >= self._spill):
            self._base, self._tier = max(files.size, self.size), ValueIds()

    def entries(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64], list[Any]]:
        """The dictionary as plain data (a snapshot's), read from the files a piece at a
        time: the kinds and payloads as columns, the objects decoded (held, as
        :meth:`SpilledValueIds.entries` holds them)."""
        kinds, payloads = np.empty(self.size, np.int8), np.empty(self.size, np.int64)
        objects: list[Any] = []
        for piece, start in zip(self._files.pieces, self._files.starts.tolist(), strict=False):
            if start >= self._base:  # the tier's from here
                break
            piece = piece.slice(0, min(piece.num_rows, self._base - start))
            stop = start + piece.num_rows
            is_int = piece.column(0).is_valid().to_numpy(zero_copy_only=False)
            rows = np.flatnonzero(~is_int)
            kinds[start:stop] = np.where(is_int, INT_KIND, OBJECT_KIND)
            payloads[start:stop] = pc.fill_null(piece.column(0), 0).to_numpy()
            payloads[start + rows] = np.arange(len(objects), len(objects) + len(rows))
            objects += decoded_rows(piece.take(pa.array(rows)))
            self._maps.release()
        tier_kinds, tier_payloads, tier_objects = self._tier.entries()
        kinds[self._base:] = tier_kinds
        payloads[self._base:] = np.where(tier_kinds == INT_KIND, tier_payloads,
                                         tier_payloads + len(objects))
        return kinds, payloads, objects + list(tier_objects)

    def _opened(self, names: Sequence[str]) -> _Files:
        """The files ``names`` (in id order) and their runs, opened: a local file mapped."""
        fs, root = filesystem(self._location)
        maps = MappedFiles()  # the files of this version only: the others' maps go
        pieces: list[pa.RecordBatch] = []
        starts = [0]
        firsts = []  # each file's first id
        for name in names:
            firsts.append(starts[-1])
            path = f"{root}/{name}"
            if isinstance(fs, pafs.LocalFileSystem):
                data = pa.py_buffer(maps.array(path, np.uint8))
            else:
                with fs.open_input_file(path) as source:
                    data = source.read_buffer()
            reader = pa.ipc.open_file(pa.BufferReader(data))
            for i in range(reader.num_record_batches):
                pieces.append(reader.get_batch(i))
                starts.append(starts[-1] + pieces[-1].num_rows)
        for name, first in zip(names, firsts, strict=True):  # a state from before runs
            ensure_run(self._location, name, first, keys_name(name))
        runs = tuple(read_run(self._location, keys_name(name), maps) for name in names)
        self._maps = maps
        return _Files(runs, tuple(pieces), np.array(starts, np.int64))

    def _find_int(self, key: int) -> int | None:
        for keys, tagged in self._files.runs:
            i = int(keys.searchsorted(key))
            while i < len(keys) and keys[i] == key:
                if tagged[i] & 1 == INT_KIND:
                    return int(tagged[i] >> 1)
                i += 1
        return None

    def _find_object(self, x: Any) -> int | None:
        hashed = object_hash(x)
        if hashed is None:
            return None
        key = object_key(x)
        for keys, tagged in self._files.runs:
            lo, hi = keys.searchsorted(hashed, "left"), keys.searchsorted(hashed, "right")
            for entry in tagged[lo:hi].tolist():
                if entry & 1 == OBJECT_KIND and object_key(self.value(entry >> 1)) == key:
                    return entry >> 1  # type: ignore[no-any-return]
        return None

    def _search_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        """Sorted needles, each run searched once: the first entry of a key is an int's (or
        an object's of that hash: rare, looked at one by one)."""
        ids = np.full(len(xs), -1, np.int32)
        if not self._files.runs or not len(xs):
            return ids
        distinct, inverse = np.unique(xs, return_inverse=True)
        found = np.full(len(distinct), -1, np.int32)
        for keys, tagged in self._files.runs:
            if not len(keys):
                continue
            at = np.minimum(keys.searchsorted(distinct), len(keys) - 1)
            hit = keys[at] == distinct
            entries = tagged[at]
            ints = hit & (entries & 1 == INT_KIND)
            found[ints] = entries[ints] >> 1
            for i in np.flatnonzero(hit & ~ints).tolist():
                other = self._find_int(int(distinct[i]))
                found[i] = -1 if other is None else other
        self._maps.release()
        ids[:] = found[inverse.reshape(-1)]
        return ids

    def _search_values(self, xs: Sequence[Any]) -> IdArray:
        """The ints' ids in one search of each run, the others' by their hashes (sorted
        needles), each hash found checked against its value."""
        ints = np.array([int_key(x) is not None for x in xs], bool)
        ids = np.full(len(xs), -1, np.int32)
        if ints.any():
            ids[ints] = self._search_ints(np.array([x for x, one in zip(
                xs, ints.tolist(), strict=True) if one], np.int64))
        hashed = [(at, key) for at in np.flatnonzero(~ints).tolist()
                  if (key := object_hash(xs[at])) is not None]
        if not hashed or not self._files.runs:
            return ids
        positions = np.array([at for at, _ in hashed], np.int64)
        needles = np.array([key for _, key in hashed], np.int64)
        order = np.argsort(needles, kind="stable")
        positions, needles = positions[order], needles[order]
        asked, candidates = [], []  # (position in xs, id) of every object entry of a hash
        for keys, tagged in self._files.runs:
            lo, hi = keys.searchsorted(needles, "left"), keys.searchsorted(needles, "right")
            for at in np.flatnonzero(hi > lo).tolist():
                entries = tagged[lo[at]:hi[at]]
                entries = entries[entries & 1 == OBJECT_KIND] >> 1
                asked.append(np.full(len(entries), positions[at]))
                candidates.append(entries.astype(np.int64))
        if candidates:
            found = np.concatenate(candidates)
            for at, i, x in zip(np.concatenate(asked).tolist(), found.tolist(),
                                self._spilled_values(found).tolist(), strict=True):
                if object_key(x) == object_key(xs[at]) and not 0 <= ids[at] < i:
                    ids[at] = i  # the first numbered, were a value numbered twice
        self._maps.release()
        return ids

    def _spilled_value(self, i: int) -> Any:
        piece = int(self._files.starts.searchsorted(i, "right")) - 1
        row = i - int(self._files.starts[piece])
        return decoded_rows(self._files.pieces[piece].slice(row, 1))[0]

    def _spilled_values(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Decoded a piece of a values file at a time, only the rows asked."""
        out = np.empty(len(ids), object)
        piece_of = np.searchsorted(self._files.starts, ids, "right") - 1
        order = np.argsort(piece_of, kind="stable")
        bounds = np.flatnonzero(np.diff(piece_of[order])) + 1
        for group in np.split(order, bounds):
            if len(group):
                piece = int(piece_of[group[0]])
                rows = ids[group] - self._files.starts[piece]
                out[group] = decoded_rows(self._files.pieces[piece].take(pa.array(rows)))
        self._maps.release()
        return out

    def _spilled_objects(self, distinct: npt.NDArray[np.int32]) -> list[Any]:
        values = self._spilled_values(distinct.astype(np.int64)).tolist()
        return [x for x in values if int_key(x) is None]
