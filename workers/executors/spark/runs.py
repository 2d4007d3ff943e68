"""A shared state's dictionary the other way round, value → id: sorted runs in its files.

Beside each values file of a shared state (:mod:`~workers.executors.spark.dictionary`: id →
value) is its **run** (:func:`~workers.executors.spark.state.keys_name`): the keys of its
values sorted, each with its id, so that any process opening the state finds a value's id by
binary search, without reading the dictionary. A key is stable across processes (Python's
``hash`` is not: it is randomised per process for text):

- an int64 is its own key;
- any other value, the first 8 bytes of BLAKE2b of its codec encoding
  (:func:`~workers.db.codec.encode_value`, what the values files hold), encoded as the
  dictionary's equality has it (:func:`~workers.arrangements.values.object_key`): ``-0.0``
  as ``0.0``, an aware instant in UTC, vectors of any type alike, a set's members sorted;
  ``1.0``, ``True`` and ``"1"`` differ by their tags.

Each entry's id is tagged with its kind (``id << 1 | kind``), so an int never answers for
an object whose hash it equals; an object's hash found is checked against its value (a
collision costs a comparison, never a wrong id).  A value of a kind no values file holds
has no key: it is in no state.

A run file is ``n`` keys (int64, sorted) then their ``n`` tagged ids (uint32), little
endian; ``n`` is its size over 12.  Runs are written once, as every tick file (created only
if absent: ``StateStore._write_once``), and compaction folds them with the dictionary's
base into one, ``MERGE_ROWS`` entries of each at a time (:func:`fold_runs`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from edn_format.immutable_list import ImmutableList

from workers.arrangements.spilled import MappedFiles
from workers.arrangements.values import INT_KIND, OBJECT_KIND, int_key
from workers.db.codec import DECODE, encode_value
from workers.executors.spark.publish import link_if_absent
from workers.executors.spark.state import filesystem

MERGE_ROWS = 1 << 20  # entries of each run read at once by a fold
ENTRY_BYTES = 8 + 4  # a key and a tagged id
Run = tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]  # keys, tagged ids


def object_hash(x: Any) -> int | None:
    """The key of a value that is not an int64 (None: no values file holds it)."""
    try:
        text = json.dumps(_canonical(x), ensure_ascii=False)
    except TypeError:
        return None
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little", signed=True)


def _canonical(x: Any) -> Any:
    """``x`` encoded so that values the dictionary finds equal
    (:func:`~workers.zset.row.typed`) encode alike: -0.0 as 0.0, an instant in UTC, a
    decimal normalised, vectors of any type as one, a set's members and a map's entries
    sorted by their encodings."""
    kind = type(x)
    if kind is int:
        return ["i", str(x)]
    if kind is float:
        return ["d", repr(x + 0.0)]  # -0.0 + 0.0 is 0.0
    if isinstance(x, datetime.datetime) and x.utcoffset() is not None:
        return ["t", x.astimezone(datetime.UTC).isoformat()]
    if isinstance(x, Decimal):
        return ["m", str(x.normalize())]
    if isinstance(x, Mapping):
        return ["M", sorted(([_canonical(k), _canonical(v)] for k, v in x.items()), key=json.dumps)]
    if isinstance(x, tuple | list | ImmutableList):
        return ["V", [_canonical(i) for i in x]]
    if isinstance(x, frozenset | set):
        return ["F", sorted((_canonical(i) for i in x), key=json.dumps)]
    tag, text = encode_value(x)
    return json.loads(text) if tag == "e" else [tag, text]


def value_key(x: Any) -> tuple[int, int] | None:
    """``(key, kind)`` of a value (None: no values file holds it)."""
    found = int_key(x)
    if found is not None:
        return found, INT_KIND
    hashed = object_hash(x)
    return None if hashed is None else (hashed, OBJECT_KIND)


def batch_run(batch: pa.RecordBatch, first: int) -> Run:
    """The run of one piece of a values file whose first row is the id ``first``."""
    payload = batch.column(0)
    is_int = payload.is_valid().to_numpy(zero_copy_only=False)
    keys = pc.fill_null(payload, 0).to_numpy().astype(np.int64)
    objects = np.flatnonzero(~is_int)
    if len(objects):
        chosen = pa.array(objects)
        tags, texts = (batch.column(i).take(chosen).to_pylist() for i in (1, 2))
        keys[objects] = [object_hash(DECODE[tag](text))
                         for tag, text in zip(tags, texts, strict=True)]
    tagged = (np.arange(first, first + len(keys), dtype=np.uint32) << 1) | (~is_int).astype(
        np.uint32)
    order = np.argsort(keys, kind="stable")
    return keys[order], tagged[order]


def write_run(location: str, values_name: str, first: int, name: str) -> None:
    """Write the run of the values file ``values_name`` (ids from ``first``) as ``name``: its
    pieces sorted apart into files aside, folded into one."""
    fs, root = filesystem(location)
    with fs.open_input_file(f"{root}/{values_name}") as source:
        reader = pa.ipc.open_file(source)
        if reader.num_record_batches <= 1:
            batch = reader.get_batch(0) if reader.num_record_batches else pa.record_batch(
                [pa.array([], pa.int64())], names=["payload"])
            _write_one(fs, f"{root}/{name}", batch_run(batch, first))
            return
        asides = []
        try:
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                asides.append(f".aside-{uuid.uuid4().hex[:8]}-{i}-{name}")
                _write_one(fs, f"{root}/{asides[-1]}", batch_run(batch, first))
                first += batch.num_rows
            fold_runs(location, asides, name)
        finally:
            for aside in asides:
                with contextlib.suppress(FileNotFoundError):
                    fs.delete_file(f"{root}/{aside}")


def ensure_run(location: str, values_name: str, first: int, name: str) -> None:
    """The run ``name`` of the values file ``values_name`` (ids from ``first``), written if
    the state has none: a state written before runs were gets them when first opened.  A
    run is derived from its values file alone, so any process opening the state may write
    it — aside, then given its name only if no file has it (another opener's, the same
    bytes) — and a reader never sees one half written."""
    fs, root = filesystem(location)
    if fs.get_file_info(f"{root}/{name}").type != pafs.FileType.NotFound:
        return
    aside = f".aside-{uuid.uuid4().hex[:8]}-{name}"
    try:
        write_run(location, values_name, first, aside)
        link_if_absent(fs, f"{root}/{aside}", f"{root}/{name}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            fs.delete_file(f"{root}/{aside}")


def fold_runs(location: str, names: Sequence[str], name: str) -> None:
    """Merge the runs ``names`` into the one run ``name``, a piece of each at a time."""
    fs, root = filesystem(location)
    maps = MappedFiles()
    runs = [read_run(location, each, maps) for each in names]
    _write(fs, f"{root}/{name}", lambda: _merged(runs, maps))


def read_run(location: str, name: str, maps: MappedFiles) -> Run:
    """A run's columns: a local file's mapped by ``maps``, a remote one's read whole."""
    fs, root = filesystem(location)
    path = f"{root}/{name}"
    if isinstance(fs, pafs.LocalFileSystem):
        data = maps.array(path, np.uint8)
    else:
        with fs.open_input_file(path) as source:
            data = np.frombuffer(source.read(), np.uint8)
    n = len(data) // ENTRY_BYTES
    return data[:8 * n].view("<i8"), data[8 * n:ENTRY_BYTES * n].view("<u4")


