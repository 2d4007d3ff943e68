"""A query's ``:find`` as the columns of a PostgreSQL table, and its rows as that table's rows.

One column per ``:find`` element, named after it (``?a`` → ``a``, ``(count ?b)`` →
``count_b``, ``(pull ?e [*])`` → ``pull_e``; ``:keys`` names win), lower-cased, anything but
letters, digits and ``_`` replaced by ``_``, made unique with a ``_2`` suffix.  Beside them:

- ``row_key bytea`` (the primary key): BLAKE2b-128 of the row's canonical EDN text
  (:func:`workers.kafka.messages.canonical_edn`), the identity the worker keys rows by;
- ``weight bigint``: 1 in a set, the multiplicity in a bag (``:with`` without aggregates) —
  one table row per distinct row, never a weight of 0 or less once a transaction commits
  (a row whose weight reaches 0 is deleted in the same one; one below 0 fails it).

A column is typed when the query says what its values are (:func:`column_kinds`):

| values | column |
| --- | --- |
| a variable bound at the value of an attribute declared ``:db.type/long`` | ``bigint`` |
| ``:db.type/double``, ``:db.type/float`` | ``double precision`` |
| ``:db.type/string`` | ``text`` |
| ``:db.type/boolean`` | ``boolean`` |
| ``:db.type/keyword`` | ``text``, the EDN spelling (``:g/to``) |
| ``:db.type/instant`` | ``timestamptz`` |
| ``:db.type/uuid`` | ``uuid`` |
| ``(count ?x)``, ``(count-distinct ?x)`` | ``bigint`` |
| ``(avg ?x)``, ``(variance ?x)``, ``(stddev ?x)`` | ``double precision`` |
| ``(min ?x)``, ``(max ?x)``, ``(sum ?x)`` of a typed ``?x`` | ``?x``'s (``sum``: numbers only) |
| anything else | ``text``: canonical EDN |

Anything else: untyped attributes, entity ids and refs (a long, keyword, string or uuid),
``:in`` values, function results, ``(distinct ?x)``, ``(min n ?x)``, ``median``, pulls.

Untyped values are stored as their canonical EDN text, which keeps the kind: ``5`` (a long),
``5.0`` (a double), ``"5"`` (a string), ``:five`` (a keyword), ``#inst "…"``, ``#uuid "…"``,
``#{1 2}``, ``[1 2]``, ``{:a 1}``, ``nil`` — and reads back with :func:`workers.edn.read`.
"""

from __future__ import annotations

import datetime
import hashlib
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import edn_format

from workers.datalog.ast import Aggregate, Constant, Pattern, Pull, Query, Variable
from workers.errors import ErrorCode, WorkersError
from workers.kafka.messages import canonical_edn
from workers.zset.row import Row

ROW_KEY = "row_key"
WEIGHT = "weight"
MAX_IDENTIFIER = 63  # PostgreSQL's NAMEDATALEN - 1

# kind -> (SQL type, the Python values a column of that kind takes)
KINDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "long": ("bigint", (int,)),
    "double": ("double precision", (float, int)),
    "string": ("text", (str,)),
    "boolean": ("boolean", (bool,)),
    "keyword": ("text", (edn_format.Keyword,)),
    "instant": ("timestamptz", (datetime.datetime,)),
    "uuid": ("uuid", (uuid.UUID,)),
    "edn": ("text", ()),
}
# :db/valueType (without the colon) -> kind; refs hold entity ids of any kind: EDN.
VALUE_TYPE_KINDS = {"db.type/long": "long", "db.type/double": "double",
                    "db.type/float": "double", "db.type/string": "string",
                    "db.type/boolean": "boolean", "db.type/keyword": "keyword",
                    "db.type/instant": "instant", "db.type/uuid": "uuid"}
NUMBER_KINDS = frozenset({"long", "double"})


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str  # a key of KINDS

    @property
    def sql_type(self) -> str:
        return KINDS[self.kind][0]

    def as_json(self) -> list[str]:
        return [self.name, self.kind]


class SinkError(WorkersError):
    code = ErrorCode.SINK


def columns_of(query: Query, value_types: Mapping[str, str]) -> tuple[Column, ...]:
    """The table columns of ``query``'s ``:find``; ``value_types`` maps attribute names
    (``"age"``, ``"g/to"``) to their declared ``:db/valueType`` (``"db.type/long"``)."""
    names = column_names(query)
    return tuple(Column(name, kind)
                 for name, kind in zip(names, column_kinds(query, value_types), strict=True))


