"""A large batch of transactions normalised at once, as columns of value ids.

``transact_many`` normalises transaction after transaction against the state plus the ones
before (a :class:`~workers.arrangements.PendingReader`): a few dict reads and set
operations per datom, 13-14 µs a transaction of the catch-up stream, ~5-9 here
(``python -m bench catchup``, docs/fleet.md "Catch-up").  Here the batch's
additions, retractions and entity retractions are columns (:class:`Events`), and since the
database is a set, the batch's summed delta is, per datom, its presence after the batch
against its presence before: the *last event* that touches the datom decides

```
present after = the last of: its add (+) or retract (-) | its entity's retraction (-)
                | another value added to its cardinality-one attribute (-)
                — none: present before                       (ties: a transaction's explicit
                                                              ops after what it implies)
```

so the datoms a batch may change (those it names, and the stored ones of the entities it
retracts and of the cardinality-one attributes it adds to) are decided by a few sorts.
Refusals are the per-transaction ones, with the same messages:

1. whether a transaction adds and retracts one datom, adds two values to a cardinality-one
   attribute or a mistyped value does not depend on the database: array operations find the
   few transactions that might, and :func:`~workers.db.normalise.check_plain` decides them;
2. a transaction that retracts an entity and adds one of its datoms conflicts if that datom
   was present before it: those (1 in ~575 of the catch-up stream) are decided in batch
   order, each from the events of the accepted transactions before it on its entities.

The batch takes the per-transaction path (None) when a transaction retracts an attribute or
touches the schema, retracts an entity while the schema has references, or when a value
inside it or among the stored ones it may retract is a boolean, an integral double or NaN:
a transaction compares values as Python does (``1``, ``1.0`` and ``true`` are one value in
it, docs/semantics.md), ids never.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import edn_format
import numpy as np

from workers.arrangements import ArrangementRegistry, IndexOrder
from workers.arrangements.batch import Ids, Ints, Mask, sort_order, sorted_distinct, starts
from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import Numbering
from workers.db.normalise import check_plain
from workers.db.resolve import names_in_values
from workers.db.schema import SCHEMA_ATTRIBUTES, Schema
from workers.db.tx import PLAIN_VALUES, BatchOps, Datom, TxOps
from workers.db.values import LONG_MAX, LONG_MIN, VALUE_TYPES
from workers.edn import Keyword
from workers.errors import TransactionError

EAV = IndexOrder.EAV


@dataclass(frozen=True, slots=True)
class BulkNormalised:
    """The batch's summed effective delta and its refused transactions (their index in the
    batch, and why), in order."""

    delta: DatomColumns
    refused: list[tuple[int, TransactionError]]


@dataclass(frozen=True, slots=True)
class Events:
    """What a batch's transactions do, as columns of value ids: the datoms they add and
    retract with their transaction's position in the batch, and the entities they retract
    with theirs."""

    e: Ids
    a: Ids
    v: Ids
    position: Ints
    added: Mask
    one: Mask  # the additions to cardinality-one attributes: they retract the other values
    entities: Ids
    entity_position: Ints

    def where(self, rows: Mask | Ints, entities: Mask | Ints) -> Events:
        """The events of ``rows`` and of ``entities`` (the entity retractions kept), as
        flags or row numbers."""
        return Events(self.e[rows], self.a[rows], self.v[rows], self.position[rows],
                      self.added[rows], self.one[rows], self.entities[entities],
                      self.entity_position[entities])


def normalise_bulk(batch: BatchOps, db: ArrangementRegistry,
                   schema: Schema) -> BulkNormalised | None:
    """The parsed batch normalised at once (its refusals those of normalising, the
    grammar's are ``batch.refused``), or None when a transaction retracts an attribute or
    touches the schema, retracts an entity while references exist, names an entity the
    database must resolve or asserts a unique attribute (then normalise it transaction by
    transaction)."""
    ops = batch.ops
    if (ops.retract_attributes or (ops.retract_entities and schema.ref_attributes())
            or needs_resolving(batch, schema)):
        return None
    events = batch_events(db.ids, schema, batch)
    stored = _stored(db, events)
    if _holds_schema(db.ids, np.concatenate([events.a, stored[1]])) or not _kinds_apart(
            db.ids.objects(np.concatenate([events.v, stored[2]]))):
        return None
    accepted = np.ones(len(batch), bool)
    refused: list[tuple[int, TransactionError]] = []
    at_risk = _at_risk(events)
    waiting = np.zeros(len(batch), bool)
    waiting[events.position[at_risk]] = True
    # Step 1: the refusals the database cannot change.
    for position in np.flatnonzero(_suspects(events, len(batch), db.ids, schema)
                                   & ~waiting).tolist():
        _check(position, batch.transaction(position), [], schema, accepted, refused)
    # Step 2: in order, each transaction retracting an entity it adds to, after what the
    # accepted ones before it left.
    risky = np.flatnonzero(at_risk)  # in batch order, as the additions are
    by_entity = _ByEntity.of(events)
    for position in np.flatnonzero(waiting).tolist():
        rows = risky[np.searchsorted(events.position[risky], position, "left"):np.searchsorted(
            events.position[risky], position, "right")]
        present = _present_before(db, events, by_entity, rows, accepted, position)
        _check(position, batch.transaction(position),
               [ops.adds[row] for row in rows[present].tolist()], schema, accepted, refused)
    # Step 3: the accepted transactions' summed delta.
    delta = _delta(db, events.where(accepted[events.position],
                                    accepted[events.entity_position]), stored)
    return BulkNormalised(delta, sorted(refused, key=itemgetter(0)))


def needs_resolving(batch: BatchOps, schema: Schema) -> bool:
    """Whether a transaction of ``batch`` names an entity by tempid or lookup ref (a ref's
    value too), holds a map to expand or a cas, or asserts a unique attribute: what
    :func:`~workers.db.resolve.resolve` and the uniqueness check need the database for."""
    if not batch.simple or names_in_values(batch.ops.adds, schema):
        return True
    unique = schema.unique_attributes()
    return bool(unique) and any(a in unique for _, a, _ in batch.ops.adds)


def batch_events(ids: Numbering, schema: Schema, batch: BatchOps) -> Events:
    """The batch's operations as columns, its added datoms first (in ``batch.ops.adds``'
    order)."""
    ops = batch.ops
    e, a, v = (intern_column(ids, column) for column in _columns(ops.adds + ops.retracts))
    positions = np.arange(len(batch))
    ends = np.array(batch.ends, np.int64).reshape(len(batch), -1)
    adds, retracts, _, entities = np.diff(ends, axis=0, prepend=0).T[:4]
    position = np.concatenate([np.repeat(positions, adds), np.repeat(positions, retracts)])
    added = np.arange(len(e)) < len(ops.adds)
    return Events(e, a, v, position, added, added & np.isin(a, _cardinality_one_ids(
        ids, schema, a)), intern_column(ids, ops.retract_entities),
                  np.repeat(positions, entities))


def assumed_delta(db: ArrangementRegistry, events: Events) -> DatomColumns:
    """The summed delta of the batch of ``events`` as if each of its transactions were
    accepted and the per-transaction path were not needed: what normalising gives in the
    usual case, computed where the database is (a Spark task, ``executor=spark``) before
    the driver has normalised; the driver uses it only when its own delta is the same."""
    return _delta(db, events, _stored(db, events))


def _stored(db: ArrangementRegistry, events: Events) -> tuple[Ids, Ids, Ids]:
    """The datoms in the database that ``events`` may retract without naming them: those of
    the entities they retract and of the cardinality-one attributes they add to."""
    entities = sorted_distinct(events.entities)
    rows, (entity_a, entity_v), _ = db.state.enumerations(EAV, entities[:, None].astype(
        np.int64))
    one = np.flatnonzero(events.one)
    e, a = events.e[one], events.a[one]
    found, values, _ = db.state.proposals(EAV, np.stack([e, a], axis=1).astype(np.int64))
    return (np.concatenate([entities[rows], e[found]]), np.concatenate([entity_a, a[found]]),
            np.concatenate([entity_v, values]))


def _holds_schema(ids: Numbering, a: Ids) -> bool:
    """Whether one of the attributes ``a`` is a schema attribute."""
    schema_ids = [i for i in map(ids.lookup, SCHEMA_ATTRIBUTES) if i is not None]
    return bool(schema_ids) and bool(np.isin(a, schema_ids).any())


def _kinds_apart(values: list[Any]) -> bool:
    """No boolean, integral double or NaN among ``values``.  A transaction compares values
    as Python does (docs/semantics.md: ``1``, ``1.0`` and ``true`` are one value inside
    it), ids never: without such values the two agree."""
    kinds = set(map(type, values))
    return bool not in kinds and (float not in kinds or not any(
        x.is_integer() or x != x for x in values if type(x) is float))


def _at_risk(events: Events) -> Mask:
    """The added datoms whose entity their own transaction retracts: that transaction is
    refused if one of them was present before it (both added and retracted), which only
    the transactions before it decide."""
    if not len(events.entities):
        return np.zeros(len(events.e), bool)
    retracted = (events.entity_position << 32) | events.entities
    return events.added & np.isin((events.position << 32) | events.e, retracted)


def _suspects(events: Events, size: int, ids: Numbering, schema: Schema) -> Mask:
    """The transactions (a flag per position) one of :func:`check_plain`'s checks may
    refuse: those adding and retracting one datom, adding two values to an entity's
    cardinality-one attribute, or a value not of its attribute's type."""
    suspect = np.zeros(size, bool)
    groups, count = _group_ids(events.position, events.e, events.a, events.v)
    kinds = np.zeros((count, 2), bool)
    kinds[groups, events.added.astype(np.int64)] = True
    both = kinds[:, 0] & kinds[:, 1]  # a datom added and retracted
    suspect[events.position[both[groups]]] = True
    one = np.flatnonzero(events.one)
    pairs, count = _group_ids(events.position[one], events.e[one], events.a[one])
    values = np.bincount(pairs[_unique_rows(pairs, events.v[one])], minlength=count)
    suspect[events.position[one][values[pairs] > 1]] = True
    added = np.flatnonzero(events.added)
    for attribute in np.unique(events.a[added]).tolist():
        value_type = schema[ids.value(attribute)].value_type
        if value_type is not None:
            rows = added[events.a[added] == attribute]
            check = VALUE_TYPES[value_type]
            distinct = sorted_distinct(events.v[rows])
            wrong = [i for i in distinct.tolist() if not check(ids.value(i))]
            suspect[events.position[rows[np.isin(events.v[rows], wrong)]]] = True
    return suspect


