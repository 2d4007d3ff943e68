"""One pattern read through one :class:`ExtenderSpec`, as a SQL subquery.

The local executor walks a trie depth by depth; on Spark the same steps become clauses
over a datom table ``(e, a, v, w)`` (or a derived relation's ``(r0, r1, ..., w)``):

- ``CONST c``  → ``WHERE col = id(c)``
- ``BOUND i``  → key column ``k{i}``, joined to row column ``c{i}``
- ``BIND j``   → bind column ``x{j}`` (the value the extender proposes)
- ``SAME j``   → ``WHERE col = <the column bound to x{j}>`` (a repeated variable)
- ``FREE``     → dropped, its weights summed (``_``, or a variable bound at a later level)

The datom tables are consolidated (``old``/``new`` are sets, ``Δ`` a consolidated Z-set),
so without a ``FREE`` step every datom gives a distinct row and needs no aggregation.
With one, rows are grouped by keys and binds, weights summed and zeros dropped — the Z-set
the trie holds.  An unweighted extender's weight is presence (1), as locally.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.arrangements.keys import IndexOrder
from workers.arrangements.values import ValueIds
from workers.executors.spark.frames import DATOM_COLUMNS
from workers.executors.spark.sql import WEIGHT, Sql, conjunction
from workers.plan.ir import ExtenderSpec, StepKind


@dataclass(frozen=True, slots=True)
class Relation:
    """Subquery ``name`` has columns ``k{i}`` (for each row column in ``keys``), ``x{j}``
    for ``j < binds``, and ``w``."""

    name: str
    keys: tuple[int, ...]
    binds: int


def key(i: int) -> str:
    return f"k{i}"


def bind(j: int) -> str:
    return f"x{j}"


def relation_column(position: int) -> str:
    """Column ``position`` of a derived relation's table."""
    return f"r{position}"


def column_at(spec: ExtenderSpec, depth: int) -> str:
    """The table column the spec's trie depth ``depth`` reads: ``e``/``a``/``v`` of the
    datoms, or ``r{i}`` of a derived relation."""
    if isinstance(spec.order, IndexOrder):
        return DATOM_COLUMNS[spec.order.positions[depth]]
    return relation_column(spec.order[depth])


def relation(sql: Sql, spec: ExtenderSpec, table: str, ids: ValueIds) -> Relation:
    """Add the Z-set ``spec`` reads from ``table`` to ``sql``, keyed by its lookups."""
    keys: dict[int, str] = {}
    binds: dict[int, str] = {}
    filters: list[str] = []
    free = False
    for depth, step in enumerate(spec.steps):
        datom_column = column_at(spec, depth)
        if step.kind is StepKind.CONST:
            filters.append(f"{datom_column} = {ids.intern(step.arg)}L")
        elif step.kind is StepKind.BOUND and step.arg in keys:
            filters.append(f"{datom_column} = {keys[step.arg]}")
        elif step.kind is StepKind.BOUND:
            keys[step.arg] = datom_column
        elif step.kind is StepKind.BIND:
            binds[step.arg] = datom_column
        elif step.kind is StepKind.SAME:
            filters.append(f"{datom_column} = {binds[step.arg]}")
        else:
            free = True
    names = [key(i) for i in sorted(keys)] + [bind(j) for j in sorted(binds)]
    sources = [keys[i] for i in sorted(keys)] + [binds[j] for j in sorted(binds)]
    columns = ", ".join(f"{source} AS {name}" for source, name in zip(sources, names,
                                                                        strict=True))
    select = f"{columns}, " if columns else ""
    where = conjunction(filters)
    if not free:
        weight = WEIGHT if spec.weighted else f"1L AS {WEIGHT}"
        body = f"SELECT {select}{weight} FROM {table} WHERE {where}"
    else:
        group = f" GROUP BY {', '.join(sources)}" if sources else ""
        weight = f"SUM({WEIGHT})" if spec.weighted else "1L"
        body = (f"SELECT {select}{weight} AS {WEIGHT} FROM {table} WHERE {where}{group} "
                f"HAVING SUM({WEIGHT}) != 0")
    return Relation(sql.add(body), tuple(sorted(keys)), len(binds))
