"""Confluent wire format with a schema registry stubbed in memory (no network)."""

from __future__ import annotations

import io
import json
import struct
import urllib.error
from typing import Any

import fastavro
import pytest

from tests.unit.kafka.records import RECORDS, UUID
from workers.errors import ErrorCode
from workers.kafka.avro import (
    SCHEMAS,
    AvroCodec,
    DecodeError,
    SchemaRegistry,
    declared_schema,
    load_schema,
)

PROGRESS_V0 = {  # progress before the ``worker`` field was added
    "type": "record", "name": "Progress", "namespace": "deltalog.v1",
    "fields": [{"name": "query", "type": "string"},
               {"name": "registration", "type": "long"},
               {"name": "tx_last", "type": "long"}],
}


class DictRegistry(SchemaRegistry):
    """``register`` and ``schema`` over a dict; ids are handed out from 100 upwards."""

    def __init__(self) -> None:
        super().__init__("http://registry.invalid")
        self.subjects: dict[str, int] = {}
        self.by_id: dict[int, Any] = {}

    def register(self, subject: str, schema: Any) -> int:
        if subject not in self.subjects:
            self.subjects[subject] = self.add(schema)
        return self.subjects[subject]

    def add(self, schema: Any) -> int:
        schema_id = 100 + len(self.by_id)
        self.by_id[schema_id] = fastavro.parse_schema(json.loads(json.dumps(schema)),
                                                      named_schemas={})
        return schema_id

    def schema(self, schema_id: int) -> Any:
        return self.by_id[schema_id]


class NotFoundRegistry(SchemaRegistry):
    """The real ``SchemaRegistry`` code with its HTTP call answering 404, as a registry does
    for an id it never issued."""

    def _call(self, path: str, body: bytes | None = None) -> Any:
        raise urllib.error.HTTPError(self.url + path, 404, "Schema not found", None,  # type: ignore[arg-type]
                                     io.BytesIO(b'{"error_code":40403}'))


class EchoRegistry(SchemaRegistry):
    """The real ``SchemaRegistry`` code over a fake HTTP layer that stores the posted schema
    text and serves it back, as a Confluent registry does."""

    def __init__(self) -> None:
        super().__init__("http://registry.invalid/")
        self.posted: dict[int, str] = {}
        self.paths: list[str] = []

    def _call(self, path: str, body: bytes | None = None) -> Any:
        self.paths.append(path)
        if body is not None:
            schema_id = len(self.posted) + 1
            self.posted[schema_id] = json.loads(body)["schema"]
            return {"id": schema_id}
        return {"schema": self.posted[int(path.rsplit("/", 1)[1])]}


def _confluent(schema_id: int, schema: Any, record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema, named_schemas={}), record)
    return b"\x00" + struct.pack(">I", schema_id) + buffer.getvalue()


@pytest.mark.parametrize("name", SCHEMAS)
def test_header_is_zero_and_big_endian_registered_id(name: str) -> None:
    registry = DictRegistry()
    codec = AvroCodec(name, registry)
    data = codec.encode(RECORDS[name])
    assert data[:5] == b"\x00" + struct.pack(">I", registry.subjects[f"deltalog-{name}"])
    assert data[:5] == b"\x00\x00\x00\x00\x64"


def test_custom_subject_is_registered() -> None:
    registry = DictRegistry()
    AvroCodec("progress", registry, subject="my-progress")
    assert list(registry.subjects) == ["my-progress"]


@pytest.mark.parametrize("name", SCHEMAS)
def test_round_trip_through_registry(name: str) -> None:
    codec = AvroCodec(name, DictRegistry())
    assert codec.decode(codec.encode(RECORDS[name])) == RECORDS[name]


def test_older_writer_schema_is_resolved_with_defaults() -> None:
    registry = DictRegistry()
    codec = AvroCodec("progress", registry)
    old_id = registry.add(PROGRESS_V0)
    data = _confluent(old_id, PROGRESS_V0, {"query": "tri", "registration": 3, "tx_last": 41})
    assert codec.decode(data) == {"query": "tri", "registration": 3, "tx_last": 41,
                                  "worker": ""}


@pytest.mark.parametrize("arm", ["Vector", "Edn"])
@pytest.mark.parametrize("name", ["result_change", "result_key"])
def test_rows_written_before_an_added_arm_are_read_by_the_current_schema(name: str,
                                                                         arm: str) -> None:
    """BACKWARD: the ``Vector`` ((min n ?x) aggregates) and ``Edn`` (pulled maps) arms were
    added at the end of the ``Value`` union, in that order, so a row written by the schema
    before either reads the same with them."""
    previous = json.loads(json.dumps(declared_schema(name)))
    values = next(f for f in previous["fields"] if f["name"] == "values")
    arms = [item["name"] if isinstance(item, dict) else item for item in values["type"]["items"]]
    assert arms[-2:] == ["Vector", "Edn"]
    values["type"]["items"] = values["type"]["items"][:arms.index(arm)]
    written = [1, 2.5, "x", True, {"name": "k/w"}, {"micros": -1}, UUID.bytes,
               {"items": [1, "y"]}] + ([{"elements": [3, 1, "x"]}] if arm == "Edn" else [])
    record = {**RECORDS[name], "values": written}
    registry = DictRegistry()
    codec = AvroCodec(name, registry)
    assert codec.decode(_confluent(registry.add(previous), previous, record)) == record


def test_single_object_framing_still_decodes_with_a_registry() -> None:
    data = AvroCodec("progress").encode(RECORDS["progress"])
    assert AvroCodec("progress", DictRegistry()).decode(data) == RECORDS["progress"]


def test_unresolvable_writer_schema_is_undecodable() -> None:
    registry = DictRegistry()
    codec = AvroCodec("progress", registry)
    other_id = registry.add(load_schema("result_key"))
    data = _confluent(other_id, load_schema("result_key"), RECORDS["result_key"])
    with pytest.raises(DecodeError) as caught:
        codec.decode(data)
    assert caught.value.code is ErrorCode.UNDECODABLE


@pytest.mark.parametrize("name", SCHEMAS)
def test_round_trip_through_registry_http_calls(name: str) -> None:
    registry = EchoRegistry()
    codec = AvroCodec(name, registry)
    assert codec.decode(codec.encode(RECORDS[name])) == RECORDS[name]
    codec.decode(codec.encode(RECORDS[name]))  # cached: no further calls
    assert registry.paths == [f"/subjects/deltalog-{name}/versions", "/schemas/ids/1"]


def test_registered_schema_is_the_declared_schema() -> None:
    registry = EchoRegistry()
    AvroCodec("transaction", registry)
    posted = json.loads(registry.posted[1])
    assert not [key for key in posted if key.startswith("__")]


def test_unknown_registry_id_is_a_dead_letter() -> None:
    registry = NotFoundRegistry("http://registry.invalid")
    registry._ids["deltalog-progress"] = 1  # registered earlier; no HTTP call needed
    codec = AvroCodec("progress", registry)
    data = b"\x00" + struct.pack(">I", 424242) + b"\x06tri\x06\x52\x00"
    with pytest.raises(DecodeError) as caught:
        codec.decode(data)
    assert caught.value.code is ErrorCode.UNKNOWN_SCHEMA
