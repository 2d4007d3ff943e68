"""The rows a Spark task gives back, as Arrow: id rows in columns ``c0..c{n-1}`` with their
weight ``w``, and — when one job answers for several queries (a step of the tick's queries,
a read and step at once) — the number of the query each row belongs to, ``q``: rows of a
narrower query padded to the job's width.  Tasks encode with :func:`tag_rows` and the
``from_*`` functions; the driver decodes with :func:`by_query`, :func:`to_rows` and
:func:`datoms_of`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

import numpy as np
import pyarrow as pa

from workers.arrangements.batch import Ids, Ints
from workers.executors.vectorised import Frame
from workers.zset import ZSet
from workers.zset.row import Row

WEIGHT = "w"
QUERY = "q"  # a step's rows: which of the tick's plans each belongs to


def column(i: int) -> str:
    return f"c{i}"


def schema(width: int, tagged: bool = False) -> str:
    """The Spark schema of id rows ``width`` wide with their weights (``tagged``: after the
    number of the query each belongs to)."""
    return ", ".join([f"{QUERY} long"] * tagged + [*(f"{column(i)} long" for i in range(width)),
                                                   f"{WEIGHT} long"])


def arrow_schema(width: int, tagged: bool = False) -> pa.Schema:
    names = [QUERY] * tagged + [*map(column, range(width)), WEIGHT]
    return pa.schema([(name, pa.int64()) for name in names])


def tag_rows(rows: pa.RecordBatch, query: int, width: int) -> pa.RecordBatch:
    """Rows of one query tagged with its number, their columns padded to ``width``."""
    count = rows.num_rows
    padding = pa.array(np.zeros(count, np.int64))
    arrays = [pa.array(np.full(count, query, np.int64)),
              *(rows.column(i) if i < rows.num_columns - 1 else padding for i in range(width)),
              rows.column(WEIGHT)]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(width, tagged=True))


def by_query(table: pa.Table, queries: int) -> list[pa.Table]:
    """The rows of a step's table, by the query they belong to (one sort, not a pass over
    the table per query)."""
    tags = table.column(QUERY).to_numpy()
    order = np.argsort(tags, kind="stable")
    bounds = np.searchsorted(tags[order], np.arange(queries + 1)).tolist()
    ordered = table.take(pa.array(order))
    return [ordered.slice(lo, hi - lo) for lo, hi in pairwise(bounds)]


def from_frame(frame: Frame) -> pa.RecordBatch:
    return from_columns(frame.columns, frame.weights)


def from_columns(columns: Sequence[Ids | Ints], weights: Ints) -> pa.RecordBatch:
    arrays = [pa.array(c, pa.int64()) for c in [*columns, weights]]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(len(columns)))


def from_rows(rows: Mapping[Row, int], width: int) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in range(width)]
    arrays = [pa.array(c, pa.int64()) for c in columns]
    arrays.append(pa.array(list(rows.values()), pa.int64()))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(width))


def to_rows(table: pa.Table, width: int) -> ZSet[Row]:
    """Collected id rows as a Z-set (equal rows from several tasks summed, zeros dropped)."""
    weights = table.column(WEIGHT).to_pylist()
    if not width:  # no find columns: at most one (empty) row
        total = sum(weights)
        return {(): total} if total else {}
    columns = [table.column(column(i)).to_pylist() for i in range(width)]
    out: ZSet[Row] = {}
    for row, weight in zip(zip(*columns, strict=True), weights, strict=True):
        out[row] = out.get(row, 0) + weight
    return {row: weight for row, weight in out.items() if weight}


def datoms_of(table: pa.Table) -> tuple[Ids, Ids, Ids]:
    """The first three columns of collected rows: datoms' ids."""
    e, a, v = (table.column(column(i)).to_numpy().astype(np.int32) for i in range(3))
    return e, a, v
