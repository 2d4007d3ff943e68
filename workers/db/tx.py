"""Transaction forms → operations: the grammar of a Datomic-style transaction.

```
tx      = [ op* ]
op      = [:db/add e a v] | [:db/retract e a v] | [:db/retract e a] | [:db/retractEntity e]
        | { :db/id e, a v, ... }          ; v a vector or set = one add per element
        | { :db/ident a, ... }            ; a schema entity: e is the attribute keyword
```
Forms may be EDN text parsed by :mod:`workers.edn` or Python/``edn_format`` values built by
the caller (the fast path: no EDN text on the hot path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import edn_format

from workers.db.schema import DB_ID, DB_IDENT
from workers.db.values import LONG_MAX, LONG_MIN, is_entity_id, is_value, type_name
from workers.edn import Keyword, keyword
from workers.edn import show as _show
from workers.errors import ErrorCode, TransactionError

Datom = tuple[Any, Any, Any]

DB_ADD = keyword("db/add")
DB_RETRACT = keyword("db/retract")
DB_RETRACT_ENTITY = keyword("db/retractEntity")
OP_NAMES = "[:db/add e a v], [:db/retract e a v], [:db/retract e a], [:db/retractEntity e]"


@dataclass(slots=True)
class TxOps:
    """A transaction's operations, grouped by kind (order inside a transaction is irrelevant)."""

    adds: list[Datom] = field(default_factory=list)
    retracts: list[Datom] = field(default_factory=list)
    retract_attributes: list[tuple[Any, Any]] = field(default_factory=list)
    retract_entities: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class BatchOps:
    """A batch's transactions parsed into one :class:`TxOps`, with where each one's ops end
    in its lists, and the transactions the grammar refuses (their position, and why).

    One object per batch, not per transaction: a catch-up batch of 50,000 kept five small
    objects alive per transaction, and the cyclic collector scanned them again and again —
    parsing it took 0.41 s, 0.04 s with the ops in shared lists (docs/fleet.md, "Catch-up").
    """

    ops: TxOps = field(default_factory=TxOps)
    # Four ints per transaction: where its adds, retracts, attribute and entity retractions
    # end in ``ops``' lists (ints, not a tuple each: no object per transaction).
    ends: list[int] = field(default_factory=list)
    refused: list[tuple[int, TransactionError]] = field(default_factory=list)

    @staticmethod
    def of(ops: TxOps) -> BatchOps:
        """A batch of the one transaction ``ops``."""
        return BatchOps(ops, [len(ops.adds), len(ops.retracts), len(ops.retract_attributes),
                              len(ops.retract_entities)])

    def __len__(self) -> int:
        return len(self.ends) // 4

    def _start(self, position: int) -> list[int]:
        return self.ends[4 * position - 4:4 * position] if position else [0, 0, 0, 0]

    def transaction(self, position: int) -> TxOps:
        """The ops of the transaction at ``position``."""
        a, r, ra, re = self._start(position)
        a_end, r_end, ra_end, re_end = self.ends[4 * position:4 * position + 4]
        ops = self.ops
        return TxOps(ops.adds[a:a_end], ops.retracts[r:r_end],
                     ops.retract_attributes[ra:ra_end], ops.retract_entities[re:re_end])


def parse_batch(batch: Sequence[Any]) -> BatchOps:
    """Each transaction of ``batch`` parsed by :func:`parse_tx` into the batch's lists; a
    refused one leaves none of its ops there."""
    parsed = BatchOps()
    ops = parsed.ops
    for position, forms in enumerate(batch):
        try:
            parse_tx(forms, ops)
        except TransactionError as error:
            parsed.refused.append((position, error))
            a, r, ra, re = parsed._start(position)
            del ops.adds[a:], ops.retracts[r:], ops.retract_attributes[ra:]
            del ops.retract_entities[re:]
        parsed.ends += (len(ops.adds), len(ops.retracts), len(ops.retract_attributes),
                        len(ops.retract_entities))
    return parsed


