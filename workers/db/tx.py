"""Transaction forms → operations: the grammar of a Datomic-style transaction.

```
tx      = [ op* ]
op      = [:db/add e a v] | [:db/retract e a v] | [:db/retract e a] | [:db/retractEntity e]
        | [:db/cas e a old new] | [:db.fn/cas e a old new] | [:db.fn/retractEntity e]
        | { :db/id e, a v, ... }          ; v a vector or set = one add per element
        | { a v, ... }                    ; no :db/id: a new entity
        | { :db/ident a, ... }            ; a schema entity: e is the attribute keyword
e       = long >= 0 | keyword | uuid      ; an entity id
        | long < 0 | string               ; a tempid: a new entity, local to its transaction
        | [unique-attribute value]        ; a lookup ref: the entity holding that value
```
Forms may be EDN text parsed by :mod:`workers.edn` or Python/``edn_format`` values built by
the caller (the fast path: no EDN text on the hot path).

What needs the schema is left to :mod:`workers.db.resolve`: a value of a ref attribute may
be a tempid, a lookup ref or a nested map, and a two-element vector in a map is a lookup ref
or two values depending on its first element — so a map holding a map, a vector of two or a
reverse attribute (``:p/_friend``) is kept whole (``TxOps.maps``), and any op naming an
entity by tempid or lookup ref marks its transaction as one to resolve (``TxOps.named``).
"""

from __future__ import annotations

import itertools
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
DB_CAS = keyword("db/cas")
# Datomic's older spellings of the same ops.
_ALIASES = {keyword("db.fn/cas"): DB_CAS, keyword("db.fn/retractEntity"): DB_RETRACT_ENTITY}
OP_NAMES = ("[:db/add e a v], [:db/retract e a v], [:db/retract e a], [:db/retractEntity e], "
            "[:db/cas e a old new]")


@dataclass(frozen=True, slots=True)
class TempId:
    """A new entity local to its transaction: a negative long or a string as written, or
    (``name`` None) a map without ``:db/id``, told apart by ``number``."""

    name: Any
    number: int = 0


@dataclass(frozen=True, slots=True)
class LookupRef:
    """``[attribute value]`` naming the entity that holds ``value`` of a unique attribute."""

    attribute: Any
    value: Any


@dataclass(slots=True)
class TxOps:
    """A transaction's operations, grouped by kind (order inside a transaction is irrelevant)."""

    adds: list[Datom] = field(default_factory=list)
    retracts: list[Datom] = field(default_factory=list)
    retract_attributes: list[tuple[Any, Any]] = field(default_factory=list)
    retract_entities: list[Any] = field(default_factory=list)
    cas: list[tuple[Any, Any, Any, Any]] = field(default_factory=list)  # (e, a, old, new)
    # Maps to expand with the schema, each with where it stands among ``adds`` (its
    # expansion goes there: new entities are numbered in the order they are written).
    maps: list[tuple[int, Mapping[Any, Any]]] = field(default_factory=list)
    named: bool = False  # an op names an entity by tempid or lookup ref: resolve it first

    def lists(self) -> tuple[list[Any], ...]:
        """The op lists, in the order :class:`BatchOps` records where each one ends."""
        return (self.adds, self.retracts, self.retract_attributes, self.retract_entities,
                self.cas, self.maps)


_LISTS = 6  # len(TxOps().lists())