def _check(position: int, ops: TxOps, implicit: list[Datom], schema: Schema,
           accepted: Mask, refused: list[tuple[int, TransactionError]]) -> None:
    """Refuse the transaction at ``position`` as :func:`normalise` would, ``implicit`` the
    datoms it adds that its entity retractions retract."""
    try:
        check_plain(TxOps(ops.adds, ops.retracts + implicit) if implicit else ops, schema)
    except TransactionError as error:
        refused.append((position, error))
        accepted[position] = False


@dataclass(frozen=True, slots=True)
class _ByEntity:
    """The events' row numbers sorted by entity, so that an entity's events are a slice:
    the transactions decided in order read only their entities' events."""

    ops: Ints
    op_entities: Ids
    retractions: Ints
    retracted: Ids

    @staticmethod
    def of(events: Events) -> _ByEntity:
        ops, retractions = (np.argsort(e, kind="stable") for e in (events.e, events.entities))
        return _ByEntity(ops, events.e[ops], retractions, events.entities[retractions])

    def rows(self, entities: Ids) -> tuple[Ints, Ints]:
        """The rows of ``entities``' datoms added or retracted, and of their retractions."""
        return (_slices(self.ops, self.op_entities, entities),
                _slices(self.retractions, self.retracted, entities))


def _slices(order: Ints, keys: Ids, wanted: Ids) -> Ints:
    """The rows ``order`` lists under each of the ``wanted`` ``keys`` (sorted)."""
    low, high = np.searchsorted(keys, wanted, "left"), np.searchsorted(keys, wanted, "right")
    return np.concatenate([order[lo:hi] for lo, hi in zip(low.tolist(), high.tolist(),
                                                          strict=True)] or [order[:0]])


