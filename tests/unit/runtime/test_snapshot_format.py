"""The snapshot file: every kind of value and the schema come back as they were; bytes that
are not a snapshot (cut short, damaged, forged) are refused, never loaded."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workers.arrangements.spilled import SpilledValueIds
from workers.arrangements.values import ValueIds
from workers.edn import keyword
from workers.engine import Engine, EngineState
from workers.runtime import snapshot_format
from workers.runtime.snapshot_format import SnapshotFormatError

SCHEMA = """[{:db/ident :name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
             {:db/ident :friend :db/valueType :db.type/ref}]"""
# Every kind of value: long, string, keyword, double, boolean, uuid, instant; entity ids as
# keywords, strings and uuids; 1, 1.0 and true as three values.
DATA = """[{:db/id 1 :name "Ivan" :friend :petr :score 1 :ratio 1.0 :ok true}
           {:db/id :petr :name "Пётр \\"P\\"" :score -9223372036854775808 :ratio -0.1
            :ok false :kind :person/admin}
           {:db/id "s-1" :at #inst "2020-02-29T23:59:59.999Z" :empty ""}
           {:db/id #uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6" :ratio 1e300 :g/to 1}]"""


def _engine() -> Engine:
    engine = Engine()
    engine.transact(SCHEMA, tx_id=3)
    engine.transact(DATA, tx_id=4)
    return engine


def _bytes(state: EngineState) -> bytes:
    stream = io.BytesIO()
    snapshot_format.write(state, stream)
    return stream.getvalue()


def test_every_kind_of_value_and_the_schema_come_back() -> None:
    original = _engine()
    state = snapshot_format.read(_bytes(original.state()))
    restored = Engine()
    restored.restore(state)
    assert state.tx == 4
    assert sorted(map(repr, restored.db.datoms())) == sorted(map(repr, original.db.datoms()))
    assert [type(state.values.value(i)) for i in range(state.values.size)] == [
        type(original.state().values.value(i)) for i in range(state.values.size)]
    assert state.schema[keyword("name")].cardinality_one
    assert state.schema.is_ref(keyword("friend"))
    assert dict(state.schema.items()) == dict(original.schema.items())
    # the same ids: later transactions and queries on the restored engine agree
    for engine in (original, restored):
        engine.transact('[[:db/add 1 :name "Ivanov"] [:db/add :petr :ok true]]')
    query = "[:find ?n ?ok :where [?e :name ?n] [?e :ok ?ok]]"
    assert restored.query(query) == original.query(query) == {
        ("Ivanov", True): 1, ('Пётр "P"', False): 1, ('Пётр "P"', True): 1}


def test_an_empty_database_round_trips() -> None:
    state = snapshot_format.read(_bytes(Engine().state()))
    assert (state.values.size, len(state.columns[0]), state.tx) == (0, 0, 0)


def _forged(replace: dict[str, np.ndarray]) -> bytes:
    """A well-formed archive of the engine's snapshot with some arrays replaced."""
    with zipfile.ZipFile(io.BytesIO(_bytes(_engine().state()))) as source:
        members = {name: source.read(name) for name in source.namelist()}
    target = io.BytesIO()
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in members.items():
            array = replace.get(name.removesuffix(".npy"))
            if array is not None:
                stream = io.BytesIO()
                np.lib.format.write_array(stream, array)
                data = stream.getvalue()
            archive.writestr(name, data)
    return target.getvalue()


DATOMS = len(_engine().state().columns[0])
with zipfile.ZipFile(io.BytesIO(_bytes(_engine().state()))) as _archive:
    TEXT_BYTES = len(np.lib.format.read_array(_archive.open("object_text.npy")))


@pytest.mark.parametrize(("arrays", "message"), [
    ({"v": np.array([10**6], np.int32)}, "differ in length"),
    ({"e": np.full(DATOMS, 10**6, np.int32)}, "outside the dictionary"),
    ({"e": np.zeros(DATOMS, np.int32)}, "not a set in EAV order"),
    ({"kinds": np.zeros(3, np.int8)}, "do not describe a dictionary"),
    ({"object_tags": np.frombuffer(b"?" * 12, np.uint8)}, "not a readable snapshot"),
    ({"e": np.array([{"a pickle": 1}], object)}, "not a readable snapshot"),
    ({"object_offsets": np.array([0, 10**6], np.int64)}, "offsets do not cut their text"),
    ({"object_text": np.full(TEXT_BYTES, 0xFF, np.uint8)}, "invalid start byte"),
], ids=["lengths", "ids", "order", "dictionary", "tag", "object-array", "offsets", "utf-8"])
def test_forged_arrays_are_refused(arrays: dict[str, np.ndarray], message: str) -> None:
    with pytest.raises(SnapshotFormatError, match=message):
        snapshot_format.read(_forged(arrays))


@pytest.mark.parametrize("checked_rows", [1, 2, 3, 10**6])
def test_any_pair_out_of_order_is_refused_wherever_the_check_cuts(
        checked_rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The order is checked a step at a time: two datoms swapped are found at every
    position, the step's first one against the one before it included."""
    monkeypatch.setattr(snapshot_format, "CHECKED_ROWS", checked_rows)
    e = _engine().state().columns[0]
    for at in range(DATOMS - 1):
        swapped = e.copy()
        swapped[at], swapped[at + 1] = e[at + 1], e[at]
        if swapped[at] == e[at]:  # two datoms of one entity: swap their attributes instead
            continue
        with pytest.raises(SnapshotFormatError, match="not a set in EAV order"):
            snapshot_format.read(_forged({"e": swapped}))
    snapshot_format.read(_bytes(_engine().state()))  # in order: read


def test_the_header_says_what_the_snapshot_holds() -> None:
    with zipfile.ZipFile(io.BytesIO(_bytes(_engine().state()))) as archive:
        header = json.loads(archive.read("header.json"))
    assert {key: header[key] for key in ("format", "version", "tx")} == {
        "format": "deltalog-snapshot", "version": 1, "tx": 4}
    assert ["k", "name", True, "k", "db.type/string"] in header["schema"]


def test_a_local_files_datom_columns_are_mapped_and_read_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From a local file the datom columns are memory-mapped (not read onto the heap), with
    the CRC-32 and the array header checked as reading them would."""
    monkeypatch.setattr(snapshot_format, "MAPPED_MIN_BYTES", 0)
    path = tmp_path / "snapshot.zip"
    path.write_bytes(_bytes(_engine().state()))
    mapped, read = snapshot_format.read(path), snapshot_format.read(path.read_bytes())
    assert all(isinstance(c, np.memmap) for c in mapped.columns)
    assert not any(isinstance(c, np.memmap) for c in read.columns)
    assert all(np.array_equal(m, r) for m, r in zip(mapped.columns, read.columns, strict=True))
    restored = Engine()
    restored.restore(mapped, adopt=True)
    assert sorted(map(repr, restored.db.datoms())) == sorted(map(repr, _engine().db.datoms()))


def test_a_dictionary_read_into_files_holds_what_the_one_in_memory_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A restore under ``executor=spark`` makes the snapshot's dictionary in files from its
    value entries, mapped from a local file (never whole on the heap)."""
    monkeypatch.setattr(snapshot_format, "MAPPED_MIN_BYTES", 0)
    path = tmp_path / "snapshot.zip"
    path.write_bytes(_bytes(_engine().state()))
    given: list[type] = []

    def in_files(kinds: np.ndarray, payloads: np.ndarray, objects: list[Any]) -> ValueIds:
        given.extend([type(kinds), type(payloads)])
        return SpilledValueIds.from_entries(kinds, payloads, objects, spill_values=2)

    state, in_memory = snapshot_format.read(path, in_files), snapshot_format.read(path)
    assert given == [np.memmap, np.memmap] and isinstance(state.values, SpilledValueIds)
    everything = np.arange(in_memory.values.size)
    assert state.values.values(everything) == in_memory.values.values(everything)
    assert [type(x) for x in state.values.values(everything)] == [
        type(x) for x in in_memory.values.values(everything)]


def test_a_dictionary_numbering_a_value_twice_is_refused_in_files_too() -> None:
    state = _engine().state()
    kinds, payloads, objects = state.values.entries()
    ints = np.flatnonzero(kinds == 0)
    payloads = payloads.copy()
    payloads[ints[1]] = payloads[ints[0]]
    forged = EngineState(ValueIds(), state.columns, state.schema, state.tx)
    data = io.BytesIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ValueIds, "entries", lambda _: (kinds, payloads, objects))
        snapshot_format.write(forged, data)
    with pytest.raises(SnapshotFormatError, match="twice"):
        snapshot_format.read(data.getvalue(), SpilledValueIds.from_entries)


def test_a_damaged_mapped_column_is_refused(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Its CRC-32 checked over the file (a member longer than what reading its array
    header reads ahead, which checks a short one's)."""
    monkeypatch.setattr(snapshot_format, "MAPPED_MIN_BYTES", 0)
    engine, nodes = Engine(), np.arange(10_000)
    engine.transact_columns(nodes, keyword("g/to"), nodes + 1)
    data = bytearray(_bytes(engine.state()))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.getinfo("v.npy")
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    data[info.header_offset + 30 + name_length + extra_length + info.file_size - 1] ^= 1
    path = tmp_path / "snapshot.zip"
    path.write_bytes(bytes(data))
    with pytest.raises(snapshot_format.SnapshotFormatError, match=r"v\.npy: damaged"):
        snapshot_format.read(path)
