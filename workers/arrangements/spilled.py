"""A value dictionary that keeps its older entries in files.

:class:`TieredValueIds` is the shape: the values numbered lately in memory, the others in
files.  Under ``executor=spark`` the files are the state's
(:class:`~workers.executors.spark.state_dictionary.StateDictionary`); the private files of
:class:`SpilledValueIds` below, which the driver kept until then, now hold a snapshot's
dictionary on its way into the state (a restore), never whole in memory.

Under ``executor=spark`` the driver holds no datoms; a :class:`ValueIds` of every value ever
seen (~26 B a distinct value) was what was left of its growth with the database — 137 MB
at 10^7 power-law edges, 15 of the driver's 17 B a datom.  :class:`SpilledValueIds` numbers
exactly as :class:`ValueIds` does (0, 1, 2... in order of first sight: Spark's int32 id
columns and every spine stay as they are) and keeps in memory only the values numbered
since it last spilled, in a :class:`ValueIds` whose ids start at ``base`` (the *tier*).
When the tier holds ``spill_values`` values they are written out:

- to the **value log** (id → value), appended and never rewritten: per id its kind and
  payload (``kinds``, ``payload``: fixed width, so an id's entry is found by its number),
  and the objects (every value not an int64) pickled one after the other (``objects``,
  their ends in ``object_ends``);
- as **runs** (value → id): the spilled ints sorted with their ids, and the objects'
  hashes sorted with theirs.  Python's ``hash`` agrees with the dictionary's equality
  (:func:`~workers.arrangements.values.object_key`), and a hash found is checked against
  the value log, so colliding hashes cost a comparison, never a wrong id.  A new run is
  merged with the one before while that one is at most twice its size (a binary counter:
  O(log n) runs, each entry rewritten O(log n) times), a chunk at a time.

The files are mapped read-only: the pages a search touches are the file's, dropped from
the process (:meth:`release`) after each operation on a column and after each tick; the
operating system caches them as any file.  They are this process's own — a private
temporary directory, removed with the dictionary, never read by another process (so
``pickle`` is safe here, unlike in a snapshot, which a fleet shares) — and the hashes
(randomised per process for text) are only ever compared within it.
"""

from __future__ import annotations

import mmap
import os
import pickle
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import sorted_distinct
from workers.arrangements.values import (
    INT_KIND,
    MAX_IDS,
    OBJECT_KIND,
    IdArray,
    ValueIds,
    int_key,
    object_key,
)

SPILL_VALUES = 1 << 16  # values the tier holds before they are written out (~2 MB)
MERGE_ROWS = 1 << 20  # entries of each run read at once by a merge
_MEMO = 1 << 14  # spilled values (and ids) lately found, remembered for single lookups
_LOG = {"kinds": np.int8, "payload": np.int64, "objects": np.uint8, "object_ends": np.int64}


@dataclass(frozen=True, slots=True)
class _Run:
    """A sorted column of keys (int64: ints, or objects' hashes) and their ids beside it."""

    keys: str
    ids: str
    size: int


