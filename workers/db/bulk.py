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

import numpy as np

from workers.arrangements import ArrangementRegistry, IndexOrder
from workers.arrangements.batch import Ids, Ints, starts
from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import ValueIds
from workers.db.normalise import check_plain, is_plain
from workers.db.schema import Schema
from workers.db.tx import Datom, TxOps
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
    n = len(adds)
    present = db.state.weights(EAV, np.stack([e, a, v], axis=1).astype(np.int64)) > 0 if len(
        datoms) else np.zeros(0, bool)
    new = np.flatnonzero(~present[:n])
    gone = n + np.flatnonzero(present[n:])
    replaced = _replaced(db, e[:n], a[:n], v[:n], one)
    minus_e, minus_a, minus_v = (np.concatenate([c[gone], r]) for c, r in zip(
        (e, a, v), replaced, strict=True))
    unique = _unique_rows(minus_e, minus_a, minus_v)  # an explicit retraction may be replaced
    delta = DatomColumns(
        np.concatenate([e[new], minus_e[unique]]), np.concatenate([a[new], minus_a[unique]]),
        np.concatenate([v[new], minus_v[unique]]),
        np.concatenate([np.ones(len(new), np.int64), -np.ones(len(unique), np.int64)]))
    return BulkNormalised(delta, refused)


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
    order = np.lexsort(columns[::-1])
    return order[starts(*(c[order] for c in columns))]
