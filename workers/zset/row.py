"""Rows and values that keep their kind: ``1``, ``1.0`` and ``true`` are three values.

Datomic (and ``docs/semantics.md``) has a long ``1``, a double ``1.0`` and a boolean ``true``
as three values; Python finds them equal (``1 == 1.0 == True``, and they hash alike), so a
dict keyed by plain tuples would merge their rows — and a Z-set that merges two rows no
longer integrates to the result.  Three things here keep them apart:

- :func:`same`, the equality of values (Clojure's ``=``): Python's equality *and* one kind
  for every number inside — bool, int, float and Decimal are four kinds — recursively
  through vectors, sets and maps.  Values of other types compare as Python compares them
  (an interned keyword equals a plain ``edn_format`` one).
- :class:`Row`, the tuple every result row is: tuple's hash, but equal to another tuple
  only when :func:`same` holds element by element.  A plain tuple of the same kinds still
  equals it, both ways (Python tries a subclass's reflected ``__eq__`` first), so
  ``{Row((1, "a")): 1} == {(1, "a"): 1}``, while ``(1,)``, ``(1.0,)`` and ``(True,)`` are
  three keys of one dict.  The kinds are looked at only once the tuples compare equal (a
  dict lookup meets an equal hash), and then only where two elements' types differ or an
  element is a collection: rows of one kind per column pay one pass over their types.
- :class:`ValueSet`, the set a query makes (``(distinct ?x)``, ``(set ?xs)``): a frozenset
  that holds ``1``, ``1.0`` and ``true`` as three elements and iterates over the values.

Invariant: ``same(a, b)`` implies ``a == b`` and ``hash(a) == hash(b)`` — so a kind-aware key
may sit in any dict or set beside plain ones.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import edn_format
from edn_format.immutable_list import ImmutableList

from workers import edn

# Types whose equality between two values *of that type* already keeps kinds apart.
SCALARS = frozenset({int, float, bool, str, Decimal, type(None), edn.Keyword, edn_format.Keyword,
                     edn_format.Symbol, datetime.datetime, datetime.date, uuid.UUID})
_NUMBER_KINDS = (bool, float, Decimal)  # tagged by ``typed``; int is the untagged number
_VECTOR = "[]"  # tags a sequence in ``typed`` (vectors, lists and tuples compare alike)


def typed(x: Any) -> Any:
    """``x`` with every number of a kind other than long tagged with its type, recursively:
    two values are :func:`same` iff they are equal and their ``typed`` forms are equal."""
    kind = type(x)
    if kind in _NUMBER_KINDS:
        return (kind, x)
    if kind is int or kind in SCALARS:
        return x
    if isinstance(x, Mapping):
        return frozenset((typed(k), typed(v)) for k, v in x.items())
    if isinstance(x, tuple | list | ImmutableList):
        return (_VECTOR, tuple(typed(i) for i in x))
    if isinstance(x, frozenset | set):
        return frozenset(typed(i) for i in x)
    return x


def same(x: Any, y: Any) -> bool:
    """Whether ``x`` and ``y`` are one value: equal, and of one kind (Clojure's ``=``:
    ``(= 1 1.0)`` and ``(= 1 true)`` are false, ``(= [1] [1.0])`` too)."""
    kind = type(x)
    if kind is type(y) and kind in SCALARS:
        return bool(x == y)
    return bool(x == y) and bool(typed(x) == typed(y))


def _kinds_agree(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two tuples Python finds equal hold values of the same kinds, place by place."""
    for x, y in zip(a, b):  # noqa: B905 — equal tuples have equal lengths
        kind = type(x)
        if (kind is not type(y) or kind not in SCALARS) and not same(x, y):
            return False
    return True


class KindedRow(tuple):  # type: ignore[type-arg]
    """A result row (:data:`Row`): a tuple that equals another only when their values are
    :func:`same`.

    Its hash is tuple's (``1``, ``1.0`` and ``True`` hash alike already), so it is found in a
    dict of plain tuples and a plain tuple in a dict of Rows; only the equality is stricter.
    Slices and concatenations are plain tuples: wrap them again to key a dict.
    """

    __slots__ = ()

    __hash__ = tuple.__hash__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tuple):
            return NotImplemented
        if tuple.__eq__(self, other) is not True:
            return False
        kinds = tuple(map(type, self))  # the usual case at C speed: the same scalar types
        if kinds == tuple(map(type, other)) and SCALARS.issuperset(kinds):
            return True
        return _kinds_agree(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal


# The one ``Row`` of deltalog: every annotation of a row (a Z-set of rows is ``ZSet[Row]``,
# :mod:`workers.zset.zset`) imports it from here.  ``Row(values)`` makes a kind-aware row; to
# the type checker a Row is a tuple, so a plain tuple annotated ``Row`` stays a plain tuple
# (a subclass would make every ``dict[tuple, int]`` of the callers a type error: dict keys
# are invariant).  Annotations are never evaluated (``from __future__ import annotations``),
# so importing ``Row`` for them changes no class that is constructed.
if TYPE_CHECKING:
    Row = tuple[Any, ...]
else:
    Row = KindedRow


def _canonical(values: Iterable[Any]) -> tuple[Any, ...]:
    """The values ordered by their type's name, then value (then text, where a type's
    values do not compare)."""
    try:
        return tuple(sorted(values, key=lambda v: (type(v).__name__, v)))
    except TypeError:
        return tuple(sorted(values, key=lambda v: (type(v).__name__, repr(v))))


def value_key(value: Any) -> Row:
    """A dict key for one value that keeps its kind (a bag of values: ``{value_key(v): n}``;
    ``value_key(v)[0]`` is ``v``)."""
    return KindedRow((value,))


class ValueSet(frozenset):  # type: ignore[type-arg]
    """A set of values in which ``1``, ``1.0`` and ``true`` are three elements.

    Stored as the values' :func:`typed` forms (so length, hash-set membership and equality
    between two ValueSets keep kinds apart) beside the values themselves, which iteration
    yields in an order that depends on the set only (by type, then value: an Avro key or EDN
    text made of it is the same whatever order the values came in).  Equals a plain set of
    the same values; its hash is that plain set's.
    """

    __slots__ = ("_values",)
    _values: tuple[Any, ...]

    def __new__(cls, values: Iterable[Any] = ()) -> ValueSet:
        chosen: dict[Any, Any] = {}
        for value in values:
            chosen.setdefault(typed(value), value)
        made = super().__new__(cls, chosen)
        made._values = _canonical(chosen.values())
        return made

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __contains__(self, value: object) -> bool:
        return frozenset.__contains__(self, typed(value))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ValueSet):
            return frozenset.__eq__(self, other)
        if isinstance(other, frozenset | set):
            return frozenset.__eq__(self, frozenset(typed(x) for x in other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(frozenset(self._values))

    def __repr__(self) -> str:
        return f"ValueSet({list(self._values)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ValueSet, (self._values,))
