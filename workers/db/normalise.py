"""Operations + current database → the transaction's effective delta (Datomic semantics).

```
delta = { d: +1 | d asserted, d not in db } ∪ { d: -1 | d retracted, d in db }
```
The database is a set: asserting a present datom or retracting an absent one is a no-op.
A transaction's entities are resolved first (:mod:`workers.db.resolve`: tempids, upserts,
lookup refs, nested maps).  Then, in order:

1. ``[:db/retract e a]`` retracts every value of ``a`` on ``e``; ``[:db/retractEntity e]``
   every datom of ``e``, the refs pointing at it, and its components' (recursively);
2. ``[:db/cas e a old new]`` asserts ``new`` if ``e``'s ``a`` is ``old`` now (``nil``: none;
   of a cardinality-many attribute, one of its values), else refuses the transaction,
   naming the datom (Datascript's rule);
3. a datom both asserted and retracted refuses it (Datomic's datoms-conflict);
4. schema datoms update the schema — refused when the data breaks the new definition
   (cardinality one over several values, uniqueness over a shared value, a value type over
   values of another);
5. a value of the wrong declared type refuses it; a cardinality-one assertion retracts the
   attribute's other value (two asserted values conflict);
6. a unique value (``:db/unique``) held by two entities after it refuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from workers.db.reader import DatabaseReader
from workers.db.resolve import names_in_values, resolve
from workers.db.schema import SCHEMA_ATTRIBUTES, UNSUPPORTED_ATTRIBUTES, Attribute, Schema
from workers.db.tx import Datom, TxOps
from workers.db.values import VALUE_TYPES, type_name
from workers.edn import dumps
from workers.errors import ErrorCode, TransactionError
from workers.zset import ZSet
from workers.zset.row import Row, same, value_key


@dataclass(frozen=True, slots=True)
class Normalised:
    """A transaction's effective delta, the schema in force after it, and the ids its
    named tempids were given."""

    delta: ZSet[Datom]
    schema: Schema
    tempids: dict[Any, int]


def normalise(ops: TxOps, db: DatabaseReader, schema: Schema, tx: int) -> Normalised:
    """Turn the ops of the transaction numbered ``tx`` into its effective delta against
    ``db`` (the module's steps)."""
    tempids: dict[Any, int] = {}
    if ops.named or names_in_values(ops.adds, schema):
        resolved = resolve(ops, db, schema, tx)
        ops, tempids = resolved.ops, resolved.tempids
    # Step 1: what retractions of attributes and entities retract.
    retracts = set(map(Row, ops.retracts))  # datoms as Rows: 1, 1.0 and true stay apart
    for e, a in ops.retract_attributes:
        retracts.update(Row((e, a, v)) for v in db.values(e, a))
    if ops.retract_entities:
        retracts |= _entity_retractions(ops.retract_entities, db, schema)
    adds = set(map(Row, ops.adds))
    # Step 2: compare and swap.
    for e, a, old, new in ops.cas:
        _compare(e, a, old, new, db)
        adds.add(Row((e, a, new)))  # a cardinality-one attribute's old value goes in step 5
    # Steps 3-5.
    _refuse_conflicts(adds, retracts)
    schema_retracts = [d for d in retracts if d[1] in SCHEMA_ATTRIBUTES and db.has(d)]
    attributes = {datom[1] for datom in adds}
    if not attributes.isdisjoint(UNSUPPORTED_ATTRIBUTES):
        datom = next(d for d in adds if d[1] in UNSUPPORTED_ATTRIBUTES)
        raise TransactionError(f"{dumps(datom[1])} is not supported (in {dumps(datom)}): "
                               "deltalog does not maintain it", code=ErrorCode.SCHEMA,
                               form=datom)
    if schema_retracts or not attributes.isdisjoint(SCHEMA_ATTRIBUTES):
        updated = schema.updated(adds, schema_retracts)
        _check_schema_change(schema, updated, db)
        schema = updated
    _check_types(adds, schema)
    retracts |= _cardinality_one_retractions(adds, db, schema)
    delta = {d: 1 for d in adds if not db.has(d)}
    delta.update((d, -1) for d in retracts if db.has(d))
    # Step 6.
    if schema.unique_attributes():
        _check_unique(delta, db, schema)
    return Normalised(delta, schema, tempids)


def _entity_retractions(entities: list[Any], db: DatabaseReader, schema: Schema
                        ) -> set[Datom]:
    """The datoms of ``entities``, of the refs pointing at them, and of their components,
    recursively (Datomic's retractEntity)."""
    retracts: set[Datom] = set()
    components = schema.component_attributes()
    seen: set[Any] = set()
    todo = list(entities)
    while todo:
        e = todo.pop()
        if e in seen:
            continue
        seen.add(e)
        for datom in db.entity_datoms(e):
            retracts.add(Row(datom))
            if datom[1] in components:
                todo.append(datom[2])
        for a in schema.ref_attributes():
            retracts.update(map(Row, db.referrers(e, a)))
    return retracts


def _compare(e: Any, a: Any, old: Any, new: Any, db: DatabaseReader) -> None:
    """Refuse the transaction unless ``e``'s ``a`` is ``old`` (None: no value) now."""
    now = list(db.values(e, a))
    if (not now) if old is None else any(same(old, x) for x in now):
        return
    held = ", ".join(sorted(map(dumps, now))) or "no value"
    raise TransactionError(f"compare-and-swap failed: [:db/cas {dumps(e)} {dumps(a)} "
                           f"{dumps(old)} {dumps(new)}]: {dumps(e)} {dumps(a)} is {held}",
                           code=ErrorCode.TX_CAS, form=[e, a, old, new])


def _check_schema_change(old: Schema, new: Schema, db: DatabaseReader) -> None:
    """Refuse a schema change the data breaks: cardinality one over an entity with several
    values, uniqueness over a value two entities hold, a value type over other values."""
    for attribute, declared in new.items():
        before = old[attribute]
        if declared == before:
            continue
        checks = []
        if declared.cardinality_one and not before.cardinality_one:
            checks.append("one")
        if declared.unique is not None and before.unique is None:
            checks.append("unique")
        if declared.value_type is not None and before.value_type is None:
            checks.append("type")
        if checks:
            _check_data(attribute, declared, checks, db)


def _check_data(attribute: Any, declared: Attribute, checks: list[str],
                db: DatabaseReader) -> None:
    values_of: dict[Any, Any] = {}
    owners: dict[Any, Any] = {}
    valid = VALUE_TYPES.get(declared.value_type)
    for e, _, v in db.attribute_datoms(attribute):
        if "one" in checks and values_of.setdefault(e, v) is not v and not same(
                values_of[e], v):
            raise TransactionError(f"cannot make {dumps(attribute)} :db.cardinality/one: "
                                   f"entity {dumps(e)} holds several values "
                                   f"({dumps(values_of[e])}, {dumps(v)})",
                                   code=ErrorCode.SCHEMA, form=attribute)
        if "unique" in checks and owners.setdefault(value_key(v), e) != e:
            raise TransactionError(f"cannot make {dumps(attribute)} unique: the value "
                                   f"{dumps(v)} is held by entities {dumps(owners[value_key(v)])} "
                                   f"and {dumps(e)}", code=ErrorCode.SCHEMA, form=attribute)
        if "type" in checks and valid is not None and not valid(v):
            raise TransactionError(f"cannot declare {dumps(attribute)} :db/valueType "
                                   f"{dumps(declared.value_type)}: entity {dumps(e)} holds "
                                   f"{dumps(v)} ({type_name(v)})", code=ErrorCode.SCHEMA,
                                   form=attribute)


def _check_unique(delta: ZSet[Datom], db: DatabaseReader, schema: Schema) -> None:
    """Step 6: each unique value asserted is held by one entity after the transaction."""
    unique = schema.unique_attributes()
    asserted: dict[tuple[Any, Any], Any] = {}
    for datom, weight in delta.items():
        e, a, v = datom
        if weight < 0 or a not in unique:
            continue
        key = (a, value_key(v))
        other = asserted.setdefault(key, e)
        if other == e:
            others = [x for x, _, held in db.referrers(v, a)
                      if x != e and same(held, v) and delta.get(Row((x, a, held)), 0) >= 0]
            if not others:
                continue
            other = others[0]
        raise TransactionError(f"unique conflict: [{dumps(a)} {dumps(v)}] is held by entity "
                               f"{dumps(other)}; the transaction asserts it for entity "
                               f"{dumps(e)} ({dumps(schema[a].unique)})",
                               code=ErrorCode.TX_UNIQUE, form=datom)


_ATTRIBUTE = itemgetter(1)


def check_plain(ops: TxOps, schema: Schema) -> tuple[set[Datom], set[Datom]]:
    """A plain transaction's added and retracted datoms, or the :class:`TransactionError`
    :func:`normalise` raises for it — the same checks in the same order on the same sets
    (an empty database stands in: none of them reads it)."""
    adds, retracts = set(map(Row, ops.adds)), set(map(Row, ops.retracts))
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

    def attribute_datoms(self, a: Any) -> Iterator[Datom]:
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
        retracts.update(Row((e, a, old)) for old in db.values(e, a) if not same(old, v))
    return retracts
