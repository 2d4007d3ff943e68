"""Datomic's ways of naming an entity, resolved to entity ids before a transaction is
normalised: tempids, upserts by unique identity, lookup refs, nested and reverse maps.

A transaction's ops may name entities that the database must be asked about
(:mod:`workers.db.tx`'s grammar); resolving one turns it into plain ops, in numbered steps:

1. expand its entity maps kept whole by the parser, with the schema: a nested map under a
   ref attribute is an entity of its own (Datomic's rule: the attribute is a component, or
   the map has a ``:db/id`` or a unique attribute), ``:p/_friend`` asserts ``:p/friend``
   from the other side, and a vector of two under a ref attribute is a lookup ref when its
   first element is a unique attribute;
2. resolve lookup refs ``[:p/email "a@x"]`` to the entity holding that value now (before the
   transaction), and mark the strings and negative longs in a ref attribute's values as
   tempids;
3. **upsert**: a tempid asserting a ``:db.unique/identity`` value is the entity that holds
   it — in the database, or in an explicit op of the same transaction; tempids asserting one
   identity value are one entity; a tempid whose values name two entities is refused;
4. give each tempid left a fresh id, in order of first appearance (below), and report the
   named ones: ``{tempid: id}``.

**Ids are a function of the log**: the ``n``-th new entity (from 0) of the transaction
numbered ``tx`` is ``2^62 + tx·2^20 + n``.  No counter is kept, so every worker of a fleet,
a worker replaying after a restart, and a Spark state shared by a fleet allocate the same
ids from the same log — and none of them has a counter to store.  Within 64-bit longs that
allows 2^20 new entities a transaction and transaction numbers (Kafka offsets) below 2^42;
ids below 2^62 are the application's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import edn_format

from workers.db.reader import DatabaseReader
from workers.db.schema import DB_ID, Schema
from workers.db.tx import (
    Datom,
    LookupRef,
    TempId,
    TxOps,
    forward,
    is_reverse,
    map_entity,
    parse_attribute,
    parse_entity,
    parse_value,
)
from workers.db.values import LONG_MIN
from workers.edn import dumps, show
from workers.errors import ErrorCode, TransactionError
from workers.zset.row import same, value_key

TEMPID_BASE = 1 << 62
NEW_ENTITY_BITS = 20  # new entities a transaction may make: 2^20
TX_LIMIT = 1 << 42  # transaction numbers that allocate ids: below 2^42


def allocated_id(tx: int, n: int) -> int:
    """The id of the ``n``-th new entity (from 0) of the transaction numbered ``tx``."""
    return TEMPID_BASE + (tx << NEW_ENTITY_BITS) + n


@dataclass(frozen=True, slots=True)
class Resolved:
    """A transaction's plain ops, and the ids its named tempids were given."""

    ops: TxOps
    tempids: dict[Any, int]


def resolve(ops: TxOps, db: DatabaseReader, schema: Schema, tx: int) -> Resolved:
    """The ops of the transaction numbered ``tx`` with every entity an id (the module's
    steps); what cannot be resolved raises :class:`TransactionError`.  Only a transaction
    that names entities (``ops.named``, or :func:`names_in_values`) needs it."""
    # Step 1: the maps, expanded with the schema where they stand.
    adds = _with_maps(ops, schema)
    # Step 2: lookup refs resolved; tempids in ref values marked.
    look = _Lookups(db, schema)
    adds = [(look.entity(e), a, look.value(a, v)) for e, a, v in adds]
    retracts = [(look.entity(e), a, look.value(a, v)) for e, a, v in ops.retracts]
    cas = [(look.entity(e), a, look.value(a, old), look.value(a, new))
           for e, a, old, new in ops.cas]
    retract_attributes = [(look.entity(e), a) for e, a in ops.retract_attributes]
    retract_entities = [look.entity(e) for e in ops.retract_entities]
    # Steps 3-4: upserts, then fresh ids in order of first appearance.
    ids = _identities(adds, db, schema)  # a tempid -> an id, or the tempid standing for it
    appearance = [x for datom in adds + retracts for x in (datom[0], datom[2])]
    appearance += [x for e, _, old, new in cas for x in (e, old, new)]
    appearance += [e for e, _ in retract_attributes] + retract_entities
    fresh: dict[TempId, int] = {}
    for x in appearance:
        if type(x) is TempId:
            standing = ids.setdefault(x, x)
            if type(standing) is TempId and standing not in fresh:
                fresh[standing] = _allocate(tx, len(fresh))
    final = {t: fresh.get(standing, standing) for t, standing in ids.items()}

    def plain(datom: tuple[Any, ...]) -> Any:
        return tuple(final[x] if type(x) is TempId else x for x in datom)

    resolved = TxOps([plain(d) for d in adds], [plain(d) for d in retracts],
                     [plain(d) for d in retract_attributes],
                     [final[e] if type(e) is TempId else e for e in retract_entities],
                     [plain(c) for c in cas])
    return Resolved(resolved, {t.name: i for t, i in final.items() if t.name is not None})


