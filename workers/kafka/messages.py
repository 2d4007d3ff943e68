"""Domain values ↔ the dicts fastavro reads and writes (schemas in ``schemas/``).

EDN values map onto the Avro ``Value`` union: long, double, string, boolean as themselves;
keywords as ``Keyword {name}``, instants as ``Instant {micros}`` (UTC), uuids as the 16-byte
``Uuid``; the set a ``(distinct ?x)`` aggregate returns as ``Set {items}``, the vector a
``(min n ?x)`` aggregate returns (a tuple) as ``Vector {elements}``; any other value — a
pulled entity map, or nil — as ``Edn {text}``, its canonical EDN text.  A value keeps its
kind both ways (``1``, ``1.0``, ``true`` are three arms); decoded rows are
:class:`~workers.zset.row.Row` and sets :class:`~workers.zset.row.ValueSet`.
A transaction travels as its ops (entity maps expanded to ``:db/add``s; tempids as the
negative longs and strings they are, lookup refs as ``LookupRef {attribute, value}``) so the
worker never parses EDN text — unless its ops cannot carry it (an entity map that only the
schema can expand: nested, reverse, or without ``:db/id``): then it travels as EDN text.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import edn_format

from workers import edn
from workers.datalog.pull import frozen
from workers.db import parse_tx
from workers.db.schema import DB_ID
from workers.db.tx import (
    DB_ADD,
    DB_CAS,
    DB_RETRACT,
    DB_RETRACT_ENTITY,
    LookupRef,
    TempId,
    TxOps,
)
from workers.edn import keyword
from workers.zset.row import Row, ValueSet

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


_AS_IS = frozenset({int, str, float, bool})  # what Avro's Value union takes unchanged


def value_to_avro(value: Any) -> Any:
    if type(value) in _AS_IS:  # the common case, before the isinstance checks (an ABC's)
        return value
    if isinstance(value, Mapping | list) or value is None:
        return {"text": canonical_edn(value)}
    if isinstance(value, frozenset):
        return {"items": [value_to_avro(x) for x in value]}
    if isinstance(value, tuple):
        return {"elements": [value_to_avro(x) for x in value]}
    if isinstance(value, edn_format.Keyword):
        return {"name": value.name}
    if isinstance(value, datetime.datetime | datetime.date):
        return {"micros": _micros(value)}
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value


def value_from_avro(value: Any) -> Any:
    if isinstance(value, dict):
        if "text" in value:
            return frozen(edn.read(value["text"]))
        if "items" in value:
            return ValueSet(value_from_avro(x) for x in value["items"])
        if "elements" in value:
            return tuple(value_from_avro(x) for x in value["elements"])
        if "name" in value:
            return keyword(value["name"])
        return EPOCH + datetime.timedelta(microseconds=value["micros"])
    if isinstance(value, bytes):
        return uuid.UUID(bytes=value)
    return value


def canonical_edn(value: Any) -> str:
    """EDN text that depends on the value only: map entries and set items sorted by their
    own text, so equal maps make equal result keys (a compacted topic keys rows by bytes)."""
    if isinstance(value, Mapping):
        entries = sorted(f"{canonical_edn(k)} {canonical_edn(v)}" for k, v in value.items())
        return "{" + ", ".join(entries) + "}"
    if isinstance(value, list | tuple):
        return "[" + " ".join(canonical_edn(x) for x in value) + "]"
    if isinstance(value, frozenset | set):
        return "#{" + " ".join(sorted(canonical_edn(x) for x in value)) + "}"
    return edn.dumps(value)


def _micros(value: datetime.date) -> int:
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.UTC)
    elif value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return (value - EPOCH) // datetime.timedelta(microseconds=1)


def transaction_to_avro(forms: Any, source: str | None = None,
                        ops: TxOps | None = None) -> dict[str, Any]:
    """A transaction's forms (EDN text read, or Python values) as a ``Transaction`` record;
    ``ops``: the forms already parsed (:func:`parse_tx`), when the caller has them."""
    ops = parse_tx(forms) if ops is None else ops
    if ops.maps or any(type(x) is TempId and x.name is None
                       for datom in ops.adds for x in (datom[0], datom[2])):
        return {"ops": [], "source": source, "edn": edn.dumps(forms)}
    records = [_op("ADD", e, a, v) for e, a, v in ops.adds]
    records += [_op("RETRACT", e, a, v) for e, a, v in ops.retracts]
    records += [_op("RETRACT_ATTRIBUTE", e, a, None) for e, a in ops.retract_attributes]
    records += [_op("RETRACT_ENTITY", e, None, None) for e in ops.retract_entities]
    records += [_op("CAS", e, a, new, old) for e, a, old, new in ops.cas]
    return {"ops": records, "source": source, "edn": None}


def named_tempids(ops: TxOps) -> bool:
    """Whether a parsed transaction names a tempid where it surely is one — an entity
    position or a map's ``:db/id`` — so that its report, saying the ids, will come (a string
    value is a tempid only under a ref attribute, which the schema says)."""
    entities = [d[0] for d in ops.adds + ops.retracts] + [c[0] for c in ops.cas]
    entities += [form.get(DB_ID) for _, form in ops.maps]
    return any((type(x) is TempId and x.name is not None) or type(x) is str
               or (type(x) is int and x < 0) for x in entities)


def _op(kind: str, e: Any, a: Any, v: Any, old: Any = None) -> dict[str, Any]:
    return {"op": kind, "e": _named_to_avro(e), "a": None if a is None else a.name,
            "v": None if v is None else _named_to_avro(v),
            "old": None if old is None else _named_to_avro(old)}


def _named_to_avro(x: Any) -> Any:
    """An op's entity or value: a tempid as written, a lookup ref as ``LookupRef``."""
    if type(x) is TempId:
        return x.name
    if type(x) is LookupRef:
        return {"attribute": x.attribute.name, "value": value_to_avro(x.value)}
    return value_to_avro(x)