def _present_before(db: ArrangementRegistry, events: Events, by_entity: _ByEntity,
                    rows: Ints, accepted: Mask, position: int) -> Mask:
    """Whether each datom of ``rows`` is present before the transaction at ``position``:
    after the accepted ones before it (their events on the datoms' entities)."""
    e, a, v = events.e[rows], events.a[rows], events.v[rows]
    ops, retractions = by_entity.rows(sorted_distinct(e))
    at, retracted_at = events.position[ops], events.entity_position[retractions]
    earlier = events.where(ops[accepted[at] & (at < position)],
                           retractions[accepted[retracted_at] & (retracted_at < position)])
    return _present_after(earlier, e, a, v, _in_state(db, e, a, v))


def _in_state(db: ArrangementRegistry, e: Ids, a: Ids, v: Ids) -> Mask:
    """Whether each datom is in the database."""
    if not len(e):
        return np.zeros(0, bool)
    return db.state.weights(EAV, np.stack([e, a, v], axis=1).astype(np.int64)) > 0


def _present_after(events: Events, e: Ids, a: Ids, v: Ids, before: Mask) -> Mask:
    """Whether each datom is present after ``events``, given whether it was ``before``.

    The database is a set, so the last event that touches a datom decides: its addition or
    retraction, the retraction of its entity, or the addition of another value to its
    cardinality-one attribute (which retracts it) — none, and it is as it was.  Within one
    transaction the datoms it adds and retracts come after the retractions it implies (a
    datom both retracted and added would refuse it): times ``2·position + 1`` and
    ``2·position``."""
    n = len(e)
    if not n:
        return np.zeros(0, bool)
    groups, count = _group_ids(*(np.concatenate([q, c]) for q, c in
                                 ((e, events.e), (a, events.a), (v, events.v))))
    last_op = np.full(count, -1, np.int64)  # time · 2 + added
    np.maximum.at(last_op, groups[n:], ((2 * events.position + 1) << 1) | events.added)
    op = last_op[groups[:n]]
    op_time = np.where(op >= 0, op >> 1, -1)
    latest = np.maximum(np.maximum(op_time, _entity_retracted(events, e)),
                        _other_value_added(events, e, a, v))
    return np.where(latest < 0, before, (latest == op_time) & (op & 1 == 1))


