"""The database's datoms where Spark's tasks read them: immutable files under a location.

Design (``docs/spark.md``, "The state location"):

- the state is a **compacted base** plus **one Z-set batch per tick**, each an Arrow IPC file
  of id columns ``e, a, v`` (int32) and ``w`` (int64), written once and never changed;
- a **manifest** names the files of one version, published as a new file each time, created
  only if absent (:mod:`~workers.executors.spark.publish`: of two writers, one publishes);
  a step ships the manifest it read to its tasks, so a task opens exactly that version
  whatever happens to the location meanwhile;
- :meth:`StateStore.append` writes the tick's effective delta as a new batch (the only write
  per tick — never a rewrite);
- compaction, in a background thread, sums the files of one version (equal datoms added,
  zero weights dropped: the Z-set is unchanged): the batches into one **folded batch** when
  they are many but hold fewer datoms than the base, else the base and the batches into a
  new base (so a base is rewritten when as many datoms came as it holds: each datom is
  rewritten O(log n) times); the manifest then swaps to the result plus the batches
  appended since.  Files the swap left behind are deleted by the next append, on the
  driver's thread: a step runs between two appends, so no running step still reads them;
- a large base is **indexed** (:func:`write_index`): built once into the spine's four
  orders, in a file every task maps, instead of sorted by every Python worker that opens
  it;
- a base is one file or several **buckets** (datoms by ``e mod buckets``, each sorted and
  summed apart): the :class:`Compactor` decides.  :func:`compact_here` sums in this process
  (tests, and the store alone); the Spark executor's compactor is a Spark job whose task per
  bucket reads the parts and writes its bucket, so the driver never holds the database.

The location is a local directory (the default: a temporary one per engine) or any URL
``pyarrow.fs`` opens (``s3://``, ``gs://``, ``hdfs://``...): on a cluster, one every executor
reaches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import struct
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs

from workers.arrangements.batch import (
    SUMMED_ROWS,
    Ids,
    set_weights,
    sort_order,
    sorted_sum,
    summed_by_entity,
)
from workers.arrangements.datom_batch import DatomBatch
from workers.arrangements.delta import DatomColumns
from workers.db.codec import SchemaData
from workers.errors import ErrorCode, WorkersError
from workers.executors.spark.publish import link_if_absent, publish, serials

# Compact when the batches since the base hold this many datoms, or at least as many as the
# base (so a compaction's cost is amortised over as many appended datoms as it rewrites) ...
COMPACT_DATOMS = 50_000
# ... or when there are this many batches (each is one file a catching-up task opens).
COMPACT_BATCHES = 100
# A base of this many datoms or more is indexed: built into its four orders once, by the
# compaction, in a file every task maps, instead of sorted by each Python worker that opens
# it (0.65 s at 10^7 datoms) into a copy on its own heap.
INDEX_DATOMS = 1_000_000
# An idle owner rewrites the base when the batches hold this share of it or more (the
# spine's idle merge's share, ``SpineArrangement.compact_idle``).
IDLE_SHARE = 64
INDEX_ALIGN = 64
INDEX_HEADER = struct.Struct("<Q")  # the JSON header's length
_NO_COLUMNS: tuple[Ids, Ids, Ids] = (np.zeros(0, np.int32),) * 3
SCHEMA = pa.schema([("e", pa.int32()), ("a", pa.int32()), ("v", pa.int32()), ("w", pa.int64())])
SET_SCHEMA = pa.schema(list(SCHEMA)[:3])  # a file of a set: no weights


@dataclass(frozen=True, slots=True)
class Part:
    """One file of the state: the datoms' change up to ``version`` (a base: from nothing; a
    batch: from ``since - 1``), with its number of rows.  A tick's batch is one version
    (``since == version``); a folded batch sums several (:meth:`StateStore._compact`)."""

    path: str
    version: int
    rows: int
    since: int = -1  # the first version a batch holds (-1: ``version``, or a base)

    @property
    def first(self) -> int:
        return self.version if self.since < 0 else self.since


def batch_name(epoch: str, version: int) -> str:
    """The file of the batch of one tick, ``version`` of the state of ``epoch``."""
    return f"batch-{epoch}-{version}.arrow"


def values_name(epoch: str, version: int) -> str:
    """The file of the values numbered by ``version`` of a shared state of ``epoch``."""
    return f"values-{epoch}-{version}.arrow"


def keys_name(values_name: str) -> str:
    """The run (value → id: :mod:`~workers.executors.spark.runs`) of the values file
    ``values_name``."""
    return values_name.removesuffix(".arrow") + ".keys"


class ValueFiles(Protocol):
    """How a shared state's writer writes its dictionary (:mod:`dictionary`)."""

    def write(self, location: str, name: str, start: int, stop: int) -> None:
        """Write the values of the ids ``start .. stop - 1`` as the file ``name``."""

    def fold(self, location: str, names: Sequence[str], name: str) -> None:
        """Write the files ``names``, one after the other, as the one file ``name``."""

    def write_keys(self, location: str, values: str, first: int, name: str) -> None:
        """Write the run of the values file ``values`` (ids from ``first``) as ``name``."""

    def fold_keys(self, location: str, names: Sequence[str], name: str) -> None:
        """Merge the runs ``names`` into the one run ``name``."""


