"""Avro encoding of deltalog's records, with the framing decided here (DESIGN §6).

Without a registry: Avro single-object encoding — ``C3 01`` + the 8-byte little-endian
CRC-64-AVRO fingerprint of the schema's canonical form + the binary body.  With a registry:
the Confluent wire format — ``00`` + 4-byte big-endian schema id + body.  ``decode`` accepts
both, and raises :class:`DecodeError` (a dead letter) for anything else.
"""

from __future__ import annotations

import io
import json
import struct
import urllib.error
import urllib.request
from functools import cache
from importlib import resources
from typing import Any

import fastavro
from fastavro.schema import fingerprint as avro_fingerprint
from fastavro.schema import to_parsing_canonical_form

from workers.errors import ErrorCode, WorkersError
from workers.kafka.plain_transactions import read_plain_transaction

SINGLE_OBJECT_MAGIC = b"\xc3\x01"
CONFLUENT_MAGIC = b"\x00"
SCHEMAS = ("transaction", "query_registration", "result_change", "result_key", "progress",
           "dead_letter", "view_row", "tx_report")
# schema -> a reader of the common bodies written with its current version, faster than
# fastavro's; None: not one it reads
SHORTCUTS = {"transaction": read_plain_transaction}
REGISTRY_TIMEOUT_S = 10.0  # one HTTP round trip to the schema registry
HTTP_NOT_FOUND = 404


class DecodeError(WorkersError):
    """Bytes that are not a record of the expected schema (undecodable or unknown schema)."""

    code = ErrorCode.UNDECODABLE


@cache
def declared_schema(name: str) -> dict[str, Any]:
    """``schemas/<name>.avsc`` as written (what a schema registry is given)."""
    text = resources.files("workers").joinpath("schemas", f"{name}.avsc").read_text()
    schema = json.loads(text)
    assert isinstance(schema, dict)
    return schema


@cache
def load_schema(name: str) -> Any:
    """The parsed schema ``schemas/<name>.avsc``."""
    return fastavro.parse_schema(declared_schema(name), named_schemas={})


@cache
def previous_schemas(name: str) -> tuple[Any, ...]:
    """The earlier versions of ``schemas/<name>.avsc`` (``schemas/previous/<name>.N.avsc``):
    records they wrote stay readable — the tx log is read again from its start on replay."""
    folder = resources.files("workers").joinpath("schemas", "previous")
    if not folder.is_dir():
        return ()
    return tuple(fastavro.parse_schema(json.loads(file.read_text()), named_schemas={})
                 for file in sorted(folder.iterdir(), key=lambda f: f.name)
                 if file.name.startswith(f"{name}.") and file.name.endswith(".avsc"))


def fingerprint(schema: Any) -> bytes:
    """CRC-64-AVRO of the schema's parsing canonical form, little-endian, as the spec writes it."""
    return bytes.fromhex(avro_fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))


