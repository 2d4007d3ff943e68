"""A large batch of transactions normalised at once, as columns of value ids.

``transact_many`` normalises transaction after transaction against the state plus the ones
before (a :class:`~workers.arrangements.PendingReader`): a few dict reads per datom.  Most
large batches — a bulk load, a worker catching up on inserts — are *plain* (datoms added
and retracted, no schema attribute, :func:`~workers.db.normalise.is_plain`) and
*independent*: no datom is touched by two of their transactions, and no entity's
cardinality-one attribute either.  Then every transaction reads only the state before the
batch, so the batch is normalised in one pass of array operations: every datom's presence
looked up in the spine at once, every replaced cardinality-one value found at once.  The
delta is exactly the per-transaction one, and so are the refusals: whether a plain
transaction is refused does not depend on the database, and it is decided by the same
checks (:func:`~workers.db.normalise.check_plain`).  Any other batch returns None and takes
the per-transaction path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import edn_format
import numpy as np

from workers.arrangements import ArrangementRegistry, IndexOrder
from workers.arrangements.batch import Ids, Ints, sort_order, starts
from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import ValueIds
from workers.db.normalise import check_plain, is_plain
from workers.db.schema import SCHEMA_ATTRIBUTES, Schema
from workers.db.tx import PLAIN_VALUES, Datom, TxOps
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


def normalise_bulk(batch: Sequence[tuple[TxOps, Any]], db: ArrangementRegistry,
                   schema: Schema) -> BulkNormalised | None:
    """The batch ``(ops, tx_id)`` normalised at once, or None when it is not plain and
    independent (then normalise it transaction by transaction)."""
    if not all(is_plain(ops) for ops, _ in batch):
        return None
    refused: list[tuple[int, TransactionError]] = []
    adds: list[Datom] = []
    retracts: list[Datom] = []
    add_tx: list[int] = []  # the position in the batch of each added datom's transaction
    retract_tx: list[int] = []
    for position, (ops, _) in enumerate(batch):
        try:
            added, retracted = check_plain(ops, schema)
        except TransactionError as error:
            refused.append((position, error))
            continue
        adds.extend(added)
        retracts.extend(retracted)
        add_tx.extend([position] * len(added))
        retract_tx.extend([position] * len(retracted))
    datoms = adds + retracts
    e, a, v = (intern_column(db.ids, column) for column in _columns(datoms))
    tx = np.array(add_tx + retract_tx, np.int64)
    one = _cardinality_one_ids(db.ids, schema, a)
    if not _independent(e, a, v, tx, one):
        return None
    return BulkNormalised(_effective(db, e, a, v, len(adds), one), refused)


def normalise_columns(e: Any, a: Any, v: Any, added: Any, db: ArrangementRegistry,
                      schema: Schema) -> DatomColumns | None:
    """One transaction given as columns (:meth:`~workers.engine.Engine.transact_columns`),
    normalised at once; None when it is not plain or one of :func:`check_plain`'s checks
    might refuse it — the caller then makes it forms, which are normalised and refused as
    any transaction is (so the messages are the usual ones, and nothing is checked twice
    differently).  Values of such a transaction may have been numbered: ids are internal.
    """
    e = np.asarray(e)
    if e.dtype.kind not in "iu" or (e.dtype.kind == "u" and len(e) and e.max() > LONG_MAX):
        return None
    n = len(e)
    if isinstance(a, edn_format.Keyword | str) and type(a) is not Keyword:
        return None  # one attribute, not an interned keyword
    attributes = [a] * n if type(a) is Keyword else list(a)
    if set(map(type, attributes)) - {Keyword} or not SCHEMA_ATTRIBUTES.isdisjoint(
            dict.fromkeys(attributes)):
        return None
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
    order = np.argsort(~is_add, kind="stable")  # the added datoms first
    return _effective(db, e_ids[order], a_ids[order], v_ids[order], int(is_add.sum()), one)


def _plain_values(values: Sequence[Any]) -> bool:
    """Every value one a datom may hold whatever its attribute's type (ints in range)."""
    types = set(map(type, values))
    if not PLAIN_VALUES.issuperset(types - {int}):
        return False
    ints = [x for x in values if type(x) is int] if int in types else []
    return not ints or (min(ints) >= LONG_MIN and max(ints) <= LONG_MAX)