@dataclass(slots=True)
class BatchOps:
    """A batch's transactions parsed into one :class:`TxOps`, with where each one's ops end
    in its lists, and the transactions the grammar refuses (their position, and why).

    One object per batch, not per transaction: a catch-up batch of 50,000 kept five small
    objects alive per transaction, and the cyclic collector scanned them again and again —
    parsing it took 0.41 s, 0.04 s with the ops in shared lists (docs/fleet.md, "Catch-up").
    """

    ops: TxOps = field(default_factory=TxOps)
    # Six ints per transaction: where each of its op lists ends in ``ops``' (ints, not a
    # tuple each: no object per transaction).
    ends: list[int] = field(default_factory=list)
    refused: list[tuple[int, TransactionError]] = field(default_factory=list)
    named: set[int] = field(default_factory=set)  # the positions of transactions to resolve

    @staticmethod
    def of(ops: TxOps) -> BatchOps:
        """A batch of the one transaction ``ops``."""
        return BatchOps(ops, [len(each) for each in ops.lists()], named={0} if ops.named
                        else set())

    def __len__(self) -> int:
        return len(self.ends) // _LISTS

    def _start(self, position: int) -> list[int]:
        return self.ends[_LISTS * (position - 1):_LISTS * position] if position else [0] * _LISTS

    def transaction(self, position: int) -> TxOps:
        """The ops of the transaction at ``position``."""
        ends = self.ends[_LISTS * position:_LISTS * (position + 1)]
        parts = [each[start:end] for each, start, end in zip(self.ops.lists(),
                                                             self._start(position), ends,
                                                             strict=True)]
        adds, retracts, retract_attributes, retract_entities, cas, maps = parts
        first_add = self._start(position)[0]
        return TxOps(adds, retracts, retract_attributes, retract_entities, cas,
                     [(at - first_add, form) for at, form in maps],
                     named=position in self.named)

    @property
    def simple(self) -> bool:
        """No transaction of the batch names an entity by tempid or lookup ref, holds a map
        to expand with the schema or a cas: each is its ops as parsed."""
        return not (self.named or self.ops.cas or self.ops.maps)


