"""Attribute schema (Datomic): what a schema entity declares of an attribute.

Schema is data: a schema entity ``{:db/ident :name :db/valueType :db.type/string}`` is stored
as datoms ``[:name :db/valueType :db.type/string]`` like any other, and :class:`Schema` is
derived from those datoms.  Undeclared attributes are cardinality-many and untyped.

The keys the engine implements: ``:db/valueType``, ``:db/cardinality``, ``:db/unique``
(``:db.unique/identity`` upserts, ``:db.unique/value`` refuses a second owner) and
``:db/isComponent``; ``:db/doc``, ``:db/index`` and ``:db/noHistory`` change nothing here
(every attribute is indexed; no history is kept) and are stored as data.  Any other schema
key Datomic knows (``:db/tupleAttrs``, ``:db/fulltext``, ...) is refused, never accepted and
ignored.
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
UNIQUE = keyword("db/unique")
UNIQUE_IDENTITY = keyword("db.unique/identity")
UNIQUE_VALUE = keyword("db.unique/value")
IS_COMPONENT = keyword("db/isComponent")
REF = keyword("db.type/ref")
# The schema attributes whose datoms change what the engine does.
SCHEMA_ATTRIBUTES = frozenset({DB_IDENT, VALUE_TYPE, CARDINALITY, UNIQUE, IS_COMPONENT})
# Datomic's schema keys the engine does not implement: refused where a transaction asserts them.
UNSUPPORTED_ATTRIBUTES = frozenset(keyword(name) for name in (
    "db/tupleAttrs", "db/tupleType", "db/tupleTypes", "db/fulltext", "db.attr/preds",
    "db/ensure"))


@dataclass(frozen=True, slots=True)
class Attribute:
    """What the schema says about one attribute; ``value_type`` None means untyped,
    ``unique`` is ``:db.unique/identity``, ``:db.unique/value`` or None."""

    value_type: Any = None
    cardinality_one: bool = False
    unique: Any = None
    component: bool = False

    @property
    def identity(self) -> bool:
        """Whether the attribute is a unique identity: a tempid asserting it upserts."""
        return self.unique == UNIQUE_IDENTITY


UNDECLARED = Attribute()


class Schema:
    """Attribute definitions, looked up on every datom of every transaction."""

    __slots__ = ("_attributes", "_components", "_refs", "_unique")

    def __init__(self, attributes: Mapping[Any, Attribute] | None = None) -> None:
        self._attributes: dict[Any, Attribute] = dict(attributes or {})
        # Derived once: the schema changes rarely, and these are asked of every transaction.
        self._refs = frozenset(a for a, d in self._attributes.items() if d.value_type == REF)
        self._unique = frozenset(a for a, d in self._attributes.items() if d.unique is not None)
        self._components = frozenset(a for a, d in self._attributes.items() if d.component)

    def __getitem__(self, attribute: Any) -> Attribute:
        return self._attributes.get(attribute, UNDECLARED)

    def items(self) -> Iterable[tuple[Any, Attribute]]:
        """The declared attributes and what is declared of each (a snapshot stores them)."""
        return self._attributes.items()

    def is_ref(self, attribute: Any) -> bool:
        return attribute in self._refs

    def ref_attributes(self) -> frozenset[Any]:
        return self._refs

    def unique_attributes(self) -> frozenset[Any]:
        """The attributes declared ``:db/unique`` (identity or value)."""
        return self._unique

    def component_attributes(self) -> frozenset[Any]:
        return self._components

    def updated(self, added: Iterable[tuple[Any, Any, Any]],
                retracted: Iterable[tuple[Any, Any, Any]]) -> Schema:
        """The schema after a transaction's schema datoms (``retracted``: only datoms present in
        the database); invalid definitions raise.  Whether the data allows the change is
        :func:`~workers.db.normalise.normalise`'s to check."""
        attributes = dict(self._attributes)
        for e, a, _ in retracted:
            if e not in attributes:
                continue
            if a == VALUE_TYPE:
                attributes[e] = replace(attributes[e], value_type=None)
            elif a == CARDINALITY:
                attributes[e] = replace(attributes[e], cardinality_one=False)
            elif a == UNIQUE:
                attributes[e] = replace(attributes[e], unique=None)
            elif a == IS_COMPONENT:
                attributes[e] = replace(attributes[e], component=False)
        for e, a, v in added:
            declared = attributes.get(e, UNDECLARED)
            if a == VALUE_TYPE:
                attributes[e] = replace(declared, value_type=_value_type(e, v, self))
            elif a == CARDINALITY:
                attributes[e] = replace(declared, cardinality_one=_cardinality_one(e, v))
            elif a == UNIQUE:
                attributes[e] = replace(declared, unique=_unique(e, v))
            elif a == IS_COMPONENT:
                attributes[e] = replace(declared, component=_component(e, v))
        for e in {datom[0] for datom in added}:
            declared = attributes.get(e, UNDECLARED)
            if declared.component and declared.value_type not in (None, REF):
                raise TransactionError(f":db/isComponent {dumps(e)} must be a :db.type/ref "
                                       "attribute", code=ErrorCode.SCHEMA, form=e)
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


def _unique(attribute: Any, unique: Any) -> Any:
    if unique not in (UNIQUE_IDENTITY, UNIQUE_VALUE):
        raise TransactionError(
            f"unknown :db/unique {dumps(unique)} for {dumps(attribute)}; "
            "one of :db.unique/identity, :db.unique/value", code=ErrorCode.SCHEMA, form=unique)
    return unique


def _component(attribute: Any, flag: Any) -> bool:
    if type(flag) is not bool:
        raise TransactionError(f":db/isComponent of {dumps(attribute)} must be true or false, "
                               f"got {dumps(flag)}", code=ErrorCode.SCHEMA, form=flag)
    return flag


BUILTIN_SCHEMA = Schema({
    DB_IDENT: Attribute(keyword("db.type/keyword"), cardinality_one=True, unique=UNIQUE_IDENTITY),
    VALUE_TYPE: Attribute(keyword("db.type/keyword"), cardinality_one=True),
    CARDINALITY: Attribute(keyword("db.type/keyword"), cardinality_one=True),
    UNIQUE: Attribute(keyword("db.type/keyword"), cardinality_one=True),
    IS_COMPONENT: Attribute(keyword("db.type/boolean"), cardinality_one=True),
})
