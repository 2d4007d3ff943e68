"""Query registrations as they travel on ``deltalog.queries``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.edn import read
from workers.kafka.avro import AvroCodec


@dataclass(frozen=True, slots=True)
class Registration:
    name: str
    edn: str
    inputs: tuple[Any, ...]


def parse_registration(codec: AvroCodec, value: bytes) -> Registration:
    record = codec.decode(value)
    return Registration(record["name"], record["edn"],
                        tuple(read(text) for text in record["inputs"]))


def registration_record(name: str, edn: str, inputs: tuple[str, ...] = ()) -> dict[str, Any]:
    """The Avro record for a registration; ``inputs`` as EDN text."""
    return {"name": name, "edn": edn, "inputs": list(inputs)}