def _entity_retracted(events: Events, e: Ids) -> Ints:
    """The time each entity was last retracted, -1 for never."""
    groups, count = _group_ids(np.concatenate([e, events.entities]))
    last = np.full(count, -1, np.int64)
    np.maximum.at(last, groups[len(e):], 2 * events.entity_position)
    return last[groups[:len(e)]]


def _other_value_added(events: Events, e: Ids, a: Ids, v: Ids) -> Ints:
    """The time another value than ``v`` was last added to each datom's cardinality-one
    attribute, -1 for never: the group's last addition, unless its value is ``v``; then
    the last addition of another value than that."""
    rows = np.flatnonzero(events.one)
    groups, count = _group_ids(np.concatenate([e, events.e[rows]]),
                               np.concatenate([a, events.a[rows]]))
    added, time, value = groups[len(e):], 2 * events.position[rows], events.v[rows]
    last = np.full(count, -1, np.int64)  # time << 32 | value
    np.maximum.at(last, added, (time << 32) | value)
    last_value = np.where(last >= 0, last & 0xFFFFFFFF, -1)
    other = value != last_value[added]
    last_other = np.full(count, -1, np.int64)
    np.maximum.at(last_other, added[other], time[other])
    mine = groups[:len(e)]
    return np.where(v == last_value[mine], last_other[mine], np.where(last[mine] >= 0,
                                                                       last[mine] >> 32, -1))


def _group_ids(*columns: np.ndarray) -> tuple[Ints, int]:
    """A number for each distinct row of ``columns`` (0, 1, ... in sorted order), and how
    many there are."""
    order = sort_order(*columns)
    first = starts(*(c[order] for c in columns))
    new = np.zeros(len(order), np.int64)
    new[first] = 1
    groups = np.empty(len(order), np.int64)
    groups[order] = np.cumsum(new) - 1
    return groups, len(first)