def _named_from_avro(x: Any) -> Any:
    if isinstance(x, dict) and "attribute" in x:
        return [keyword(x["attribute"]), value_from_avro(x["value"])]
    return value_from_avro(x)


_OP_FORMS = {"ADD": DB_ADD, "RETRACT": DB_RETRACT, "RETRACT_ATTRIBUTE": DB_RETRACT,
             "RETRACT_ENTITY": DB_RETRACT_ENTITY, "CAS": DB_CAS}
_DATOM_FORMS = {"ADD": DB_ADD, "RETRACT": DB_RETRACT}  # the ops of an entity, attribute, value


def transaction_from_avro(record: dict[str, Any]) -> Any:
    """The transaction's ops as forms for ``Engine.transact`` (which validates them)."""
    if record.get("edn") is not None:
        return edn.read(record["edn"])
    forms = []
    for op in record["ops"]:
        e, a, v = op["e"], op["a"], op["v"]
        datom = _DATOM_FORMS.get(op["op"])
        if datom is not None and a is not None and type(e) in _AS_IS and type(v) in _AS_IS:
            forms.append([datom, e, keyword(a), v])  # the common op's :func:`op_form`, sooner
        else:
            forms.append(op_form(op))
    return forms


def op_form(op: dict[str, Any]) -> list[Any]:
    """An ``Op`` record as its form, whatever its kind and values."""
    kind = op["op"]
    form = [_OP_FORMS[kind], _named_from_avro(op["e"])]
    if op["a"] is not None:
        form.append(keyword(op["a"]))
    if kind == "CAS":
        form.append(None if op.get("old") is None else _named_from_avro(op["old"]))
    if kind in ("ADD", "RETRACT", "CAS"):
        form.append(None if op["v"] is None else _named_from_avro(op["v"]))
    return form


def row_to_avro(row: Sequence[Any]) -> list[Any]:
    return [value_to_avro(value) for value in row]


def row_from_avro(values: Sequence[Any]) -> Row:
    """A row as the engine made it: a :class:`~workers.zset.row.Row`, its booleans, doubles
    and longs as the ``Value`` union's arms say (``1``, ``1.0`` and ``true`` three rows)."""
    return Row(value_from_avro(value) for value in values)
