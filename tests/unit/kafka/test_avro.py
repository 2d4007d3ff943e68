"""Avro codec without a registry: schemas, single-object framing, round trips, golden bytes,
and the dead-letter errors of ``decode``.

Regenerate the golden files after an intended schema change with
``pytest --update-golden tests/unit/kafka`` (the rewritten tests fail once) and review the
diff.
"""

from __future__ import annotations

import struct

import pytest
from fastavro.schema import fingerprint as avro_fingerprint
from fastavro.schema import to_parsing_canonical_form

from tests.fixtures.golden import GOLDEN, Golden
from tests.unit.kafka.records import RECORDS, TRANSACTION_1
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import SCHEMAS, AvroCodec, DecodeError, fingerprint, load_schema

# CRC-64-AVRO as the Avro specification writes it (an independent check of fastavro's).
_EMPTY = 0xC15D213AA4D7A795


def _table_entry(i: int) -> int:
    for _ in range(8):
        i = (i >> 1) ^ (_EMPTY & -(i & 1))
    return i


_TABLE = [_table_entry(i) for i in range(256)]


def _rabin(data: bytes) -> int:
    fp = _EMPTY
    for byte in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ byte) & 0xFF]
    return fp


def test_records_cover_every_schema() -> None:
    assert set(RECORDS) == set(SCHEMAS)


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_loads(name: str) -> None:
    schema = load_schema(name)
    assert schema["type"] == "record"
    assert schema["name"].startswith("deltalog.v1.")


@pytest.mark.parametrize("name", SCHEMAS)
def test_single_object_header_is_magic_and_little_endian_fingerprint(name: str) -> None:
    schema = load_schema(name)
    canonical = to_parsing_canonical_form(schema)
    expected = bytes.fromhex(avro_fingerprint(canonical, "CRC-64-AVRO"))
    assert expected == struct.pack("<Q", _rabin(canonical.encode()))
    assert fingerprint(schema) == expected
    data = AvroCodec(name).encode(RECORDS[name])
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == expected


def test_fingerprint_of_spec_example_int() -> None:
    assert fingerprint("int") == struct.pack("<Q", _rabin(b'"int"'))


@pytest.mark.parametrize("name", SCHEMAS)
def test_round_trip(name: str) -> None:
    codec = AvroCodec(name)
    assert codec.decode(codec.encode(RECORDS[name])) == RECORDS[name]


@pytest.mark.parametrize("name", SCHEMAS)
def test_encoding_matches_golden_bytes(name: str, golden: Golden) -> None:
    golden(f"avro/{name}.bin", AvroCodec(name).encode(RECORDS[name]))


def test_records_of_an_earlier_schema_version_still_decode() -> None:
    """BACKWARD: a transaction the first schema wrote (the tx log is read again from its
    start on replay) decodes with the current one, its new fields at their defaults."""
    data = (GOLDEN / "avro" / "transaction.1.bin").read_bytes()
    assert AvroCodec("transaction").decode(data) == TRANSACTION_1


@pytest.mark.parametrize("data", [b"", b"garbage", b"\xc3", b"\xc3\x01\x00", b"\x00\x00"],
                         ids=["empty", "garbage", "half-magic", "short-header", "short-id"])
def test_unframed_bytes_are_undecodable(data: bytes) -> None:
    with pytest.raises(DecodeError, match="not a deltalog Avro record") as caught:
        AvroCodec("progress").decode(data)
    assert caught.value.code is ErrorCode.UNDECODABLE


def test_truncated_body_is_undecodable() -> None:
    codec = AvroCodec("progress")
    data = codec.encode(RECORDS["progress"])
    with pytest.raises(DecodeError, match="undecodable progress record") as caught:
        codec.decode(data[:-3])
    assert caught.value.code is ErrorCode.UNDECODABLE


def test_header_only_is_undecodable() -> None:
    codec = AvroCodec("progress")
    with pytest.raises(DecodeError) as caught:
        codec.decode(codec.encode(RECORDS["progress"])[:10])
    assert caught.value.code is ErrorCode.UNDECODABLE


def test_other_schema_fingerprint_is_unknown_schema() -> None:
    data = AvroCodec("result_key").encode(RECORDS["result_key"])
    with pytest.raises(DecodeError, match="unknown schema: fingerprint") as caught:
        AvroCodec("progress").decode(data)
    assert caught.value.code is ErrorCode.UNKNOWN_SCHEMA


def test_confluent_framing_without_registry_asks_for_registry_url() -> None:
    data = b"\x00" + struct.pack(">I", 1) + b"\x06tri\x06\x52\x00"
    with pytest.raises(DecodeError, match=r"no schema registry.*registry URL") as caught:
        AvroCodec("progress").decode(data)
    assert caught.value.code is ErrorCode.UNKNOWN_SCHEMA


def test_decode_error_is_a_workers_error() -> None:
    assert issubclass(DecodeError, WorkersError)


def test_progress_bytes_by_hand() -> None:
    """Avro binary of the progress record, spelled out: zig-zag longs, length-prefixed strings."""
    body = b"\x06tri" + b"\x06" + b"\x52" + b"\x06w-1"  # "tri", 3, 41, "w-1"
    header = b"\xc3\x01" + bytes.fromhex("f61afd4fb4199bcd")
    assert AvroCodec("progress").encode(RECORDS["progress"]) == header + body
