"""The snapshot file: an :class:`~workers.engine.EngineState` as data, never as code.

A snapshot store may be shared by a fleet (a bucket, an HDFS directory), so reading one must
not run anything it holds: no pickle.  A snapshot is a ZIP archive (stored, not compressed)
of a JSON header and NumPy ``.npy`` arrays, read with ``allow_pickle=False``::

    header.json        {"format": "deltalog-snapshot", "version": 1, "tx": ..., "schema": [...]}
    e.npy a.npy v.npy  the datoms as int32 id columns, in EAV order
    kinds.npy          per value id: 0 an int64 (payload.npy holds it), 1 an object
    payload.npy        per value id: the int, or the object's index
    object_tags.npy    per object its type (a byte: s string, k keyword, d double, ...)
    object_offsets.npy / object_text.npy   per object its text: int64 offsets into UTF-8

ZIP keeps a CRC-32 per member and its directory at the end, so a file cut short or damaged
fails to read (:class:`SnapshotFormatError`) instead of loading a wrong database.  The ids
and the order of the columns are checked too, so a forged file cannot crash a worker later.
``unzip -p FILE header.json`` shows what a snapshot holds; ``numpy.load`` reads its arrays.
The texts are joined with NumPy, not PyArrow: a worker's first PyArrow array conversion maps
~45 MB of its libraries, which every worker would then hold (docs/fleet.md, Worker memory).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from workers.arrangements.values import ValueIds
from workers.db.codec import DECODE, decode_schema, encode_schema, encode_value
from workers.engine import EngineState

FORMAT, VERSION = "deltalog-snapshot", 1
HEADER = "header.json"
COLUMNS = ("e", "a", "v")
MAPPED = (*COLUMNS, "kinds", "payload")  # a local file's members mapped, not read
# Makes the dictionary of a snapshot's entries (kinds, payloads, objects): ValueError when
# they do not describe one.  ``ValueIds.from_entries`` in memory; a driver under Spark
# writes them to files (``SpilledValueIds.from_entries``).
Dictionary = Callable[[npt.NDArray[np.int8], npt.NDArray[np.int64], list[Any]], ValueIds]


class SnapshotFormatError(ValueError):
    """The bytes are not a snapshot this version reads (damaged, cut short, or another
    format)."""


def write(state: EngineState, stream: IO[bytes]) -> None:
    """Write ``state`` to a binary stream (it need not seek: a bucket's upload streams)."""
    kinds, payloads, objects = state.values.entries()
    tags, texts = zip(*map(encode_value, objects), strict=True) if objects else ((), ())
    encoded = [text.encode("utf-8") for text in texts]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(data) for data in encoded], out=offsets[1:])
    header = {"format": FORMAT, "version": VERSION, "tx": state.tx,
              "datoms": len(state.columns[0]), "values": len(kinds),
              "schema": encode_schema(state.schema)}
    arrays: dict[str, npt.NDArray[Any]] = {
        **dict(zip(COLUMNS, state.columns, strict=True)), "kinds": kinds, "payload": payloads,
        "object_tags": np.frombuffer("".join(tags).encode("ascii"), np.uint8),
        "object_offsets": offsets,
        "object_text": np.frombuffer(b"".join(encoded), np.uint8)}
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        archive.writestr(HEADER, json.dumps(header))
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(array),
                                          allow_pickle=False)


def read(data: bytes | IO[bytes] | Path,
         dictionary: Dictionary = ValueIds.from_entries) -> EngineState:
    """The state in a snapshot's bytes, in a seekable file of them (read member by member:
    the file is never held whole), or in a local file whose datom columns and value
    entries are then memory-mapped (their pages are the file's, not the heap's: a restore
    under ``executor=spark`` writes them to Spark's state and to the driver's dictionary
    files as they are), its dictionary made by ``dictionary``;
    :class:`SnapshotFormatError` when they are not one this version reads, naming why."""
    local = data if isinstance(data, Path) else None
    try:
        with (open(local, "rb") if local is not None else contextlib.nullcontext(
                io.BytesIO(data) if isinstance(data, bytes) else data)) as source, \
                zipfile.ZipFile(source) as archive:
            header = json.loads(archive.read(HEADER))
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise SnapshotFormatError(f"format {header.get('format')!r} version "
                                          f"{header.get('version')!r}, this version reads "
                                          f"{FORMAT!r} version {VERSION}")
            arrays = {name.removesuffix(".npy"): _array(archive, name, local)
                      for name in archive.namelist() if name.endswith(".npy")}
        return _state(header, arrays, dictionary)
    except SnapshotFormatError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, IndexError, OSError,
            EOFError, MemoryError, struct.error) as error:
        raise SnapshotFormatError(f"not a readable snapshot: {error!r}") from error