def _write(fs: pafs.FileSystem, path: str, pieces: Callable[[], Iterator[Run]]) -> None:
    """A run of the sorted ``pieces()`` (in order): their keys, then their ids (the pieces
    made twice: a fold holds one piece at a time, never the run)."""
    with fs.open_output_stream(path) as sink:
        for column in (0, 1):
            for piece in pieces():
                sink.write(np.ascontiguousarray(piece[column]).tobytes())


def _write_one(fs: pafs.FileSystem, path: str, run: Run) -> None:
    _write(fs, path, lambda: iter([run]))


def _merged(runs: list[Run], maps: MappedFiles) -> Iterator[Run]:
    """The entries of sorted ``runs`` in key order, ``MERGE_ROWS`` of each at most at once."""
    at = [0] * len(runs)
    while any(start < len(keys) for start, (keys, _) in zip(at, runs, strict=True)):
        ends = [min(start + MERGE_ROWS, len(keys)) for start, (keys, _) in zip(
            at, runs, strict=True)]
        # Up to the smallest last key of a piece that stops short of its run's end: every
        # entry at most that key, of any run, is read by now.
        short = [keys[end - 1] for end, (keys, _) in zip(ends, runs, strict=True)
                 if end < len(keys)]
        if short:
            bound = min(short)
            ends = [start + int(keys[start:end].searchsorted(bound, "right"))
                    for start, end, (keys, _) in zip(at, ends, runs, strict=True)]
        keys = np.concatenate([k[s:e] for s, e, (k, _) in zip(at, ends, runs, strict=True)])
        tagged = np.concatenate([t[s:e] for s, e, (_, t) in zip(at, ends, runs, strict=True)])
        order = np.argsort(keys, kind="stable")
        maps.release()
        yield keys[order], tagged[order]
        at = ends