def parse_batch(batch: Sequence[Any]) -> BatchOps:
    """Each transaction of ``batch`` parsed by :func:`parse_tx` into the batch's lists; a
    refused one leaves none of its ops there."""
    parsed = BatchOps()
    ops = parsed.ops
    for position, forms in enumerate(batch):
        ops.named = False
        try:
            parse_tx(forms, ops)
        except TransactionError as error:
            parsed.refused.append((position, error))
            for each, start in zip(ops.lists(), parsed._start(position), strict=True):
                del each[start:]
        else:
            if ops.named:
                parsed.named.add(position)
        parsed.ends += map(len, ops.lists())
    ops.named = bool(parsed.named)
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
            if (type(a) is Keyword and type(e) is int and 0 <= e <= LONG_MAX
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
    op = _ALIASES.get(op, op)
    if op is DB_ADD and len(form) == 4:
        ops.adds.append(_datom(form[1], form[2], form[3], form, ops))
    elif op is DB_RETRACT and len(form) == 4:
        ops.retracts.append(_datom(form[1], form[2], form[3], form, ops))
    elif op is DB_RETRACT and len(form) == 3:
        ops.retract_attributes.append((parse_entity(form[1], form, ops),
                                       parse_attribute(form[2], form)))
    elif op is DB_RETRACT_ENTITY and len(form) == 2:
        ops.retract_entities.append(parse_entity(form[1], form, ops))
    elif op is DB_CAS and len(form) == 5:
        old = None if form[3] is None else parse_value(form[3], form)
        ops.cas.append((parse_entity(form[1], form, ops), parse_attribute(form[2], form), old,
                        parse_value(form[4], form)))
        ops.named = True
    else:
        raise TransactionError(f"malformed op {_show(form)}; expected one of {OP_NAMES}",
                               form=form)


_MAP_NUMBERS = itertools.count(1)  # tells maps without :db/id apart


def _parse_entity_map(form: Mapping[Any, Any], ops: TxOps) -> None:
    attrs = {parse_attribute(a, form): v for a, v in form.items()}
    if any(needs_schema(a, v) for a, v in attrs.items() if a is not DB_ID):
        ops.maps.append((len(ops.adds), form))  # expanded by workers.db.resolve
        ops.named = True
        return
    e = map_entity(attrs, form, ops)
    for a, v in attrs.items():
        if a is DB_ID:
            continue
        many = isinstance(v, Sequence | frozenset | set) and not isinstance(v, str)
        for value in (v if many else (v,)):
            ops.adds.append(_datom(e, a, value, form, ops))


def map_entity(attrs: Mapping[Any, Any], form: Any, ops: TxOps) -> Any:
    """The entity of an entity map: its ``:db/id``, the attribute its ``:db/ident`` names
    (a schema entity), else a new one."""
    if DB_ID in attrs:
        return parse_entity(attrs[DB_ID], form, ops)
    if DB_IDENT in attrs:
        return parse_entity(attrs[DB_IDENT], form, ops)
    ops.named = True
    return TempId(None, next(_MAP_NUMBERS))


def needs_schema(a: Any, v: Any) -> bool:
    """Whether a map's entry means what the schema says: a reverse attribute, a nested map,
    a vector of two starting with a keyword (a lookup ref under a ref attribute, else two
    values), or a collection holding maps or vectors."""
    if is_reverse(a) or isinstance(v, Mapping):
        return True
    if isinstance(v, str) or not isinstance(v, Sequence | frozenset | set):
        return False
    return ((isinstance(v, Sequence) and len(v) == 2 and isinstance(v[0], edn_format.Keyword))
            or any(isinstance(x, Mapping | list | tuple) for x in v))


def is_reverse(a: Any) -> bool:
    """``:p/_friend``: the reverse of ``:p/friend``."""
    return isinstance(a, edn_format.Keyword) and a.name.rpartition("/")[2].startswith("_")


def forward(a: Any) -> Any:
    """The attribute a reverse one (:func:`is_reverse`) stands for: ``:p/friend``."""
    namespace, slash, name = a.name.rpartition("/")
    return keyword(namespace + slash + name[1:])


def _datom(e: Any, a: Any, v: Any, form: Any, ops: TxOps) -> Datom:
    if type(a) is Keyword and type(e) is int and 0 <= e <= LONG_MAX and (
            type(v) in PLAIN_VALUES or (type(v) is int and LONG_MIN <= v <= LONG_MAX)):
        return e, a, v  # the usual datom, checked without a call per position
    v = parse_value(v, form)
    if type(v) is LookupRef:
        ops.named = True
    return parse_entity(e, form, ops), parse_attribute(a, form), v


PLAIN_VALUES = frozenset({str, float, bool, Keyword})  # valid values whatever they hold


def _intern(x: Any) -> Any:
    if type(x) is Keyword or not isinstance(x, edn_format.Keyword):
        return x
    return keyword(x.name)


def parse_entity(e: Any, form: Any, ops: TxOps) -> Any:
    e = _intern(e)
    if isinstance(e, TempId | LookupRef):
        ops.named = True
        return e
    if isinstance(e, str) or (type(e) is int and LONG_MIN <= e < 0):
        ops.named = True
        return TempId(e)
    if isinstance(e, list | tuple) and len(e) == 2 and isinstance(e[0], edn_format.Keyword):
        ops.named = True
        return LookupRef(_intern(e[0]), parse_value(e[1], form))
    if not is_entity_id(e):
        raise TransactionError(f"entity id must be a long, keyword or uuid, a tempid (a "
                               f"negative long or a string) or a lookup ref [attribute value], "
                               f"got {type_name(e)} {_show(e)} in {_show(form)}",
                               code=ErrorCode.TX_TYPE, form=form)
    return e


def parse_attribute(a: Any, form: Any) -> Any:
    a = _intern(a)
    if not isinstance(a, Keyword):
        raise TransactionError(f"attribute must be a keyword, got {type_name(a)} {_show(a)} "
                               f"in {_show(form)}", code=ErrorCode.TX_TYPE, form=form)
    return a


def parse_value(v: Any, form: Any) -> Any:
    v = _intern(v)
    if isinstance(v, list | tuple) and len(v) == 2 and isinstance(v[0], edn_format.Keyword):
        return LookupRef(_intern(v[0]), parse_value(v[1], form))  # of a ref attribute only
    if not is_value(v):
        raise TransactionError(f"unsupported value {_show(v)} ({type_name(v)}) in {_show(form)}",
                               code=ErrorCode.TX_TYPE, form=form)
    return v
