"""What a one-shot query returns: its result shaped by the find specification.

Datomic's four shapes, over the same relation (a set, or a bag for ``:with`` alone):

- find-rel ``[:find ?a ?b ...]``: the relation ``{row: multiplicity}``, or with
  ``:keys``/``:strs``/``:syms`` a list of maps (a bag's row once per copy);
- find-coll ``[:find [?a ...] ...]``: a list of the single column's values;
- find-tuple ``[:find [?a ?b] ...]``: one row as a tuple (a map under ``:keys``), or None;
- find-scalar ``[:find ?a . ...]``: one row's single value, or None.

Tuple and scalar take any one row, as Datomic does.  A registered query keeps the relation
whatever its specification: its change stream is the relation's changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workers.datalog.ast import FindSpec
from workers.edn import Symbol, keyword
from workers.zset.row import Row


def shaped(spec: FindSpec, keys: tuple[str, tuple[str, ...]] | None,
           rows: Mapping[Row, int]) -> Any:
    """A query's rows as its find specification ``spec`` (and ``:keys``) asks."""
    if spec == "collection":
        return [row[0] for row, copies in rows.items() for _ in range(copies)]
    if spec in ("tuple", "scalar"):
        row = next(iter(rows), None)
        if row is None:
            return None
        if spec == "scalar":
            return row[0]
        return row if keys is None else as_maps(keys, {row: 1})[0]
    return dict(rows) if keys is None else as_maps(keys, rows)


def as_maps(keys: tuple[str, tuple[str, ...]], rows: Mapping[Row, int]) -> list[dict[Any, Any]]:
    """Rows as maps named by ``:keys`` (keywords), ``:strs`` (strings) or ``:syms``; a row
    of a bag once per copy."""
    kind, names = keys
    make = {":keys": keyword, ":strs": str, ":syms": Symbol}[kind]
    labels = [make(name) for name in names]
    return [dict(zip(labels, row, strict=True)) for row, weight in rows.items()
            for _ in range(weight)]