@dataclass(frozen=True, slots=True)
class Marks:
    """What a writer stamps a version of a shared state with: its ``position`` (its last
    transaction's number: a log offset), the database's size and schema, its dictionary's
    size (``values`` ids), the transactions refused after the dead letters it last
    committed (offset, code, reason: a writer taking over writes their dead letters), and
    whether the version ends a tick (a tick stepped in pieces appends a version per piece:
    the state's manifest shows the last piece's only)."""

    position: int
    datoms: int
    schema: SchemaData
    values: int
    refused: tuple[tuple[int, str, str], ...] = ()
    complete: bool = True


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a version of a shared state says beyond its datoms, for the engines following it
    (:mod:`~workers.executors.spark.shared`): its writer's ``marks``, and where its
    dictionary is — the ``dictionary`` file holds the values numbered up to
    ``dictionary_version``, each of ``value_versions`` a file of those it numbered
    (:mod:`~workers.executors.spark.dictionary`); beside each values file, its run
    (:func:`keys_name`: value → id, :mod:`~workers.executors.spark.runs`)."""

    marks: Marks
    dictionary: str
    dictionary_version: int
    value_versions: tuple[int, ...] = ()
    shared: bool = True  # False: the state holds its writer's dictionary, followed by none

    def values_files(self, epoch: str) -> list[str]:
        """The dictionary's values files (id → value), in id order."""
        return [self.dictionary, *(values_name(epoch, v) for v in self.value_versions)]

    def files(self, epoch: str) -> list[str]:
        """The values files and their runs (value → id)."""
        values = self.values_files(epoch)
        return values + [keys_name(name) for name in values]


@dataclass(frozen=True, slots=True)
class Manifest:
    """One version of the state: the ``base``'s buckets (all of one version) plus
    ``batches`` (versions ``base_version + 1 .. version``, in order; a folded batch's
    buckets are several parts of one version).  ``epoch`` changes when the state is replaced
    (a restored snapshot): a reader's cache of another epoch is stale.  ``serial``: the number
    of the publication that holds it (:mod:`~workers.executors.spark.publish`; -1: not
    published yet)."""

    location: str
    epoch: str
    version: int
    base: tuple[Part, ...]
    batches: tuple[Part, ...]
    index: str | None = None  # the base built into its four orders (None: not built)
    stamp: Stamp | None = None  # a shared state's (None: a state only its writer reads)
    serial: int = -1

    def to_json(self) -> str:
        def parts(ps: tuple[Part, ...]) -> Any:
            return [[p.path, p.version, p.rows, p.since] for p in ps]
        stamp = None if self.stamp is None else dataclasses.asdict(self.stamp)
        return json.dumps({"epoch": self.epoch, "version": self.version,
                           "base": parts(self.base), "batches": parts(self.batches),
                           "index": self.index, "stamp": stamp, "serial": self.serial})

    @staticmethod
    def from_json(location: str, text: str) -> Manifest:
        data = json.loads(text)
        return Manifest(location, data["epoch"], data["version"],
                        tuple(Part(*b) for b in data["base"]),
                        tuple(Part(*b) for b in data["batches"]), data.get("index"),
                        _stamp(data.get("stamp")), data.get("serial", -1))

    def parts(self) -> tuple[Part, ...]:
        return self.base + self.batches

    def files(self) -> list[str]:
        """Every file this version names: its parts, its index and its dictionary's."""
        return ([p.path for p in self.parts()] + ([self.index] if self.index else [])
                + ([] if self.stamp is None else self.stamp.files(self.epoch)))

    @property
    def base_version(self) -> int:
        """The version the base holds (-1: no base)."""
        return self.base[0].version if self.base else -1

    @property
    def base_rows(self) -> int:
        return sum(p.rows for p in self.base)