def column_names(query: Query) -> list[str]:
    if query.keys is not None:
        raw = list(query.keys[1])
    else:
        raw = [_element_name(element) for element in query.find]
    names: list[str] = []
    taken = {ROW_KEY, WEIGHT}
    for name in raw:
        base = re.sub(r"[^0-9a-z_]", "_", name.lower()).strip("_") or "col"
        if base[0].isdigit():
            base = f"c_{base}"
        base, candidate, n = base[:MAX_IDENTIFIER - 4], base[:MAX_IDENTIFIER], 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        names.append(candidate)
    return names


def _element_name(element: Any) -> str:
    if isinstance(element, Variable):
        return element.name.lstrip("?")
    if isinstance(element, Aggregate):
        n = "" if element.n is None else (
            f"{element.n.name.lstrip('?')}_" if isinstance(element.n, Variable)
            else f"{element.n.value}_")
        return f"{element.fn}_{n}{element.var.name.lstrip('?')}"
    assert isinstance(element, Pull)
    return f"pull_{element.var.name.lstrip('?')}"


def column_kinds(query: Query, value_types: Mapping[str, str]) -> list[str]:
    """The kind of each ``:find`` element (module docstring's table).  A variable is typed
    by the patterns of the top-level ``:where`` that bind it at an attribute's value: every
    solution satisfies them all, so its values have that attribute's type (two different
    types: no solution has it, EDN all the same)."""
    bound: dict[Variable, set[str]] = {}
    for clause in query.where:
        if (isinstance(clause, Pattern) and isinstance(clause.a, Constant)
                and isinstance(clause.a.value, edn_format.Keyword)
                and isinstance(clause.v, Variable)):
            kind = VALUE_TYPE_KINDS.get(value_types.get(clause.a.value.name, ""), "edn")
            bound.setdefault(clause.v, set()).add(kind)

    def of(var: Variable) -> str:
        kinds = bound.get(var, {"edn"})
        return next(iter(kinds)) if len(kinds) == 1 else "edn"

    kinds = []
    for element in query.find:
        if isinstance(element, Variable):
            kinds.append(of(element))
        elif isinstance(element, Aggregate) and element.n is None:
            kinds.append(_aggregate_kind(element.fn, of(element.var)))
        else:
            kinds.append("edn")
    return kinds


def _aggregate_kind(fn: str, var_kind: str) -> str:
    if fn in ("count", "count-distinct"):
        return "long"
    if fn in ("avg", "variance", "stddev"):
        return "double"
    if fn in ("min", "max"):
        return var_kind
    if fn == "sum" and var_kind in NUMBER_KINDS:
        return var_kind
    return "edn"  # distinct (a set), median (of longs: a long or a ratio), sum of untyped


Encoder = Callable[[Any], Any]


def encoders(columns: Sequence[Column]) -> list[Encoder]:
    """Per column, the function from a row's value to what PostgreSQL gets."""
    return [_encoder(column) for column in columns]


def _encoder(column: Column) -> Encoder:
    if column.kind == "edn":
        return canonical_edn
    accepted = KINDS[column.kind][1]

    def encode(value: Any) -> Any:
        # bool is an int: a long column refuses it, as a boolean column refuses 1
        if not isinstance(value, accepted) or (isinstance(value, bool)
                                               and column.kind != "boolean"):
            raise SinkError(f"column {column.name} ({column.sql_type}, from the schema) got "
                            f"{canonical_edn(value)}: the attribute's type changed since the "
                            "table was made, or a refused schema transaction declared it; "
                            "drop the table to have it made again", form=value)
        if column.kind == "keyword":
            return canonical_edn(value)
        return float(value) if column.kind == "double" else value  # type: ignore[arg-type]

    return encode


def row_key(row: Row) -> bytes:
    """The table's key of ``row``: a digest of its canonical EDN (bounded, whatever the
    values: an index of the values themselves would refuse a large pulled map)."""
    return hashlib.blake2b(canonical_edn(row).encode(), digest_size=16).digest()


def table_row(row: Row, weight: int, encode: Sequence[Encoder]) -> tuple[Any, ...]:
    """``(row_key, values..., weight)`` as the table holds them."""
    if len(row) != len(encode):
        raise SinkError(f"a row of {len(row)} values for a table of {len(encode)} columns",
                        form=row)
    return (row_key(row), *(f(value) for f, value in zip(encode, row, strict=True)), weight)
