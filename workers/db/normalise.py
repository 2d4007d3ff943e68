"""Operations + current database → the transaction's effective delta (Datomic semantics).

```
delta = { d: +1 | d asserted, d not in db } ∪ { d: -1 | d retracted, d in db }
```
The database is a set: asserting a present datom or retracting an absent one is a no-op.
A cardinality-one assertion retracts the attribute's other value.  A datom both asserted
and retracted, or two values asserted for one cardinality-one attribute, refuse the whole
transaction (Datomic's datoms-conflict), as does a value of the wrong declared type.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Protocol

from workers.db.schema import SCHEMA_ATTRIBUTES, Schema
from workers.db.tx import Datom, TxOps
from workers.db.values import VALUE_TYPES, type_name
from workers.edn import dumps
from workers.errors import ErrorCode, TransactionError


class DatabaseReader(Protocol):
    """The reads normalisation makes: the shared state, or the state plus a tick's
    pending delta (:class:`~workers.arrangements.PendingReader`)."""

    def has(self, datom: Datom) -> bool: ...

    def values(self, e: Any, a: Any) -> Iterator[Any]: ...

    def entity_datoms(self, e: Any) -> Iterator[Datom]: ...

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]: ...


@dataclass(frozen=True, slots=True)
class Normalised:
    """A transaction's effective delta and the schema in force after it."""

    delta: dict[Datom, int]
    schema: Schema


def normalise(ops: TxOps, db: DatabaseReader, schema: Schema) -> Normalised:
    """Turn one transaction's ops into its effective delta against ``db``."""
    retracts = set(ops.retracts)
    for e, a in ops.retract_attributes:
        retracts.update((e, a, v) for v in db.values(e, a))
    for e in ops.retract_entities:
        retracts.update(db.entity_datoms(e))
        for a in schema.ref_attributes():
            retracts.update(db.referrers(e, a))
    adds = set(ops.adds)
    _refuse_conflicts(adds, retracts)
    schema_retracts = [d for d in retracts if d[1] in SCHEMA_ATTRIBUTES and db.has(d)]
    if schema_retracts or any(a in SCHEMA_ATTRIBUTES for _, a, _ in adds):
        schema = schema.updated(adds, schema_retracts)
    _check_types(adds, schema)
    retracts |= _cardinality_one_retractions(adds, db, schema)
    delta = {d: 1 for d in adds if not db.has(d)}
    delta.update((d, -1) for d in retracts if db.has(d))
    return Normalised(delta, schema)


_ATTRIBUTE = itemgetter(1)


def check_plain(ops: TxOps, schema: Schema) -> tuple[set[Datom], set[Datom]]:
    """A plain transaction's added and retracted datoms, or the :class:`TransactionError`
    :func:`normalise` raises for it — the same checks in the same order on the same sets
    (an empty database stands in: none of them reads it)."""
    adds, retracts = set(ops.adds), set(ops.retracts)
    _refuse_conflicts(adds, retracts)
    attributes = [schema[a] for a in set(map(_ATTRIBUTE, adds))]
    if any(attribute.value_type is not None for attribute in attributes):
        _check_types(adds, schema)
    if any(attribute.cardinality_one for attribute in attributes):
        _cardinality_one_retractions(adds, _NOTHING, schema)
    return adds, retracts


class _Nothing:
    """The empty database."""

    def has(self, datom: Datom) -> bool:
        return False

    def values(self, e: Any, a: Any) -> Iterator[Any]:
        return iter(())

    def entity_datoms(self, e: Any) -> Iterator[Datom]:
        return iter(())

    def referrers(self, v: Any, a: Any) -> Iterator[Datom]:
        return iter(())


_NOTHING = _Nothing()


def _refuse_conflicts(adds: set[Datom], retracts: set[Datom]) -> None:
    both = adds & retracts
    if both:
        datom = min(both, key=repr)
        raise TransactionError(f"datoms conflict: {dumps(datom)} is both added and retracted "
                               "in one transaction", code=ErrorCode.TX_CONFLICT, form=datom)


def _check_types(adds: set[Datom], schema: Schema) -> None:
    for datom in adds:
        value_type = schema[datom[1]].value_type
        if value_type is not None and not VALUE_TYPES[value_type](datom[2]):
            raise TransactionError(
                f"value {dumps(datom[2])} ({type_name(datom[2])}) does not match "
                f"{dumps(datom[1])} :db/valueType {dumps(value_type)} in {dumps(datom)}",
                code=ErrorCode.TX_TYPE, form=datom)


def _cardinality_one_retractions(adds: set[Datom], db: DatabaseReader,
                                 schema: Schema) -> set[Datom]:
    """The old values replaced by cardinality-one assertions; two new values conflict."""
    chosen: dict[tuple[Any, Any], Datom] = {}
    retracts: set[Datom] = set()
    for datom in adds:
        e, a, v = datom
        if not schema[a].cardinality_one:
            continue
        other = chosen.setdefault((e, a), datom)
        if other != datom:
            first, second = sorted((dumps(other), dumps(datom)))
            raise TransactionError(f"datoms conflict: {first} and {second} assert two values "
                                   f"for cardinality-one {dumps(a)}", code=ErrorCode.TX_CONFLICT,
                                   form=datom)
        retracts.update((e, a, old) for old in db.values(e, a) if old != v)
    return retracts
