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

from workers.datalog.ast import Query
from workers.zset.aggregate import as_maps

Row = tuple[Any, ...]


def shaped(query: Query, rows: Mapping[Row, int]) -> Any:
    """The result of ``query`` as its find specification (and ``:keys``) asks."""
    if query.find_spec == "collection":
        return [row[0] for row, copies in rows.items() for _ in range(copies)]
    if query.find_spec in ("tuple", "scalar"):
        row = next(iter(rows), None)
        if row is None:
            return None
        if query.find_spec == "scalar":
            return row[0]
        return row if query.keys is None else as_maps(query.keys, {row: 1})[0]
    return dict(rows) if query.keys is None else as_maps(query.keys, rows)