def named(ops: TxOps, schema: Schema) -> tuple[list[Any], list[Any]]:
    """What resolving and normalising ``ops`` reads, before it does (a Spark window fetches
    it): the entities its ops name by id, and the values whose owners it looks up — lookup
    refs' and unique attributes' (a map's too, expanded)."""
    adds = _with_maps(ops, schema)
    unique = schema.unique_attributes()
    entities: list[Any] = []
    values: list[Any] = []

    def entity(x: Any) -> None:
        if type(x) is LookupRef:
            values.append(x.value)
        elif type(x) is not TempId and x is not None:
            entities.append(x)

    for e, a, v in adds + ops.retracts:
        entity(e)
        if type(v) is LookupRef:
            values.append(v.value)
        elif a in unique:
            values.append(v)
    for e, _, old, new in ops.cas:
        entity(e)
        values += [x.value for x in (old, new) if type(x) is LookupRef]
    for e in [e for e, _ in ops.retract_attributes] + ops.retract_entities:
        entity(e)
    return entities, values


def _with_maps(ops: TxOps, schema: Schema) -> list[Datom]:
    """The transaction's adds with its maps expanded where they were written."""
    if not ops.maps:
        return list(ops.adds)
    adds: list[Datom] = []
    taken = 0
    for at, form in ops.maps:
        adds += ops.adds[taken:at]
        taken = at
        _expand(form, schema, adds)
    return adds + ops.adds[taken:]


def _allocate(tx: int, n: int) -> int:
    if not 0 <= tx < TX_LIMIT:
        raise TransactionError(f"transaction number {tx} is beyond {TX_LIMIT - 1}: it cannot "
                               "allocate entity ids for tempids", code=ErrorCode.TX_SHAPE)
    if n >= 1 << NEW_ENTITY_BITS:
        raise TransactionError(f"a transaction makes at most {1 << NEW_ENTITY_BITS} new "
                               "entities; split it", code=ErrorCode.TX_SHAPE)
    return allocated_id(tx, n)


def names_in_values(adds: Iterable[Datom], schema: Schema) -> bool:
    """Whether a plain op's value of a ref attribute is a tempid or a lookup ref."""
    refs = schema.ref_attributes()
    return bool(refs) and any(a in refs and _tempid_like(v) for _, a, v in adds)


def _tempid_like(v: Any) -> bool:
    return (type(v) is str or type(v) is LookupRef or type(v) is TempId
            or (type(v) is int and LONG_MIN <= v < 0))


class _Lookups:
    """Lookup refs resolved against the database before the transaction."""

    def __init__(self, db: DatabaseReader, schema: Schema) -> None:
        self.db, self.schema = db, schema

    def entity(self, e: Any) -> Any:
        return self.lookup(e) if type(e) is LookupRef else e

    def value(self, a: Any, v: Any) -> Any:
        """A value of attribute ``a``: a ref's tempid or lookup ref resolved or marked."""
        if v is None:
            return v
        if type(v) is LookupRef:
            if not self.schema.is_ref(a):
                raise TransactionError(f"unsupported value {_show(v)} (a vector) of {dumps(a)}: "
                                       "a lookup ref is the value of a :db.type/ref attribute "
                                       "only", code=ErrorCode.TX_TYPE, form=_form(v))
            return self.lookup(v)
        if self.schema.is_ref(a) and _tempid_like(v) and type(v) is not TempId:
            return TempId(v)
        return v

    def lookup(self, ref: LookupRef) -> Any:
        attribute = self.schema[ref.attribute]
        if attribute.unique is None:
            raise TransactionError(f"lookup ref {_show(ref)}: {dumps(ref.attribute)} is not a "
                                   "unique attribute (:db/unique)", code=ErrorCode.TX_LOOKUP,
                                   form=_form(ref))
        for e, _, v in self.db.referrers(ref.value, ref.attribute):
            if same(v, ref.value):
                return e
        raise TransactionError(f"lookup ref {_show(ref)} names no entity",
                               code=ErrorCode.TX_LOOKUP, form=_form(ref))


