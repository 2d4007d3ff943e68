"""Z-sets as id tables: inline SQL for small ones, DataFrames otherwise.

DataFrames need one type per column, datoms mix longs, strings, keywords, instants...  The
engine numbers every value once (:class:`~workers.arrangements.values.ValueIds`, a
dictionary encoding, as column stores and RDF stores do), so tables carry ``long`` ids: rows
``c0..c{n-1}, w``, datoms ``e, a, v, w``, and rows come back as ids, as the local executor's
do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from workers.executors.spark.sql import INLINE_ROWS, WEIGHT, Source, values

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Row = tuple[Any, ...]
DATOM_COLUMNS = ("e", "a", "v")


def id_frame(session: SparkSession, rows: Mapping[Any, int],
             names: Sequence[str]) -> DataFrame:
    """Id tuples and weights as a DataFrame (through Arrow)."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    table = pa.table({**{name: pa.array(column, pa.int64())
                         for name, column in zip(names, columns, strict=True)},
                      WEIGHT: pa.array(list(rows.values()), pa.int64())})
    return session.createDataFrame(table)


def id_source(session: SparkSession, rows: Mapping[Any, int],
              names: Sequence[str]) -> Source:
    """``rows`` as an inline ``VALUES`` subquery when small, else as a DataFrame; built
    once and read by every query of a tick (``Sql.source``)."""
    if len(rows) <= INLINE_ROWS:
        return values(rows, names)
    return id_frame(session, rows, names)


def collect_rows(frame: DataFrame, width: int) -> dict[Row, int]:
    """Run ``frame`` (columns ``c0..``, ``w``) and collect it as a Z-set of id tuples."""
    result = frame.toArrow()
    columns = [result.column(f"c{i}").to_pylist() for i in range(width)]
    weights = result.column(WEIGHT).to_pylist()
    if not columns:  # a query without find columns: at most one (empty) row
        return {(): weights[0]} if weights else {}
    return {tuple(values): weight for *values, weight in zip(*columns, weights, strict=True)}