def _delta(db: ArrangementRegistry, events: Events,
           stored: tuple[Ids, Ids, Ids]) -> DatomColumns:
    """The batch's effective delta: of the datoms it may change (those it names and
    ``stored``), those present after it and not before, or the reverse."""
    e, a, v = (np.concatenate(parts) for parts in zip((events.e, events.a, events.v), stored,
                                                      strict=True))
    unique = _unique_rows(e, a, v)
    e, a, v = e[unique], a[unique], v[unique]
    before = _in_state(db, e, a, v)
    after = _present_after(events, e, a, v, before)
    changed = np.flatnonzero(after != before)
    return DatomColumns(e[changed], a[changed], v[changed],
                        np.where(after[changed], 1, -1).astype(np.int64))


def normalise_columns(e: Any, a: Any, v: Any, added: Any, db: ArrangementRegistry,
                      schema: Schema, fetch: Callable[[Ints, Ints], None] | None = None
                      ) -> DatomColumns | None:
    """One transaction given as columns (:meth:`~workers.engine.Engine.transact_columns`),
    normalised at once; None when it is not plain or one of :func:`check_plain`'s checks
    might refuse it — the caller then makes it forms, which are normalised and refused as
    any transaction is (so the messages are the usual ones, and nothing is checked twice
    differently).  Values of such a transaction may have been numbered: ids are internal.
    ``fetch(pairs, triples)``, when given, is told what normalising reads before it does
    (``executor=spark``: the window's read): the datoms under the ``(e, a)`` rows of
    ``pairs``, and whether those of ``triples`` are present.
    """
    e = np.asarray(e)
    if e.dtype.kind not in "iu" or (e.dtype.kind == "u" and len(e) and e.max() > LONG_MAX):
        return None
    n = len(e)
    if isinstance(a, edn_format.Keyword | str) and type(a) is not Keyword:
        return None  # one attribute, not an interned keyword
    attributes = [a] * n if type(a) is Keyword else list(a)
    named = dict.fromkeys(attributes)
    if set(map(type, attributes)) - {Keyword} or not SCHEMA_ATTRIBUTES.isdisjoint(named) or (
            not schema.unique_attributes().isdisjoint(named)) or (n and e.min() < 0):
        return None  # the schema, a unique value, a tempid: as forms
    if not schema.ref_attributes().isdisjoint(named) and not (
            isinstance(v, np.ndarray) and v.dtype.kind in "iu" and (not n or v.min() >= 0)):
        return None  # a ref's value may be a tempid or a lookup ref: as forms
    ints = isinstance(v, np.ndarray) and v.dtype.kind in "iu"
    values = v if ints else list(v)
    if ints and v.dtype.kind == "u" and n and v.max() > LONG_MAX:
        return None
    if not ints and not _plain_values(values):
        return None
    is_add = np.ones(n, bool) if added is None else np.asarray(added, bool)
    a_ids = intern_column(db.ids, attributes)
    if not _typed(db.ids, schema, a_ids, values):
        return None
    e_ids = db.ids.intern_ints(e.astype(np.int64))
    v_ids = db.ids.intern_ints(v.astype(np.int64)) if ints else intern_column(db.ids, values)
    first = _unique_rows(e_ids, a_ids, v_ids, is_add.astype(np.int8))  # a set: once each
    e_ids, a_ids, v_ids, is_add = e_ids[first], a_ids[first], v_ids[first], is_add[first]
    if len(_unique_rows(e_ids, a_ids, v_ids)) != len(e_ids):
        return None  # a datom both added and retracted
    one = _cardinality_one_ids(db.ids, schema, a_ids)
    single = np.flatnonzero(is_add & np.isin(a_ids, one))
    if len(_unique_rows(e_ids[single], a_ids[single])) != len(single):
        return None  # two values of an entity's cardinality-one attribute
    none = np.zeros(0, np.int32)
    events = Events(e_ids, a_ids, v_ids, np.zeros(len(e_ids), np.int64), is_add,
                    is_add & np.isin(a_ids, one), none, none.astype(np.int64))
    if fetch is not None:
        fetch(np.stack([e_ids[single], a_ids[single]], axis=1).astype(np.int64),
              np.stack([e_ids, a_ids, v_ids], axis=1).astype(np.int64))
    return _delta(db, events, _stored(db, events))