def _identities(adds: list[Datom], db: DatabaseReader, schema: Schema) -> dict[Any, Any]:
    """Step 3: each tempid asserting unique identities, as the entity they name (an id), or
    as the one tempid standing for all the tempids that assert one of its values."""
    identity = {a for a in schema.unique_attributes() if schema[a].identity}
    if not identity:
        return {}
    holders: dict[tuple[Any, Any], list[Any]] = {}  # (a, v) kept apart by kind -> who
    for e, a, v in adds:
        if a in identity and type(v) is not TempId:
            holders.setdefault((a, value_key(v)), []).append(e)
    parent: dict[Any, Any] = {}
    owner: dict[Any, tuple[Any, tuple[Any, Any]]] = {}  # root -> (entity, (a, v) naming it)

    def root(t: Any) -> Any:
        while parent.get(t, t) != t:
            t = parent[t]
        return t

    def claim(tempid: Any, e: Any, named_by: tuple[Any, Any]) -> None:
        """``tempid``'s entity is ``e`` (named by ``named_by``): a second one conflicts."""
        top = root(tempid)
        found = owner.setdefault(top, (e, named_by))
        if found[0] != e:
            raise TransactionError(
                f"upsert conflict: tempid {_tempid(tempid)} names entity {dumps(e)} by "
                f"[{dumps(named_by[0])} {dumps(named_by[1])}] and entity {dumps(found[0])} by "
                f"[{dumps(found[1][0])} {dumps(found[1][1])}]",
                code=ErrorCode.TX_CONFLICT, form=list(named_by))

    for (a, key), entities in holders.items():
        v = key[0]
        tempids = [e for e in entities if type(e) is TempId]
        if not tempids:
            continue
        for t in tempids[1:]:  # one entity: merged, what each side found kept
            merged, into = root(t), root(tempids[0])
            if merged != into:
                parent[merged] = into
                if merged in owner:
                    claim(tempids[0], *owner.pop(merged))
        named = [e for e in entities if type(e) is not TempId]
        named += [e for e, _, held in db.referrers(v, a) if same(held, v)]
        for e in named:
            claim(tempids[0], e, (a, v))
    return {t: owner[root(t)][0] if root(t) in owner else root(t)
            for entities in holders.values() for t in entities if type(t) is TempId}


def _expand(form: Mapping[Any, Any], schema: Schema, adds: list[Datom]) -> Any:
    """Step 1: an entity map's datoms added to ``adds`` (its nested maps' too); its entity."""
    attrs = {parse_attribute(a, form): v for a, v in form.items()}
    scratch = TxOps()
    e = map_entity(attrs, form, scratch)
    for a, v in attrs.items():
        if a is DB_ID:
            continue
        if is_reverse(a):
            forward_attribute = forward(a)
            if not schema.is_ref(forward_attribute):
                raise TransactionError(f"{dumps(a)} asserts {dumps(forward_attribute)} from its "
                                       f"value's side, so {dumps(forward_attribute)} must be a "
                                       ":db.type/ref "
                                       f"attribute, in {show(form)}",
                                       code=ErrorCode.TX_TYPE, form=form)
            for x in _values(v, forward_attribute, schema):
                other = (_nested(x, forward_attribute, schema, adds, form)
                         if isinstance(x, Mapping) else parse_entity(x, form, scratch))
                adds.append((other, forward_attribute, e))
            continue
        for x in _values(v, a, schema):
            value = (_nested(x, a, schema, adds, form) if isinstance(x, Mapping)
                     else parse_value(x, form))
            adds.append((e, a, value))
    return e


def _values(v: Any, a: Any, schema: Schema) -> list[Any]:
    """A map entry's values: a collection is several, unless it is a lookup ref of a ref
    (or untyped) attribute — two elements, the first a unique attribute."""
    if isinstance(v, str | Mapping) or not isinstance(v, Sequence | frozenset | set):
        return [v]
    if (isinstance(v, Sequence) and len(v) == 2 and isinstance(v[0], edn_format.Keyword)
            and schema[v[0]].unique is not None
            and (schema.is_ref(a) or schema[a].value_type is None)):
        return [v]
    return list(v)


def _nested(form: Mapping[Any, Any], a: Any, schema: Schema, adds: list[Datom],
            outer: Any) -> Any:
    """A nested map's entity, its datoms added (Datomic's rule, the module's step 1)."""
    if not schema.is_ref(a):
        raise TransactionError(f"a nested map is the value of {dumps(a)}, which is not a "
                               f":db.type/ref attribute, in {show(outer)}",
                               code=ErrorCode.TX_TYPE, form=outer)
    keys = {parse_attribute(k, form) for k in form}
    if not (schema[a].component or DB_ID in keys
            or any(schema[k].unique is not None for k in keys)):
        raise TransactionError(f"a nested map under {dumps(a)} must be a component "
                               f"({dumps(a)} :db/isComponent true) or have a :db/id or a "
                               f"unique attribute, in {show(outer)}",
                               code=ErrorCode.TX_SHAPE, form=outer)
    return _expand(form, schema, adds)


def _show(ref: LookupRef) -> str:
    return f"[{dumps(ref.attribute)} {dumps(ref.value)}]"


def _form(ref: LookupRef) -> list[Any]:
    return [ref.attribute, ref.value]


def _tempid(t: TempId) -> str:
    return "(a map without :db/id)" if t.name is None else dumps(t.name)