def _stamp(data: dict[str, Any] | None) -> Stamp | None:
    """A stamp from its JSON (the lists back to tuples)."""
    if data is None:
        return None
    marks = data["marks"]
    refused = tuple((offset, code, reason) for offset, code, reason in marks["refused"])
    return Stamp(Marks(**{**marks, "refused": refused}), data["dictionary"],
                 data["dictionary_version"], tuple(data["value_versions"]),
                 data.get("shared", True))


# Writes the base of a manifest's version, the files named ``{stem}...``: its parts.
Compactor = Callable[[Manifest, str], tuple[Part, ...]]
# Writes the index of a manifest's base (its batches aside) as the file named by the second
# argument.
Indexer = Callable[[Manifest, str], None]


def filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """The file system of ``location`` and the path inside it (a plain path: local)."""
    if "://" in location:
        return pafs.FileSystem.from_uri(location)  # type: ignore[no-any-return]
    return pafs.LocalFileSystem(), location


def read_part(location: str, part: Part) -> DatomColumns:
    """One file's datoms (a local file is memory-mapped, not copied)."""
    fs, root = filesystem(location)
    path = f"{root}/{part.path}"
    if isinstance(fs, pafs.LocalFileSystem):
        with pa.memory_map(path) as source:
            table = pa.ipc.open_file(source).read_all()
    else:
        with fs.open_input_file(path) as source:
            table = pa.ipc.open_file(source).read_all()
    e, a, v = (table.column(name).to_numpy() for name in SET_SCHEMA.names)
    w = table.column("w").to_numpy() if "w" in table.column_names else set_weights(len(e))
    return DatomColumns(e, a, v, w)


def write_part(location: str, name: str, columns: DatomColumns, version: int) -> Part:
    """Write one file of the state (never replaced: each name is written once).  A set (every
    weight 1: a base, a restored database) is written without its weights."""
    fs, root = filesystem(location)
    arrays = [pa.array(columns.e, pa.int32()), pa.array(columns.a, pa.int32()),
              pa.array(columns.v, pa.int32())]
    weighted = len(columns) > 0 and not columns.w.min() == 1 == columns.w.max()
    if weighted:
        arrays.append(pa.array(columns.w, pa.int64()))
    table = pa.table(arrays, schema=SCHEMA if weighted else SET_SCHEMA)
    with fs.open_output_stream(f"{root}/{name}") as sink, \
            pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return Part(name, version, len(columns))


def summed(manifest: Manifest, bucket: int = 0, buckets: int = 1) -> DatomColumns:
    """The base and batches of ``manifest`` summed — equal datoms added, zeros dropped —
    of the entities ``e`` with ``e mod buckets == bucket``."""
    parts = [read_part(manifest.location, p) for p in manifest.parts()]
    if buckets > 1:
        parts = [part.take(part.e % buckets == bucket) for part in parts]
    whole = DatomColumns.concatenate(parts)
    return DatomColumns(*sorted_sum(whole.e, whole.a, whole.v, whole.w))