class MappedFiles:
    """Files mapped read-only as NumPy arrays, each mapped once while it does not change."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[mmap.mmap, npt.NDArray[Any]]] = {}

    def array(self, path: str, dtype: Any) -> npt.NDArray[Any]:
        found = self._open.get(path)
        if found is None:
            if os.path.getsize(path) == 0:  # an empty file cannot be mapped
                return np.empty(0, dtype)
            with open(path, "rb") as file:
                mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            found = self._open[path] = mapped, np.frombuffer(mapped, dtype)
        return found[1]

    def forget(self, path: str) -> None:
        """Map ``path`` anew when next read (it grew, or is gone)."""
        self._open.pop(path, None)

    def release(self) -> None:
        """Drop the mapped pages from the process (read again from the cache when used)."""
        for mapped, _ in self._open.values():
            mapped.madvise(mmap.MADV_DONTNEED)


class TieredValueIds(ValueIds):
    """:class:`ValueIds` numbering in memory (the *tier*: ids from ``_base`` on) above values
    kept elsewhere — in files the subclass searches (``_find_*``, ``_search_*``) and reads
    (``_spilled_*``).  Ids, lookups and values are exactly :class:`ValueIds`'s."""

    __slots__ = ("__weakref__", "_base", "_decoded", "_maps", "_memo", "_tier")

    def __init__(self) -> None:
        # The inherited columns are left unset: every public method is overridden
        # (a test checks), so none can answer from them by mistake.
        self._tier = ValueIds()
        self._base = 0  # the ids below are in the files
        self._maps = MappedFiles()
        self._memo: dict[Any, int] = {}  # key of a spilled value -> its id
        self._decoded: dict[int, Any] = {}  # spilled id -> its value

    @property  # ValueIds's is a slot its own numbering keeps
    def size(self) -> int:  # type: ignore[override]
        return self._base + self._tier.size

    @property
    def resident(self) -> int:
        """The values numbered since the last write out: the others are in the files."""
        return self._tier.size

    @property
    def nbytes(self) -> int:
        """The tier's bytes in memory (the files' pages are not the process's)."""
        return self._tier.nbytes

    def lookup(self, x: Any) -> int | None:
        found = self._tier.lookup(x)
        if found is not None:
            return found + self._base
        key = int_key(x)
        memo_key = object_key(x) if key is None else key
        found = self._memo.get(memo_key)
        if found is None:
            found = self._find_int(key) if key is not None else self._find_object(x)
            if found is not None:
                if len(self._memo) >= _MEMO:
                    self._memo.clear()
                self._memo[memo_key] = found
        return found

    def intern(self, x: Any) -> int:
        found = self.lookup(x)
        if found is None:
            self._check_room(1)
            found = self._tier.intern(x) + self._base
            self._spill_when_full()
        return found

    def intern_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        return self._completed(self._search_ints(xs),
                               lambda rest: self._tier.intern_ints(xs[rest]), interning=True)

    def lookup_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        return self._completed(self._search_ints(xs),
                               lambda rest: self._tier.lookup_ints(xs[rest]), interning=False)

    def intern_values(self, xs: Sequence[Any]) -> IdArray:
        return self._completed(self._search_values(xs), lambda rest: self._tier.intern_values(
            [xs[i] for i in rest.tolist()]), interning=True)

    def lookup_values(self, xs: Sequence[Any]) -> IdArray:
        return self._completed(self._search_values(xs), lambda rest: self._tier.lookup_values(
            [xs[i] for i in rest.tolist()]), interning=False)

    def value(self, i: int) -> Any:
        if i >= self._base:
            return self._tier.value(i - self._base)
        found = self._decoded.get(i)
        if found is None:
            found = self._spilled_value(i)
            if len(self._decoded) >= _MEMO:
                self._decoded.clear()
            self._decoded[i] = found
        return found

    def values(self, ids: npt.NDArray[np.integer[Any]]) -> list[Any]:
        column = np.asarray(ids, np.int64)
        spilled = column < self._base
        if not spilled.any():
            return self._tier.values(column - self._base)
        out = np.empty(len(column), object)
        if not spilled.all():
            out[~spilled] = self._tier.values(column[~spilled] - self._base)
        out[spilled] = self._spilled_values(column[spilled])
        return out.tolist()  # type: ignore[no-any-return]

    def objects(self, ids: IdArray) -> list[Any]:
        distinct = sorted_distinct(ids)
        found = self._spilled_objects(distinct[distinct < self._base])
        self._maps.release()
        return found + self._tier.objects(distinct[distinct >= self._base] - self._base)

    def copy(self) -> ValueIds:
        """An independent copy, in memory (a snapshot's)."""
        return ValueIds.from_entries(*self.entries())

    def release(self) -> None:
        """Drop the files' pages read so far from the process (a tick is over)."""
        self._maps.release()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("a spilled dictionary is the driver's own: its files are not shipped")

    def _completed(self, ids: IdArray, of_tier: Callable[[npt.NDArray[np.intp]], IdArray],
                   interning: bool) -> IdArray:
        """``ids`` found in the files (-1 elsewhere) completed by the tier: ``of_tier(rest)``
        gives its ids (-1: none) of the values at the positions ``rest`` — numbering new
        ones when ``interning``, and writing the tier out if that filled it."""
        rest = np.flatnonzero(ids < 0)
        if len(rest):
            if interning:
                self._check_room(len(rest))
            local = of_tier(rest)
            ids[rest] = np.where(local >= 0, local + self._base, -1)
            if interning:
                self._spill_when_full()
        return ids

    def _check_room(self, new: int) -> None:
        if self.size + new > MAX_IDS:
            raise OverflowError(f"more than {MAX_IDS} distinct values: ids are int32")

    def _find_int(self, key: int) -> int | None:
        """The id of the int ``key`` in the files (None: not there)."""
        raise NotImplementedError

    def _find_object(self, x: Any) -> int | None:
        """The id of the value ``x`` (not an int64) in the files (None: not there)."""
        raise NotImplementedError

    def _search_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        """The ids in the files of a column of ints, -1 for the others."""
        raise NotImplementedError

    def _search_values(self, xs: Sequence[Any]) -> IdArray:
        """The ids in the files of any values, -1 for the others."""
        raise NotImplementedError

    def _spilled_value(self, i: int) -> Any:
        """The value of the id ``i`` (below ``_base``)."""
        raise NotImplementedError

    def _spilled_values(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """The values of ids below ``_base``, as an object column."""
        raise NotImplementedError

    def _spilled_objects(self, distinct: npt.NDArray[np.int32]) -> list[Any]:
        """The values of the distinct ids below ``_base`` that are not int64s."""
        raise NotImplementedError

    def _spill_when_full(self) -> None:
        """Called after the tier numbered values."""


class SpilledValueIds(TieredValueIds):
    """:class:`ValueIds` with every value but the latest ``spill_values`` in files of its
    own."""

    __slots__ = ("_directory", "_hashes", "_ints", "_object_bytes", "_runs_written", "_spill",
                 "_spilled_objects_count")

    def __init__(self, spill_values: int = SPILL_VALUES) -> None:
        super().__init__()
        self._directory = tempfile.mkdtemp(prefix="deltalog-values-")
        weakref.finalize(self, shutil.rmtree, self._directory, True)
        for name in _LOG:
            open(self._path(name), "wb").close()
        self._spill = spill_values
        self._spilled_objects_count = self._object_bytes = 0
        self._ints: list[_Run] = []
        self._runs_written = 0
        self._hashes: list[_Run] = []

    @classmethod
    def from_entries(cls, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
                     objects: Sequence[Any], spill_values: int = SPILL_VALUES
                     ) -> SpilledValueIds:
        """The dictionary of :meth:`ValueIds.entries` (a snapshot's, its columns perhaps
        mapped from its file) written to the files ``MERGE_ROWS`` ids at a time — never
        held whole in memory, as :meth:`ValueIds.from_entries` holds it — with the same
        checks (ValueError: a damaged or forged snapshot)."""
        if len(payloads) != len(kinds) or len(kinds) > MAX_IDS:
            raise ValueError("the value entries do not describe a dictionary")
        spilled = cls(spill_values)
        first = 0  # the piece's first object
        for start in range(0, len(kinds), MERGE_ROWS):
            piece_kinds = np.asarray(kinds[start:start + MERGE_ROWS])
            piece_payloads = np.asarray(payloads[start:start + MERGE_ROWS], np.int64)
            is_int = piece_kinds == INT_KIND
            count = len(is_int) - int(is_int.sum())
            if not np.all(is_int | (piece_kinds == OBJECT_KIND)) or not np.array_equal(
                    piece_payloads[~is_int], np.arange(first, first + count)):
                raise ValueError("the value entries do not describe a dictionary")
            piece_objects = objects[first:first + count]
            if any(int_key(x) is not None for x in piece_objects):
                raise ValueError("a value appears twice in the dictionary")
            spilled._write(piece_kinds, np.where(is_int, piece_payloads, piece_payloads - first),
                           piece_objects)
            first += count
        if first != len(objects):
            raise ValueError("the value entries do not describe a dictionary")
        spilled._check_distinct()
        return spilled

    def entries(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64], list[Any]]:
        """The value log's columns mapped from its files, once the tier is written out (a
        snapshot's: read as it is written, not copied), and the objects unpickled.  Their
        pages go with the next :meth:`release`."""
        if self._tier.size:
            self._write_out()
        return (self._log("kinds"), self._log("payload"),
                self._unpickled(range(self._spilled_objects_count)))

    def _find_int(self, key: int) -> int | None:
        for run in self._ints:
            keys = self._maps.array(run.keys, np.int64)
            i = int(keys.searchsorted(key))
            if i < run.size and keys[i] == key:
                return int(self._maps.array(run.ids, np.int32)[i])
        return None

    def _spilled_value(self, i: int) -> Any:
        payload = int(self._log("payload")[i])
        return payload if self._log("kinds")[i] == INT_KIND else self._unpickled([payload])[0]

    def _spilled_objects(self, distinct: npt.NDArray[np.int32]) -> list[Any]:
        objects = distinct[self._log("kinds")[distinct] == OBJECT_KIND]
        return self._unpickled(self._log("payload")[objects].tolist())

    def _find_object(self, x: Any) -> int | None:
        key = object_key(x)
        hashed = hash(key)
        for run in self._hashes:
            keys = self._maps.array(run.keys, np.int64)
            lo, hi = keys.searchsorted(hashed, "left"), keys.searchsorted(hashed, "right")
            for i in self._maps.array(run.ids, np.int32)[lo:hi].tolist():
                if object_key(self.value(i)) == key:
                    return i  # type: ignore[no-any-return]
        return None

    def _search_ints(self, xs: npt.NDArray[np.int64]) -> IdArray:
        """The spilled ids of a column of ints, -1 for the others (sorted needles: each
        run's pages are read in order)."""
        if not self._ints or not len(xs):
            return np.full(len(xs), -1, np.int32)
        distinct, inverse = np.unique(xs, return_inverse=True)
        found = np.full(len(distinct), -1, np.int32)
        for run in self._ints:
            keys = self._maps.array(run.keys, np.int64)
            at = np.minimum(keys.searchsorted(distinct), run.size - 1)
            hit = np.flatnonzero(keys[at] == distinct)
            found[hit] = self._maps.array(run.ids, np.int32)[at[hit]]
        self._maps.release()
        return found[inverse.reshape(-1)]

    def _search_values(self, xs: Sequence[Any]) -> IdArray:
        """The spilled ids of any values, -1 for the others: the ints' in one search of the
        int runs, the objects' hashes in one search of each hash run, only the hashes found
        checked one by one against the log."""
        keys = [object_key(x) if int_key(x) is None else None for x in xs]
        ints = np.array([k is None for k in keys], bool)
        ids = np.full(len(xs), -1, np.int32)
        if ints.any():
            ids[ints] = self._search_ints(np.array([x for x, k in zip(xs, keys, strict=True)
                                                    if k is None], np.int64))
        objects = np.flatnonzero(~ints)
        hashes = np.fromiter((hash(keys[i]) for i in objects.tolist()), np.int64, len(objects))
        order = np.argsort(hashes, kind="stable")  # sorted needles: pages read in order
        objects, hashes = objects[order], hashes[order]
        asked, candidates = [], []  # (position in xs, spilled id) of every hash found
        for run in self._hashes:
            run_keys = self._maps.array(run.keys, np.int64)
            lo, hi = run_keys.searchsorted(hashes, "left"), run_keys.searchsorted(hashes, "right")
            run_ids = self._maps.array(run.ids, np.int32)
            one = np.flatnonzero(hi - lo == 1)
            asked.append(objects[one])
            candidates.append(run_ids[lo[one]])
            for at in np.flatnonzero(hi - lo > 1).tolist():  # hashes that collide: rare
                found = run_ids[lo[at]:hi[at]]
                asked.append(np.full(len(found), objects[at]))
                candidates.append(found)
        if candidates:
            positions, found = np.concatenate(asked), np.concatenate(candidates)
            for at, i, x in zip(positions.tolist(), found.tolist(),
                                self._spilled_values(found.astype(np.int64)), strict=True):
                if object_key(x) == keys[at]:
                    ids[at] = i
        self._maps.release()
        return ids

    def _spilled_values(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """The values of spilled ids, as an object column."""
        out = self._log("payload")[ids].astype(object)
        objects = np.flatnonzero(self._log("kinds")[ids] == OBJECT_KIND)
        out[objects] = self._unpickled(out[objects].tolist())
        self._maps.release()
        return out

    def _unpickled(self, indexes: Iterable[int]) -> list[Any]:
        """The spilled objects numbered ``indexes``, unpickled from the log."""
        ends, data = self._log("object_ends"), self._log("objects")
        return [pickle.loads(data[int(ends[i - 1]) if i else 0:int(ends[i])].tobytes())
                for i in indexes]

    def _log(self, name: str) -> npt.NDArray[Any]:
        return self._maps.array(self._path(name), _LOG[name])

    def _path(self, name: str) -> str:
        return os.path.join(self._directory, name)

    def _spill_when_full(self) -> None:
        if self._tier.size >= self._spill:
            self._write_out()

    def _write_out(self) -> None:
        """The tier's values appended to the log and written as runs; a fresh tier."""
        self._write(*self._tier.entries())
        self._tier = ValueIds()

    def _write(self, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
               objects: Sequence[Any]) -> None:
        """Entries numbered from ``_base`` (``payloads``: ints, or indexes in ``objects``)
        appended to the log and written as runs."""
        is_int = kinds == INT_KIND
        ids = np.arange(self._base, self._base + len(kinds), dtype=np.int32)
        blobs = [pickle.dumps(x, pickle.HIGHEST_PROTOCOL) for x in objects]
        ends = self._object_bytes + np.cumsum([len(b) for b in blobs], dtype=np.int64)
        for name, data in (("kinds", kinds), ("payload", np.where(
                is_int, payloads, payloads + self._spilled_objects_count)), ("object_ends", ends)):
            _append(self._path(name), np.ascontiguousarray(data, _LOG[name]).tobytes())
            self._maps.forget(self._path(name))
        _append(self._path("objects"), b"".join(blobs))
        self._maps.forget(self._path("objects"))
        hashes = np.fromiter((hash(object_key(x)) for x in objects), np.int64, len(objects))
        self._ints = self._pushed(self._ints, payloads[is_int], ids[is_int])
        self._hashes = self._pushed(self._hashes, hashes, ids[~is_int])
        self._base += len(kinds)
        self._spilled_objects_count += len(objects)
        self._object_bytes = int(ends[-1]) if len(ends) else self._object_bytes

    def _check_distinct(self) -> None:
        """ValueError when a value has two ids: the runs merged into one of ints and one of
        hashes, and their equal neighbours looked at (objects of one hash compared)."""
        for runs in (self._ints, self._hashes):
            while len(runs) >= 2:
                runs[-2:] = [self._merged(runs[-2], runs[-1])]
        colliding: list[int] = []  # ids of objects whose hash another has
        for run, objects in [(run, False) for run in self._ints] + [
                (run, True) for run in self._hashes]:
            keys, ids = self._maps.array(run.keys, np.int64), self._maps.array(run.ids, np.int32)
            for start in range(0, run.size - 1, MERGE_ROWS):
                piece = keys[start:start + MERGE_ROWS + 1]
                equal = np.flatnonzero(piece[1:] == piece[:-1]) + start
                if len(equal) and not objects:
                    raise ValueError("a value appears twice in the dictionary")
                colliding += ids[np.concatenate([equal, equal + 1])].tolist()
        found = self._spilled_values(np.unique(np.array(colliding, np.int64)))
        if len({object_key(x) for x in found}) != len(found):
            raise ValueError("a value appears twice in the dictionary")
        self._maps.release()

    def _pushed(self, runs: list[_Run], keys: npt.NDArray[np.int64],
                ids: IdArray) -> list[_Run]:
        """``runs`` and a new one of ``keys`` (with their ``ids``), merged with the runs
        before it while they are at most twice its size."""
        if not len(keys):
            return runs
        order = np.argsort(keys, kind="stable")
        runs = [*runs, self._run(keys[order], ids[order])]
        while len(runs) >= 2 and runs[-2].size <= 2 * runs[-1].size:
            runs[-2:] = [self._merged(runs[-2], runs[-1])]
        return runs

    def _run(self, keys: npt.NDArray[np.int64], ids: IdArray) -> _Run:
        run = self._new_run(len(keys))
        keys.astype(np.int64).tofile(run.keys)
        ids.astype(np.int32).tofile(run.ids)
        return run

    def _new_run(self, size: int) -> _Run:
        self._runs_written += 1
        stem = self._path(f"run-{self._runs_written}")
        return _Run(stem + ".keys", stem + ".ids", size)

    def _merged(self, older: _Run, newer: _Run) -> _Run:
        """One run of two, written ``MERGE_ROWS`` entries of each at most at a time."""
        merged = self._new_run(older.size + newer.size)
        runs = [(self._maps.array(r.keys, np.int64), self._maps.array(r.ids, np.int32))
                for r in (older, newer)]
        at = [0, 0]
        with open(merged.keys, "wb") as keys_file, open(merged.ids, "wb") as ids_file:
            while at[0] < older.size or at[1] < newer.size:
                ends = [min(start + MERGE_ROWS, len(keys)) for start, (keys, _) in zip(
                    at, runs, strict=True)]
                # Up to the smaller last key of a piece that stops short of its run's end:
                # every entry at most that key, of either run, is read by now.
                short = [keys[end - 1] for end, (keys, _) in zip(ends, runs, strict=True)
                         if end < len(keys)]
                if short:
                    ends = [start + int(keys[start:end].searchsorted(min(short), "right"))
                            for start, end, (keys, _) in zip(at, ends, runs, strict=True)]
                keys = np.concatenate([k[s:e] for s, e, (k, _) in zip(at, ends, runs,
                                                                     strict=True)])
                ids = np.concatenate([i[s:e] for s, e, (_, i) in zip(at, ends, runs,
                                                                    strict=True)])
                order = np.argsort(keys, kind="stable")
                keys_file.write(keys[order].tobytes())
                ids_file.write(ids[order].tobytes())
                at = ends
        for run in (older, newer):
            for path in (run.keys, run.ids):
                self._maps.forget(path)
                os.remove(path)
        return merged


def _append(path: str, data: bytes) -> None:
    with open(path, "ab") as file:
        file.write(data)