class SchemaRegistry:
    """The two calls of a Confluent Schema Registry deltalog needs, with caching."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._ids: dict[str, int] = {}
        self._schemas: dict[int, Any] = {}

    def register(self, subject: str, schema: Any) -> int:
        if subject not in self._ids:
            body = json.dumps({"schema": json.dumps(schema)}).encode()
            reply = self._call(f"/subjects/{subject}/versions", body)
            self._ids[subject] = int(reply["id"])
        return self._ids[subject]

    def schema(self, schema_id: int) -> Any:
        """The writer schema of ``schema_id``; an id the registry does not know is a
        :class:`DecodeError` (a dead letter), an unreachable registry a :class:`WorkersError`
        (the worker stops and retries on restart instead of dead-lettering good records)."""
        if schema_id not in self._schemas:
            try:
                reply = self._call(f"/schemas/ids/{schema_id}")
            except urllib.error.HTTPError as err:
                if err.code == HTTP_NOT_FOUND:
                    raise DecodeError(f"unknown schema: the registry has no schema id "
                                      f"{schema_id}", code=ErrorCode.UNKNOWN_SCHEMA) from err
                raise WorkersError(f"schema registry {self.url}: {err}",
                                   code=ErrorCode.REGISTRY) from err
            except (urllib.error.URLError, OSError) as err:
                raise WorkersError(f"schema registry {self.url} unreachable: {err}",
                                   code=ErrorCode.REGISTRY) from err
            self._schemas[schema_id] = fastavro.parse_schema(json.loads(reply["schema"]),
                                                             named_schemas={})
        return self._schemas[schema_id]

    def _call(self, path: str, body: bytes | None = None) -> Any:
        request = urllib.request.Request(self.url + path, data=body, headers={
            "Content-Type": "application/vnd.schemaregistry.v1+json"})
        with urllib.request.urlopen(request, timeout=REGISTRY_TIMEOUT_S) as reply:
            return json.loads(reply.read())


def registry_for(url: str | None) -> SchemaRegistry | None:
    """The registry at ``url``, or None (single-object framing) when no URL is configured."""
    return SchemaRegistry(url) if url else None


class AvroCodec:
    """Encode and decode one record type with deltalog's framing."""

    def __init__(self, name: str, registry: SchemaRegistry | None = None,
                 subject: str | None = None) -> None:
        self.name = name
        self.schema = load_schema(name)
        self._registry = registry
        self._shortcut = SHORTCUTS.get(name)
        self._fingerprint = fingerprint(self.schema)
        # writer schemas by fingerprint: this one and its earlier versions
        self._writers = {fingerprint(s): s for s in (*previous_schemas(name), self.schema)}
        self.header: bytes  # the framing that every record encoded here starts with
        if registry is None:
            self.header = SINGLE_OBJECT_MAGIC + self._fingerprint
        else:
            schema_id = registry.register(subject or f"deltalog-{name}", declared_schema(name))
            self.header = CONFLUENT_MAGIC + struct.pack(">I", schema_id)

    def encode(self, record: dict[str, Any]) -> bytes:
        return self.header + self.body(record)

    def body(self, record: dict[str, Any]) -> bytes:
        """The record's Avro binary encoding, without the framing: a record's encoding is its
        fields' end to end, so records sharing a field can be spliced around its body."""
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, self.schema, record)
        return buffer.getvalue()

    def decode(self, data: bytes) -> dict[str, Any]:
        """Decode either framing; a writer schema other than ours (an earlier version, or
        the registry's) is resolved to ours; one written with ours, read by the schema's
        shortcut if it can (``SHORTCUTS``)."""
        if self._shortcut is not None and data.startswith(self.header):
            record = self._shortcut(data[len(self.header):])
            if record is not None:
                return record
        if data[:2] == SINGLE_OBJECT_MAGIC and len(data) >= 10:
            found = data[2:10]
            writer = self._writers.get(found)
            if writer is None:
                raise DecodeError(f"unknown schema: fingerprint {found.hex()} is not "
                                  f"{self.name} ({self._fingerprint.hex()}) nor an earlier "
                                  "version of it", code=ErrorCode.UNKNOWN_SCHEMA)
            return self._read(data[10:], writer)
        if data[:1] == CONFLUENT_MAGIC and len(data) >= 5:
            if self._registry is None:
                raise DecodeError("Confluent-framed record but no schema registry is "
                                  "configured (set the registry URL)",
                                  code=ErrorCode.UNKNOWN_SCHEMA)
            (schema_id,) = struct.unpack_from(">I", data, 1)
            return self._read(data[5:], self._registry.schema(schema_id))
        raise DecodeError(f"not a deltalog Avro record: starts with {data[:2].hex() or 'nothing'}"
                          f" (expected c301 single-object or 00 Confluent framing)")

    def _read(self, body: bytes, writer: Any) -> dict[str, Any]:
        try:
            record = fastavro.schemaless_reader(io.BytesIO(body), writer, self.schema)
        except Exception as err:
            raise DecodeError(f"undecodable {self.name} record: {err!r}") from err
        assert isinstance(record, dict)
        return record
