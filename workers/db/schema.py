"""Attribute schema (Datomic): ``:db/valueType`` and ``:db/cardinality`` per attribute.

Schema is data: a schema entity ``{:db/ident :name :db/valueType :db.type/string}`` is stored
as datoms ``[:name :db/valueType :db.type/string]`` like any other, and :class:`Schema` is
derived from those datoms.  Undeclared attributes are cardinality-many and untyped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from workers.db.values import VALUE_TYPES
from workers.edn import dumps, keyword
from workers.errors import ErrorCode, TransactionError

DB_IDENT = keyword("db/ident")
DB_ID = keyword("db/id")
VALUE_TYPE = keyword("db/valueType")
CARDINALITY = keyword("db/cardinality")
CARDINALITY_ONE = keyword("db.cardinality/one")
CARDINALITY_MANY = keyword("db.cardinality/many")
SCHEMA_ATTRIBUTES = frozenset({DB_IDENT, VALUE_TYPE, CARDINALITY})


@dataclass(frozen=True, slots=True)
class Attribute:
    """What the schema says about one attribute; ``value_type`` None means untyped."""

    value_type: Any = None
    cardinality_one: bool = False


UNDECLARED = Attribute()


class Schema:
    """Attribute definitions, looked up on every datom of every transaction."""

    __slots__ = ("_attributes",)

    def __init__(self, attributes: Mapping[Any, Attribute] | None = None) -> None:
        self._attributes: dict[Any, Attribute] = dict(attributes or {})

    def __getitem__(self, attribute: Any) -> Attribute:
        return self._attributes.get(attribute, UNDECLARED)

    def items(self) -> Iterable[tuple[Any, Attribute]]:
        """The declared attributes and what is declared of each (a snapshot stores them)."""
        return self._attributes.items()

    def is_ref(self, attribute: Any) -> bool:
        return self[attribute].value_type == keyword("db.type/ref")

    def ref_attributes(self) -> list[Any]:
        return [a for a in self._attributes if self.is_ref(a)]

    def updated(self, added: Iterable[tuple[Any, Any, Any]],
                retracted: Iterable[tuple[Any, Any, Any]]) -> Schema:
        """The schema after a transaction's schema datoms (``retracted``: only datoms present in
        the database); invalid definitions raise."""
        attributes = dict(self._attributes)
        for e, a, _ in retracted:
            if e in attributes and a == VALUE_TYPE:
                attributes[e] = replace(attributes[e], value_type=None)
            elif e in attributes and a == CARDINALITY:
                attributes[e] = replace(attributes[e], cardinality_one=False)
        for e, a, v in added:
            if a == VALUE_TYPE:
                declared = attributes.get(e, UNDECLARED)
                attributes[e] = replace(declared, value_type=_value_type(e, v, self))
            elif a == CARDINALITY:
                declared = attributes.get(e, UNDECLARED)
                attributes[e] = replace(declared, cardinality_one=_cardinality_one(e, v))
        return Schema(attributes)


def _value_type(attribute: Any, value_type: Any, current: Schema) -> Any:
    if value_type not in VALUE_TYPES:
        known = ", ".join(sorted(str(t) for t in VALUE_TYPES))
        raise TransactionError(
            f"unknown :db/valueType {dumps(value_type)} for {dumps(attribute)}; one of {known}",
            code=ErrorCode.SCHEMA, form=value_type)
    declared = current[attribute].value_type
    if declared is not None and declared != value_type:
        raise TransactionError(
            f"cannot change :db/valueType of {dumps(attribute)} from {dumps(declared)} "
            f"to {dumps(value_type)}", code=ErrorCode.SCHEMA, form=value_type)
    return value_type


def _cardinality_one(attribute: Any, cardinality: Any) -> bool:
    if cardinality not in (CARDINALITY_ONE, CARDINALITY_MANY):
        raise TransactionError(
            f"unknown :db/cardinality {dumps(cardinality)} for {dumps(attribute)}; "
            "one of :db.cardinality/one, :db.cardinality/many",
            code=ErrorCode.SCHEMA, form=cardinality)
    return bool(cardinality == CARDINALITY_ONE)


BUILTIN_SCHEMA = Schema({
    DB_IDENT: Attribute(keyword("db.type/keyword"), cardinality_one=True),
    VALUE_TYPE: Attribute(keyword("db.type/keyword"), cardinality_one=True),
    CARDINALITY: Attribute(keyword("db.type/keyword"), cardinality_one=True),
})
