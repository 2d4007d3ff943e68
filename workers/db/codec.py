"""Values and schemas as plain data (tags and texts, never pickles): what files that other
processes read hold — a snapshot, and a state a fleet shares (no file read runs code).

Longs are kept as int64 numbers by their readers; every other value is a one-letter type tag
and a text (``s`` a string, ``k`` a keyword, ``d`` a double, ...); a value a query computes
(a function's vector, set or map; nil, a decimal, a symbol, an int beyond int64) is ``e``
and a JSON text of its parts, each ``[tag, text]`` or ``[tag, [parts]]``, read back as
exactly its type (a tuple stays a tuple).
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import edn_format
from edn_format.immutable_dict import ImmutableDict
from edn_format.immutable_list import ImmutableList

from workers.db.schema import BUILTIN_SCHEMA, Attribute, Schema
from workers.edn import keyword

# Each object value as (tag, text), and back (ints are in the dictionary's int64 column).
_ENCODE: tuple[tuple[type, str, Callable[[Any], str]], ...] = (
    (bool, "b", lambda x: "true" if x else "false"),
    (edn_format.Keyword, "k", lambda x: str(x.name)),
    (str, "s", str),
    (float, "d", repr),
    (uuid.UUID, "u", str),
    (datetime.datetime, "t", datetime.datetime.isoformat),
    (datetime.date, "D", datetime.date.isoformat),
)
DECODE: dict[str, Callable[[str], Any]] = {
    "b": lambda text: text == "true", "k": keyword, "s": str, "d": float,
    "u": uuid.UUID, "t": datetime.datetime.fromisoformat, "D": datetime.date.fromisoformat,
}
# A schema as JSON: per attribute its value's tag and text, cardinality one or not, the tag
# and text of its value type when it declares one, and last, when it declares either, a map
# of its uniqueness ("identity" or "value") and whether it is a component (files written
# before those keys existed end without the map).
SchemaData = list[list[Any]]


# The collections of an ``e`` value's parts, by exact type (a subclass is not its base).
_COLLECTIONS: dict[type, str] = {tuple: "V", ImmutableList: "L", list: "l", frozenset: "F",
                                 set: "S", ImmutableDict: "I", dict: "M"}
_OF_TAG: dict[str, Callable[[Any], Any]] = {tag: kind for kind, tag in _COLLECTIONS.items()}


def encode_value(x: Any) -> tuple[str, str]:
    """A value that is not a long as its tag and text."""
    for kind, tag, text in _ENCODE:
        if isinstance(x, kind):
            return tag, text(x)
    return "e", json.dumps(_part(x), ensure_ascii=False)


def _part(x: Any) -> list[Any]:
    """One part of an ``e`` value (TypeError: a kind no file holds)."""
    if type(x) is int:
        return ["i", str(x)]
    for kind, tag, text in _ENCODE:
        if isinstance(x, kind):
            return [tag, text(x)]
    if x is None:
        return ["n", ""]
    if isinstance(x, Decimal):
        return ["m", str(x)]
    if isinstance(x, edn_format.Symbol):
        return ["y", str(x.name)]
    collection = _COLLECTIONS.get(type(x))
    if collection is None:
        raise TypeError(f"a stored value cannot be of type {type(x).__name__}: {x!r}")
    if isinstance(x, Mapping):
        return [collection, [[_part(k), _part(v)] for k, v in x.items()]]
    return [collection, [_part(i) for i in x]]


def _value_of(part: list[Any]) -> Any:
    """The value of one part of an ``e`` value."""
    tag, body = part
    if tag == "i":
        return int(body)
    if tag in DECODE:
        return DECODE[tag](body)
    if tag in ("n", "m", "y"):
        return None if tag == "n" else Decimal(body) if tag == "m" else edn_format.Symbol(body)
    kind = _OF_TAG[tag]
    if tag in ("I", "M"):
        return kind({_value_of(k): _value_of(v) for k, v in body})
    return kind(_value_of(i) for i in body)


DECODE["e"] = lambda text: _value_of(json.loads(text))


def decode_value(tag: str, text: str) -> Any:
    return DECODE[tag](text)


def encode_schema(schema: Schema) -> SchemaData:
    return [[*encode_value(attribute), declared.cardinality_one,
             *(encode_value(declared.value_type) if declared.value_type else ()),
             *([_flags(declared)] if declared.unique or declared.component else [])]
            for attribute, declared in schema.items()]


def _flags(declared: Attribute) -> dict[str, Any]:
    return {"unique": declared.unique.name.split("/")[1] if declared.unique else None,
            "component": declared.component}


def decode_schema(data: SchemaData) -> Schema:
    attributes = dict(BUILTIN_SCHEMA.items())  # a file older than a built-in keeps it
    for tag, text, one, *rest in data:
        flags = rest.pop() if rest and isinstance(rest[-1], dict) else {}
        unique = flags.get("unique")
        attributes[decode_value(tag, text)] = Attribute(
            decode_value(*rest) if rest else None, cardinality_one=bool(one),
            unique=keyword(f"db.unique/{unique}") if unique else None,
            component=bool(flags.get("component")))
    return Schema(attributes)
