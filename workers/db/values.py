"""Which Python values may be entity ids and datom values, and their Datomic type names."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any

import edn_format

from workers.edn import keyword

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1  # Datomic's and Avro's long


def is_entity_id(x: Any) -> bool:
    """A long, keyword, string or uuid (XTDB style: ``:ivan`` is an entity id)."""
    return _is_long(x) or isinstance(x, edn_format.Keyword | str | uuid.UUID)


def _is_long(x: Any) -> bool:
    """A 64-bit integer: larger ones would not survive Avro (or Datomic)."""
    return isinstance(x, int) and not isinstance(x, bool) and LONG_MIN <= x <= LONG_MAX


def _is_instant(x: Any) -> bool:
    return isinstance(x, datetime.datetime | datetime.date)


VALUE_TYPES: dict[Any, Callable[[Any], bool]] = {
    keyword("db.type/long"): _is_long,
    keyword("db.type/double"): lambda x: isinstance(x, float),
    keyword("db.type/float"): lambda x: isinstance(x, float),
    keyword("db.type/string"): lambda x: isinstance(x, str),
    keyword("db.type/boolean"): lambda x: isinstance(x, bool),
    keyword("db.type/keyword"): lambda x: isinstance(x, edn_format.Keyword),
    keyword("db.type/instant"): _is_instant,
    keyword("db.type/uuid"): lambda x: isinstance(x, uuid.UUID),
    keyword("db.type/ref"): is_entity_id,
}


def is_value(x: Any) -> bool:
    """Any value a datom may hold when its attribute is untyped."""
    return any(check(x) for check in VALUE_TYPES.values())


def type_name(x: Any) -> str:
    """A short name for the type of ``x`` in error messages."""
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, edn_format.Keyword):
        return "keyword"
    return {int: "long", float: "double", str: "string"}.get(type(x), type(x).__name__)