def parse_tx(forms: Any, into: TxOps | None = None) -> TxOps:
    """Group the ops of one transaction (added to ``into``'s, when given: a batch's);
    malformed ops raise :class:`TransactionError`."""
    if isinstance(forms, str | bytes) or not isinstance(forms, Sequence):
        raise TransactionError(f"a transaction is a vector of ops, got {_show(forms)}", form=forms)
    ops = TxOps() if into is None else into
    add, retract = ops.adds.append, ops.retracts.append
    for form in forms:
        kind = type(form)
        if (kind is list or kind is tuple) and len(form) == 4:
            op, e, a, v = form  # the usual datom, checked inline: no call per op
            if (type(a) is Keyword and type(e) is int and LONG_MIN <= e <= LONG_MAX
                    and (type(v) in PLAIN_VALUES or (type(v) is int
                                                     and LONG_MIN <= v <= LONG_MAX))):
                if op is DB_ADD:
                    add((e, a, v))
                    continue
                if op is DB_RETRACT:
                    retract((e, a, v))
                    continue
            _parse_list_op(form, ops)
        elif (kind is list or kind is tuple) and form:  # another op, no ABC check
            _parse_list_op(form, ops)
        elif isinstance(form, Mapping):
            _parse_entity_map(form, ops)
        elif isinstance(form, Sequence) and not isinstance(form, str) and form:
            _parse_list_op(form, ops)
        else:
            raise TransactionError(f"not a transaction op: {_show(form)}; expected {OP_NAMES} "
                                   "or an entity map", form=form)
    return ops


def _parse_list_op(form: Sequence[Any], ops: TxOps) -> None:
    op = _intern(form[0])
    if op is DB_ADD and len(form) == 4:
        ops.adds.append(_datom(form[1], form[2], form[3], form))
    elif op is DB_RETRACT and len(form) == 4:
        ops.retracts.append(_datom(form[1], form[2], form[3], form))
    elif op is DB_RETRACT and len(form) == 3:
        ops.retract_attributes.append((_entity(form[1], form), _attribute(form[2], form)))
    elif op is DB_RETRACT_ENTITY and len(form) == 2:
        ops.retract_entities.append(_entity(form[1], form))
    else:
        raise TransactionError(f"malformed op {_show(form)}; expected one of {OP_NAMES}",
                               form=form)


def _parse_entity_map(form: Mapping[Any, Any], ops: TxOps) -> None:
    attrs = {_attribute(a, form): v for a, v in form.items()}
    if DB_ID in attrs:
        e = _entity(attrs.pop(DB_ID), form)
    elif DB_IDENT in attrs:
        e = _entity(attrs[DB_IDENT], form)
    else:
        raise TransactionError(f"entity map needs :db/id (or :db/ident for a schema entity): "
                               f"{_show(form)}", form=form)
    for a, v in attrs.items():
        many = isinstance(v, Sequence | frozenset | set) and not isinstance(v, str)
        for value in (v if many else (v,)):
            ops.adds.append(_datom(e, a, value, form))


def _datom(e: Any, a: Any, v: Any, form: Any) -> Datom:
    if type(a) is Keyword and type(e) is int and LONG_MIN <= e <= LONG_MAX and (
            type(v) in PLAIN_VALUES or (type(v) is int and LONG_MIN <= v <= LONG_MAX)):
        return e, a, v  # the usual datom, checked without a call per position
    return _entity(e, form), _attribute(a, form), _value(v, form)


PLAIN_VALUES = frozenset({str, float, bool, Keyword})  # valid values whatever they hold


def _intern(x: Any) -> Any:
    if type(x) is Keyword or not isinstance(x, edn_format.Keyword):
        return x
    return keyword(x.name)


def _entity(e: Any, form: Any) -> Any:
    e = _intern(e)
    if not is_entity_id(e):
        raise TransactionError(f"entity id must be a long, keyword, string or uuid, got "
                               f"{type_name(e)} {_show(e)} in {_show(form)}",
                               code=ErrorCode.TX_TYPE, form=form)
    return e


def _attribute(a: Any, form: Any) -> Any:
    a = _intern(a)
    if not isinstance(a, Keyword):
        raise TransactionError(f"attribute must be a keyword, got {type_name(a)} {_show(a)} "
                               f"in {_show(form)}", code=ErrorCode.TX_TYPE, form=form)
    return a


def _value(v: Any, form: Any) -> Any:
    v = _intern(v)
    if not is_value(v):
        raise TransactionError(f"unsupported value {_show(v)} ({type_name(v)}) in {_show(form)}",
                               code=ErrorCode.TX_TYPE, form=form)
    return v
