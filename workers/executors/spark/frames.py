"""Values as ids, and Z-sets as id tables: inline SQL for small ones, DataFrames otherwise.

DataFrames need one type per column, datoms mix longs, strings, keywords, instants...  So
every value is numbered once per process (:class:`ValueIds`, a dictionary encoding, as
column stores and RDF stores do) and tables carry ``long`` ids: rows ``c0..c{n-1}, w``,
datoms ``e, a, v, w``.  Ids compare equal exactly when the values do under Python equality —
the same equality the local tries use — so both executors join the same pairs.
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


class ValueIds:
    """A dictionary encoding of every value seen: ``id(value)`` and ``value(id)``."""

    __slots__ = ("_ids", "_values")

    def __init__(self) -> None:
        self._ids: dict[Any, int] = {}
        self._values: list[Any] = []

    def id(self, value: Any) -> int:
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self._values)
            self._values.append(value)
        return found

    def value(self, value_id: int) -> Any:
        return self._values[value_id]

    def encode(self, zset: Mapping[Row, int]) -> dict[tuple[int, ...], int]:
        encode = self.id
        return {tuple(encode(x) for x in row): weight for row, weight in zset.items()}

    def __len__(self) -> int:
        return len(self._values)


def id_frame(session: SparkSession, rows: Mapping[tuple[int, ...], int],
             names: Sequence[str]) -> DataFrame:
    """Id tuples and weights as a DataFrame (through Arrow)."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    table = pa.table({**{name: pa.array(column, pa.int64())
                         for name, column in zip(names, columns, strict=True)},
                      WEIGHT: pa.array(list(rows.values()), pa.int64())})
    return session.createDataFrame(table)


def id_source(session: SparkSession, rows: Mapping[tuple[int, ...], int],
              names: Sequence[str]) -> Source:
    """``rows`` as an inline ``VALUES`` subquery when small, else as a DataFrame; built
    once and read by every query of a tick (``Sql.source``)."""
    if len(rows) <= INLINE_ROWS:
        return values(rows, names)
    return id_frame(session, rows, names)


def collect_rows(ids: ValueIds, frame: DataFrame, width: int) -> dict[Row, int]:
    """Run ``frame`` (columns ``c0..``, ``w``) and decode it into a Z-set of value tuples."""
    result = frame.toArrow()
    decode = ids.value
    columns = [result.column(f"c{i}").to_pylist() for i in range(width)]
    weights = result.column(WEIGHT).to_pylist()
    if not columns:  # a query without find columns: at most one (empty) row
        return {(): weights[0]} if weights else {}
    return {tuple(decode(x) for x in values): weight
            for *values, weight in zip(*columns, weights, strict=True)}