def _typed(ids: ValueIds, schema: Schema, a_ids: Ids, values: Sequence[Any]) -> bool:
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


def _effective(db: ArrangementRegistry, e: Ids, a: Ids, v: Ids, added: int,
               one: Ids) -> DatomColumns:
    """The effective delta of datoms (ids; the first ``added`` asserted, the others
    retracted) that no two transactions share: the new assertions, the present
    retractions, and the old values the cardinality-one assertions replace."""
    present = db.state.weights(EAV, np.stack([e, a, v], axis=1).astype(np.int64)) > 0 if len(
        e) else np.zeros(0, bool)
    new = np.flatnonzero(~present[:added])
    gone = added + np.flatnonzero(present[added:])
    replaced = _replaced(db, e[:added], a[:added], v[:added], one)
    minus_e, minus_a, minus_v = (np.concatenate([c[gone], r]) for c, r in zip(
        (e, a, v), replaced, strict=True))
    unique = _unique_rows(minus_e, minus_a, minus_v)  # an explicit retraction may be replaced
    return DatomColumns(
        np.concatenate([e[new], minus_e[unique]]), np.concatenate([a[new], minus_a[unique]]),
        np.concatenate([v[new], minus_v[unique]]),
        np.concatenate([np.ones(len(new), np.int64), -np.ones(len(unique), np.int64)]))


def intern_column(ids: ValueIds, values: Sequence[Any]) -> Ids:
    """The ids of a column of values: plain ints through NumPy, anything else per distinct
    object (ids are the same as ``ids.intern`` called on each in turn would give, up to the
    numbering of new values)."""
    if values and set(map(type, values)) == {int}:
        try:
            return ids.intern_ints(np.array(values, np.int64))
        except OverflowError:  # beyond int64: interned one by one below
            pass
    # Objects told apart by identity in NumPy (no Python hash per value: a keyword's is
    # Python code), each distinct object interned by value: equal objects get one id.
    identities = np.fromiter(map(id, values), np.int64, len(values))
    distinct, first, inverse = np.unique(identities, return_index=True, return_inverse=True)
    appearance = np.argsort(first)  # new values numbered in order of first appearance
    interned = np.empty(len(distinct), np.int32)
    interned[appearance] = np.fromiter(
        (ids.intern(values[i]) for i in first[appearance].tolist()), np.int32, len(distinct))
    return interned[inverse]


def _columns(datoms: list[Datom]) -> tuple[Sequence[Any], Sequence[Any], Sequence[Any]]:
    """The datoms' entities, attributes and values as three lists."""
    return tuple(list(map(itemgetter(i), datoms)) for i in range(3))  # type: ignore[return-value]


def _cardinality_one_ids(ids: ValueIds, schema: Schema, a: Ids) -> Ids:
    """The ids among ``a`` of cardinality-one attributes."""
    distinct = np.unique(a)
    return np.array([i for i in distinct.tolist() if schema[ids.value(i)].cardinality_one],
                    np.int32)


def _independent(e: Ids, a: Ids, v: Ids, tx: Ints, one: Ids) -> bool:
    """No datom in two transactions, nor an entity's cardinality-one attribute."""
    if len(_unique_rows(e, a, v)) != len(e):
        return False
    single = np.isin(a, one)
    if not single.any():
        return True
    pairs = _unique_rows(e[single], a[single])
    with_tx = _unique_rows(e[single], a[single], tx[single])
    return len(pairs) == len(with_tx)


def _replaced(db: ArrangementRegistry, e: Ids, a: Ids, v: Ids,
              one: Ids) -> tuple[Ids, Ids, Ids]:
    """The old values a cardinality-one assertion replaces (present, not the new value)."""
    rows = np.flatnonzero(np.isin(a, one))
    if not len(rows):
        empty = np.zeros(0, np.int32)
        return empty, empty, empty
    found, keys, _ = db.state.proposals(EAV, np.stack([e[rows], a[rows]], axis=1).astype(
        np.int64))
    old = keys != v[rows][found]
    at = rows[found[old]]
    return e[at], a[at], keys[old].astype(np.int32)


def _unique_rows(*columns: np.ndarray) -> Ints:
    """The positions of the first of each distinct row of ``columns``."""
    if not len(columns[0]):
        return np.zeros(0, np.int64)
    order = sort_order(*columns)
    return order[starts(*(c[order] for c in columns))]