MAPPED_MIN_BYTES = 1 << 20  # a smaller column is read: mapping it saves nothing
CRC_PIECE = 1 << 24  # bytes of a mapped member checked at once


def _array(archive: zipfile.ZipFile, name: str, local: Path | None) -> npt.NDArray[Any]:
    """A member's array: a datom column or value entries of a local file mapped from it
    when stored uncompressed (its CRC-32 checked first, reading the file a piece at a time,
    as reading the member would), any other member read."""
    info = archive.getinfo(name)
    if (local is None or name.removesuffix(".npy") not in MAPPED
            or info.compress_type != zipfile.ZIP_STORED or info.file_size < MAPPED_MIN_BYTES):
        return np.lib.format.read_array(archive.open(name), allow_pickle=False)
    with archive.open(name) as member:
        version = np.lib.format.read_magic(member)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(member) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(member))
        header_bytes = member.tell()
    with open(local, "rb") as file:
        file.seek(info.header_offset)
        local_header = file.read(_LOCAL_HEADER.size)
        signature, _, name_length, extra_length = _LOCAL_HEADER.unpack(local_header)
        if signature != b"PK\x03\x04":
            raise SnapshotFormatError(f"{name}: no ZIP entry where the directory says")
        start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
        file.seek(start)
        crc = 0
        for at in range(0, info.file_size, CRC_PIECE):
            crc = zlib.crc32(file.read(min(CRC_PIECE, info.file_size - at)), crc)
    if crc != info.CRC:
        raise SnapshotFormatError(f"{name}: damaged (its CRC-32 differs)")
    if dtype.hasobject or header_bytes + dtype.itemsize * math.prod(shape) != info.file_size:
        raise SnapshotFormatError(f"{name}: its array header does not describe the member")
    return np.memmap(local, dtype, "r", start + header_bytes, shape, "F" if fortran else "C")


# A ZIP local file header: its signature, ..., then the name's and the extra field's lengths.
_LOCAL_HEADER = struct.Struct("<4s22sHH")


def _state(header: dict[str, Any], arrays: dict[str, npt.NDArray[Any]],
           dictionary: Dictionary) -> EngineState:
    tags = arrays["object_tags"].tobytes().decode("ascii")
    strings = _texts(arrays["object_offsets"], arrays["object_text"], len(tags))
    objects = [DECODE[tag](item) for tag, item in zip(tags, strings, strict=True)]
    values = dictionary(arrays["kinds"], arrays["payload"], objects)
    columns = tuple(arrays[name].astype(np.int32, copy=False) for name in COLUMNS)
    _check_datoms(columns, values.size)
    schema = decode_schema(header["schema"])
    if len(columns[0]) != header["datoms"] or values.size != header["values"]:
        raise SnapshotFormatError("the header's counts differ from the arrays'")
    return EngineState(values, columns, schema, int(header["tx"]))  # type: ignore[arg-type]


def _texts(offsets: npt.NDArray[Any], text: npt.NDArray[Any], count: int) -> list[str]:
    """The ``count`` texts the offsets cut out of the UTF-8 bytes (checked: offsets from 0 to
    the end, never decreasing; UTF-8): a ``ValueError`` when they do not."""
    bounds = offsets.astype(np.int64).tolist()
    data = text.astype(np.uint8).tobytes()
    if (len(bounds) != count + 1 or bounds[0] != 0 or bounds[-1] != len(data)
            or any(b > c for b, c in itertools.pairwise(bounds))):
        raise ValueError("the objects' text offsets do not cut their text")
    return [data[b:c].decode("utf-8") for b, c in itertools.pairwise(bounds)]


CHECKED_ROWS = 1 << 20  # datoms whose order is checked at once (bounded temporaries)


def _check_datoms(columns: tuple[npt.NDArray[np.int32], ...], size: int) -> None:
    """Ids of the dictionary, datoms in strictly increasing EAV order (a set), checked
    ``CHECKED_ROWS`` at a time (each step's first datom against the one before it)."""
    e, a, v = columns
    if not len(e) == len(a) == len(v):
        raise SnapshotFormatError("the datom columns differ in length")
    if len(e) and (min(c.min() for c in columns) < 0 or max(c.max() for c in columns) >= size):
        raise SnapshotFormatError("a datom names a value id outside the dictionary")
    for start in range(0, max(len(e) - 1, 0), CHECKED_ROWS):
        de, da, dv = (np.diff(c[start:start + CHECKED_ROWS + 1]) for c in columns)
        if not np.all((de > 0) | ((de == 0) & ((da > 0) | ((da == 0) & (dv > 0))))):
            raise SnapshotFormatError("the datoms are not a set in EAV order")