def _plain_values(values: Sequence[Any]) -> bool:
    """Every value one a datom may hold whatever its attribute's type (ints in range)."""
    types = set(map(type, values))
    if not PLAIN_VALUES.issuperset(types - {int}):
        return False
    ints = [x for x in values if type(x) is int] if int in types else []
    return not ints or (min(ints) >= LONG_MIN and max(ints) <= LONG_MAX)


def _typed(ids: Numbering, schema: Schema, a_ids: Ids, values: Sequence[Any]) -> bool:
    """Every value of a typed attribute of its type (checked on each distinct one)."""
    for attribute in np.unique(a_ids).tolist():
        value_type = schema[ids.value(attribute)].value_type
        if value_type is not None:
            rows = np.flatnonzero(a_ids == attribute)
            check = VALUE_TYPES[value_type]
            if isinstance(values, np.ndarray):  # ints in range: the type decides
                if not check(int(values[rows[0]])):
                    return False
            elif not all(map(check, {id(x): x for x in map(values.__getitem__,
                                                           rows.tolist())}.values())):
                return False
    return True


def intern_column(ids: Numbering, values: Sequence[Any]) -> Ids:
    """The ids of a column of values: plain ints through NumPy, anything else per distinct
    object (ids are the same as ``ids.intern`` called on each in turn would give, up to the
    numbering of new values)."""
    return _column_ids(values, ids.intern_ints, ids.intern_values)


def lookup_column(ids: Numbering, values: Sequence[Any]) -> Ids:
    """:meth:`ValueIds.lookup` of a column of values, -1 for a value with no id (what the
    driver fetches under ``executor=spark`` is keyed by a tick's values: no call per op)."""
    return _column_ids(values, ids.lookup_ints, ids.lookup_values)


def _column_ids(values: Sequence[Any], of_ints: Callable[[Ints], Ids],
                of_values: Callable[[Sequence[Any]], Ids]) -> Ids:
    """The ids of a column: ``of_ints`` on a column of plain ints, else ``of_values`` on
    its distinct objects, in order of first appearance (new values are numbered so)."""
    if values and set(map(type, values)) == {int}:
        try:
            return of_ints(np.array(values, np.int64))
        except OverflowError:  # beyond int64: one by one below
            pass
    distinct, inverse = by_identity(values)
    return of_values(distinct)[inverse]


def by_identity(values: Sequence[Any]) -> tuple[list[Any], Ints]:
    """The distinct objects of ``values`` in order of first appearance, and each value's
    position among them.  Told apart by identity in NumPy (no Python hash per value: a
    keyword's is Python code), so equal objects may appear more than once."""
    identities = np.fromiter(map(id, values), np.int64, len(values))
    if len(identities) and (identities == identities[0]).all():  # one object: an attribute
        return [values[0]], np.zeros(len(values), np.int64)
    distinct, first, inverse = np.unique(identities, return_index=True, return_inverse=True)
    appearance = np.argsort(first)
    rank = np.empty(len(distinct), np.int64)
    rank[appearance] = np.arange(len(distinct))
    return [values[i] for i in first[appearance].tolist()], rank[inverse.reshape(-1)]


def _columns(datoms: list[Datom]) -> tuple[Sequence[Any], Sequence[Any], Sequence[Any]]:
    """The datoms' entities, attributes and values as three lists."""
    return tuple(list(map(itemgetter(i), datoms)) for i in range(3))  # type: ignore[return-value]


def _cardinality_one_ids(ids: Numbering, schema: Schema, a: Ids) -> Ids:
    """The ids among ``a`` of cardinality-one attributes."""
    distinct = np.unique(a)
    return np.array([i for i in distinct.tolist() if schema[ids.value(i)].cardinality_one],
                    np.int32)


def _unique_rows(*columns: np.ndarray) -> Ints:
    """The positions of the first of each distinct row of ``columns``."""
    if not len(columns[0]):
        return np.zeros(0, np.int64)
    order = sort_order(*columns)
    return order[starts(*(c[order] for c in columns))]