def summed_in_ranges(manifest: Manifest, rows: int = SUMMED_ROWS) -> Iterator[DatomColumns]:
    """:func:`summed` of the whole state, in EAV order, one range of entities at a time
    (about ``rows`` datoms each), each range sliced out of every part: no more than a range
    is ever summed in memory.  A local location's parts are memory-mapped; a remote one's
    are read whole (``read_part``), so there the parts themselves are held."""
    parts = [part for p in manifest.parts() if len(part := read_part(manifest.location, p))]
    assert all(_sorted_by_entity(p) for p in parts), "every part is written sorted by entity"
    for summed_range in summed_by_entity([(p.e, p.a, p.v, p.w) for p in parts], rows):
        yield DatomColumns(*summed_range)


def _sorted_by_entity(part: DatomColumns) -> bool:
    return bool(np.all(part.e[1:] >= part.e[:-1]))


def write_index(location: str, name: str, batch: DatomBatch) -> None:
    """Write ``batch``'s arrays as one file: a JSON header (each array's name, dtype, offset
    and length) after its own length, then the arrays, each at an offset aligned to 64
    bytes, so that a reader maps the file and views each array in place."""
    arrays = {key: np.ascontiguousarray(array) for key, array in batch.arrays().items()}
    entries: list[tuple[str, str, int, int]] = []
    offset = 0
    for key, array in arrays.items():
        entries.append((key, array.dtype.str, offset, len(array)))
        offset += -(-array.nbytes // INDEX_ALIGN) * INDEX_ALIGN
    header = json.dumps(entries).encode()
    start = -(-(INDEX_HEADER.size + len(header)) // INDEX_ALIGN) * INDEX_ALIGN
    fs, root = filesystem(location)
    with fs.open_output_stream(f"{root}/{name}") as sink:
        sink.write(INDEX_HEADER.pack(len(header)) + header)
        written = INDEX_HEADER.size + len(header)
        for (_, _, at, _), array in zip(entries, arrays.values(), strict=True):
            sink.write(b"\0" * (start + at - written))
            sink.write(array.data)
            written = start + at + array.nbytes


def read_index(location: str, name: str) -> DatomBatch:
    """The batch :func:`write_index` wrote: a local file's arrays are views of its mapping
    (its pages are shared by every process that maps it, and the kernel's to drop), a
    remote one's are read."""
    fs, root = filesystem(location)
    path = f"{root}/{name}"
    if isinstance(fs, pafs.LocalFileSystem):
        data: npt.NDArray[np.uint8] = np.memmap(path, np.uint8, "r")
    else:
        with fs.open_input_file(path) as source:
            data = np.frombuffer(source.read(), np.uint8)
    (length,) = INDEX_HEADER.unpack(data[:INDEX_HEADER.size].tobytes())
    end = INDEX_HEADER.size + length
    start = -(-end // INDEX_ALIGN) * INDEX_ALIGN
    arrays = {}
    for key, dtype, at, count in json.loads(data[INDEX_HEADER.size:end].tobytes()):
        kind = np.dtype(dtype)
        arrays[key] = data[start + at:start + at + count * kind.itemsize].view(kind)
    return DatomBatch.from_arrays(arrays)


def index_here(manifest: Manifest, name: str) -> None:
    """An indexer that builds the base in this process."""
    write_index(manifest.location, name, built_base(manifest))


def built_base(manifest: Manifest) -> DatomBatch:
    """The base's buckets (not empty) built into one batch of the four orders."""
    base = DatomColumns.concatenate([read_part(manifest.location, p) for p in manifest.base])
    batch = DatomBatch.build(base.e, base.a, base.v, base.w)
    assert batch is not None, "a base holds no zero weights, and this one holds datoms"
    return batch


def _versions_after(names: Iterable[str], manifest: Manifest) -> set[int]:
    """The versions after ``manifest``'s that the tick files ``names`` are of."""
    found = set()
    for name in names:
        for prefix in ("batch", "values"):
            head = f"{prefix}-{manifest.epoch}-"
            number = name[len(head):-len(".arrow")]
            if name.startswith(head) and number.isdigit() and int(number) > manifest.version:
                found.add(int(number))
    return found


def _pending(manifest: Manifest) -> int:
    """The rows of the batches: what a new base would fold in."""
    return sum(b.rows for b in manifest.batches)


def compact_here(manifest: Manifest, stem: str) -> tuple[Part, ...]:
    """A compactor that sums the whole state in this process, into one file."""
    return (write_part(manifest.location, f"{stem}.arrow", summed(manifest),
                       manifest.version),)


class StateStore:
    """The driver's side: writes the base and the batches, compacts, swaps the manifest."""

    def __init__(self, location: str | None = None, compact_datoms: int = COMPACT_DATOMS,
                 compact_batches: int = COMPACT_BATCHES,
                 compactor: Compactor = compact_here, indexer: Indexer = index_here,
                 index_datoms: int = INDEX_DATOMS, values: ValueFiles | None = None,
                 retain_seconds: float = 0.0, shared: bool = True) -> None:
        """``values``: the writer of the dictionary the state holds (None: it holds none);
        ``shared``: other engines follow a state holding its dictionary;
        ``retain_seconds``: how long the files a version no longer names are kept (the
        engines following a shared state read the versions they are at)."""
        self.values, self.retain_seconds, self.shared = values, retain_seconds, shared
        self._temporary = None if location else tempfile.TemporaryDirectory(
            prefix="deltalog-spark-state-")
        self.location = location or self._temporary.name  # type: ignore[union-attr]
        self.compact_datoms, self.compact_batches = compact_datoms, compact_batches
        self.compactor, self.indexer, self.index_datoms = compactor, indexer, index_datoms
        self.compactions = 0
        self._fs, self._root = filesystem(self.location)
        self._fs.create_dir(self._root, recursive=True)
        self._lock = threading.Lock()  # guards the manifest and the garbage list
        self._compacting: threading.Thread | None = None
        self._garbage: list[tuple[float, str]] = []  # when no version named it any more
        self.manifest: Manifest | None = None  # None: no state written yet
        self._holding = False  # mid-tick: the publication waits for the tick's last piece
        self._published: int | None = None  # the publication this store last wrote or took up

    def reset(self, columns: DatomColumns, marks: Marks | None = None) -> Manifest:
        """Start a new epoch whose base is ``columns`` (the whole state, each datom once);
        a large one is indexed in the background.  A shared state is stamped with
        ``marks`` and its whole dictionary written."""
        self.drop()
        with self._lock:
            epoch = uuid.uuid4().hex[:12]
            base = write_part(self.location, f"base-{epoch}-0.arrow", columns, 0)
            stamp = None
            if self.values is not None:
                assert marks is not None, "a shared state is stamped"
                dictionary = f"dictionary-{epoch}-0.arrow"
                self.values.write(self.location, dictionary, 0, marks.values)
                self.values.write_keys(self.location, dictionary, 0, keys_name(dictionary))
                stamp = Stamp(marks, dictionary, 0, shared=self.shared)
            self._publish(Manifest(self.location, epoch, 0, (base,), (), stamp=stamp))
        self._collect()
        if self._indexed(self.manifest):  # type: ignore[arg-type]
            self.compact_in_background()
        return self.manifest  # type: ignore[return-value]

    def take_over(self, manifest: Manifest) -> bool:
        """Write on a state another store wrote, from ``manifest`` (its newest publication as
        this store read it): claim it by publishing it anew as its successor (step 3 of
        :mod:`~workers.executors.spark.publish`).  False: another writer published since —
        nothing changed here.  Once it writes, the store deletes the tick files its last
        writer wrote past that version, unpublished (it writes those names again), and
        treats the other files the version does not name as replaced: they go after
        ``retain_seconds``."""
        with self._lock:
            self._published = manifest.serial
            if not self._published_as(manifest):
                return False
            named = set(manifest.files())
            unnamed = [info.base_name for info in self._fs.get_file_info(
                pafs.FileSelector(self._root)) if info.type == pafs.FileType.File
                and info.base_name not in named]
            ahead = {name(manifest.epoch, version) for name in (batch_name, values_name)
                     for version in _versions_after(unnamed, manifest)}
            ahead |= {keys_name(name) for name in ahead}
            self._discard(name for name in unnamed if name not in ahead)
        for name in ahead & set(unnamed):
            self._fs.delete_file(f"{self._root}/{name}")
        return True

    def reached(self, manifest: Manifest) -> None:
        """A follower's store is at its writer's version ``manifest`` (its engine stepped
        there, or opened the state there): the versions its tasks read from now on."""
        with self._lock:
            self.manifest = manifest
            self._published = manifest.serial

    def drop(self) -> None:
        """Forget the state (the arrangements were replaced); :meth:`reset` starts anew."""
        self.settle()
        with self._lock:
            if self.manifest is not None:
                self._discard(self.manifest.files())
            self.manifest = None

    def append(self, delta: DatomColumns, marks: Marks | None = None) -> None:
        """The tick's effective delta as the next version's batch, sorted by entity (as a
        base is: a snapshot sums every part a range of entities at a time, never sorting
        one whole); a shared state's version stamped with ``marks``, the values numbered
        since the last written to a file of its own."""
        manifest = self.manifest
        assert manifest is not None, "append after reset"
        self._collect()
        version = manifest.version + 1
        name = batch_name(manifest.epoch, version)
        sorted_delta = delta.take(sort_order(delta.e, delta.a, delta.v))
        self._write_once(name, lambda aside: write_part(self.location, aside, sorted_delta,
                                                        version))
        part = Part(name, version, len(delta))
        numbered = None
        if self.values is not None:
            assert marks is not None and manifest.stamp is not None, "a shared state is stamped"
            values = self.values
            start, stop = manifest.stamp.marks.values, marks.values
            if stop > start:
                numbered_name = values_name(manifest.epoch, version)
                self._write_once(numbered_name,
                                 lambda aside: values.write(self.location, aside, start, stop))
                self._write_once(keys_name(numbered_name), lambda aside: values.write_keys(
                    self.location, numbered_name, start, aside))
                numbered = version
        with self._lock:
            current = self.manifest
            assert current is not None
            stamp = current.stamp
            if stamp is not None and marks is not None:
                stamp = replace(stamp, marks=marks, value_versions=stamp.value_versions + (
                    () if numbered is None else (numbered,)))
                self._holding = not marks.complete
            self._publish(replace(current, version=version,
                                  batches=current.batches + (part,), stamp=stamp))
        if self._due():
            self.compact_in_background()

    def restamp(self, marks: Marks) -> None:
        """A shared state's version at a new position: ticks that changed nothing came."""
        with self._lock:
            current = self.manifest
            assert current is not None, "restamp after reset"
            stamp = current.stamp  # the size, schema and dictionary are those of its version
            if stamp is not None and (stamp.marks.position, stamp.marks.refused) != (
                    marks.position, marks.refused):
                self._publish(replace(current, stamp=replace(stamp, marks=replace(
                    stamp.marks, position=marks.position, refused=marks.refused))))

    def _due(self) -> bool:
        manifest = self.manifest
        assert manifest is not None
        return (len(manifest.batches) >= self.compact_batches
                or _pending(manifest) >= max(self.compact_datoms, manifest.base_rows))

    def compact_in_background(self, rebase: bool = False) -> None:
        """Compact the current version (:meth:`_compact`), unless a compaction is running."""
        if self._compacting is not None and self._compacting.is_alive():
            return
        manifest = self.manifest
        assert manifest is not None
        self._compacting = threading.Thread(target=self._compact, args=(manifest, rebase),
                                            name="deltalog-state-compaction", daemon=True)
        self._compacting.start()

    def compact_idle(self) -> None:
        """The owner has nothing to step: sum the batches of a state of ``index_datoms``
        or more into a new, indexed base when they hold an ``IDLE_SHARE``-th of the base or
        more — what a tick would not wait for.  Every Python worker then maps one built
        batch, where an evaluation's tasks each merged the batches into their own copy
        first (the 10^7 triangle after a load: 1.1-1.2 s per task, both tasks at once,
        before the evaluation).  A smaller state is cheap to open: its idle moments do
        not each cost a Spark job."""
        manifest = self.manifest
        if manifest is None or not manifest.batches:
            return
        pending = _pending(manifest)
        if (pending + manifest.base_rows >= self.index_datoms
                and IDLE_SHARE * pending >= manifest.base_rows):
            self.compact_in_background(rebase=True)

    def settle(self) -> None:
        """Wait for a running compaction (tests, benchmarks, a reset)."""
        if self._compacting is not None:
            self._compacting.join()
            self._compacting = None

    def columns(self) -> tuple[Ids, Ids, Ids]:
        """The whole state at the current version, each datom once, in EAV order (what a
        snapshot holds): summed a range of entities at a time into temporary files, which
        the int32 columns returned map.  The driver's heap holds a range, never the
        database; the columns' pages are the files', which the kernel may drop."""
        manifest = self.manifest
        assert manifest is not None, "columns after reset"
        # A mapping outlives its file's closing (and a temporary file is already unlinked).
        with contextlib.ExitStack() as closing:
            files = [closing.enter_context(tempfile.TemporaryFile(prefix="deltalog-columns-"))
                     for _ in "eav"]
            size = 0
            for chunk in summed_in_ranges(manifest):
                for file, column in zip(files, (chunk.e, chunk.a, chunk.v), strict=True):
                    file.write(column.astype(np.int32, copy=False).tobytes())
                size += len(chunk)
            if not size:
                return _NO_COLUMNS
            for file in files:
                file.flush()
            e, a, v = (np.memmap(file, np.int32, "r", shape=(size,)) for file in files)
            return e, a, v

    def _indexed(self, manifest: Manifest) -> bool:
        """Whether ``manifest``'s base is large enough to be indexed and is not yet."""
        return manifest.index is None and manifest.base_rows >= max(1, self.index_datoms)

    def _compact(self, manifest: Manifest, rebase: bool = False) -> None:
        """Make ``manifest``'s files cheaper to read, then publish them with the batches
        appended meanwhile:

        - batches of fewer datoms than the base (due by their number) are folded into one
          batch (its buckets), the base and its index kept: a large base is rewritten when
          as many datoms came, not every ``compact_batches`` ticks;
        - otherwise (or to ``rebase``: the owner is idle) everything is summed into a new
          base, indexed when it is large;
        - no batches (a reset): the base is indexed."""
        # a name no writer of the location wrote before (one stopped mid-compaction may have)
        stem = f"{manifest.epoch}-{manifest.version}-{uuid.uuid4().hex[:6]}"
        if manifest.batches and not rebase and _pending(manifest) < manifest.base_rows:
            folded = self.compactor(replace(manifest, base=()), f"folded-{stem}")
            since = manifest.batches[0].first
            compacted = replace(manifest, batches=tuple(replace(p, since=since) for p in folded))
        else:
            base = self.compactor(manifest, f"base-{stem}") if manifest.batches else manifest.base
            compacted = replace(manifest, base=base, batches=(),
                                index=None if manifest.batches else manifest.index)
            if self._indexed(compacted):
                index = f"base-{stem}.index"
                self.indexer(compacted, index)
                compacted = replace(compacted, index=index)
        compacted = self._fold_dictionary(compacted, stem)
        before, after = set(manifest.files()), set(compacted.files())
        with self._lock:
            current = self.manifest
            assert current is not None
            if current.epoch != manifest.epoch:  # reset meanwhile: these files are stale
                self._discard(after - before)
                return
            later = tuple(b for b in current.batches if b.version > manifest.version)
            self._discard(before - after)
            stamp = None if current.stamp is None or compacted.stamp is None else replace(
                current.stamp, dictionary=compacted.stamp.dictionary,
                dictionary_version=manifest.version,
                value_versions=tuple(v for v in current.stamp.value_versions
                                     if v > manifest.version))
            self._publish(replace(compacted, version=current.version,
                                  batches=compacted.batches + later, stamp=stamp))
            self.compactions += int(bool(manifest.batches))

    def _fold_dictionary(self, manifest: Manifest, stem: str) -> Manifest:
        """A shared state's dictionary files of ``manifest`` folded into one."""
        stamp = manifest.stamp
        if self.values is None or stamp is None or not stamp.value_versions:
            return manifest
        dictionary = f"dictionary-{stem}.arrow"
        folded = stamp.values_files(manifest.epoch)
        self.values.fold(self.location, folded, dictionary)
        self.values.fold_keys(self.location, [keys_name(name) for name in folded],
                              keys_name(dictionary))
        return replace(manifest, stamp=replace(stamp, dictionary=dictionary,
                                               dictionary_version=manifest.version,
                                               value_versions=()))

    def _publish(self, manifest: Manifest) -> None:
        """Publish ``manifest`` (the caller holds the lock) — unless a tick's pieces are being
        appended: its last publishes.  Another writer published since this store last did
        (it took the state over): this one must write no more, and stops."""
        self.manifest = manifest
        if not self._holding and not self._published_as(manifest):
            raise WorkersError(f"another writer wrote the Spark state at {self.location!r}: "
                               "this one stops writing it", code=ErrorCode.SPARK)

    def _published_as(self, manifest: Manifest) -> bool:
        """Publish ``manifest`` as the successor of this store's last publication (the
        location's newest, for a store that has none: a new state); whether it did."""
        last = self._published
        if last is None:
            last = max(serials(self._fs, self._root), default=-1)
        manifest = replace(manifest, serial=last + 1)
        if not publish(self._fs, self._root, manifest.serial, manifest.to_json()):
            return False
        self.manifest, self._published = manifest, manifest.serial
        return True

    def _write_once(self, name: str, write: Callable[[str], object]) -> None:
        """Write the tick file ``name`` once: written aside by ``write`` (under the name it
        is given), it takes ``name`` only if no file has it (``link_if_absent``).  Names are
        the version's, and a writer paused past its session may write a version the writer
        after it wrote too.  A file of the name is either the newer writer's (this store
        was taken over from since it last published: it stops, having overwritten nothing)
        or was left by a writer this store took over from, which never publishes it (its
        publication is refused): this store deletes it and takes the name."""
        aside = f".aside-{uuid.uuid4().hex[:8]}-{name}"
        write(aside)
        try:
            for _ in range(2):
                with self._lock:
                    if link_if_absent(self._fs, f"{self._root}/{aside}", f"{self._root}/{name}"):
                        return
                    if max(serials(self._fs, self._root), default=-1) != self._published:
                        raise WorkersError(f"another writer wrote the Spark state at "
                                           f"{self.location!r}: this one stops writing it",
                                           code=ErrorCode.SPARK)
                    with contextlib.suppress(FileNotFoundError):
                        self._fs.delete_file(f"{self._root}/{name}")
            raise WorkersError(f"another writer keeps writing {name} in the Spark state at "
                               f"{self.location!r}", code=ErrorCode.SPARK)
        finally:
            self._fs.delete_file(f"{self._root}/{aside}")

    def _discard(self, paths: Iterable[str]) -> None:
        """``paths`` are named by no version from now on (the caller holds the lock)."""
        now = time.monotonic()
        self._garbage.extend((now, path) for path in paths)

    def _collect(self) -> None:
        """Delete the files no manifest names any more (see the module's docstring), once
        they were kept ``retain_seconds``."""
        kept_since = time.monotonic() - self.retain_seconds
        with self._lock:
            garbage = [path for since, path in self._garbage if since <= kept_since]
            self._garbage = [(since, path) for since, path in self._garbage
                             if since > kept_since]
        for path in garbage:
            self._fs.delete_file(f"{self._root}/{path}")

    def close(self) -> None:
        self.settle()
        if self._temporary is not None:
            self._temporary.cleanup()
