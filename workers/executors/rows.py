"""What a step or an evaluation gives back: rows of value ids with their weights, and the
work it took — decoded into rows of values once, where they leave the executors.

The row-at-a-time executors (and Spark's steps) give a dict ``{row of ids: weight}``; the
vectorised one (and Spark's evaluations) give columns, a :class:`Frame`, so that a big
result's million rows become tuples once, decoded a column at a time.
"""

from __future__ import annotations

from workers.arrangements.values import Numbering
from workers.executors.vectorised import Frame
from workers.executors.work import Work
from workers.find import Aggregation, Projection
from workers.zset import ZSet
from workers.zset.row import Row

# Rows of value ids and their weights, as an executor gives them.
IdRows = ZSet[Row] | Frame
# A query's step or evaluation: its rows of value ids, and the work it took.
Stepped = tuple[IdRows, Work]


def decoded(rows: IdRows, ids: Numbering) -> ZSet[Row]:
    """Rows of value ids as rows of values, each a :class:`~workers.zset.row.Row` (one
    value per id, and ``1``, ``1.0``, ``true`` kept apart: no two rows merge); columns a
    column at a time, then zipped into rows once."""
    if isinstance(rows, Frame):
        columns = [ids.values(column) for column in rows.columns]
        keys = map(Row, zip(*columns, strict=True)) if columns else [Row()] * len(rows)
        return dict(zip(keys, rows.weights.tolist(), strict=True))
    value = ids.value
    return {Row(map(value, row)): weight for row, weight in rows.items()}


def reset(aggregation: Aggregation | Projection | None, rows: IdRows, ids: Numbering
          ) -> ZSet[Row]:
    """A query's full result from its full evaluation: the rows decoded, or an aggregate's
    groups started over — from a frame's id columns when there is one, with no Python row
    per basis tuple (a count of 10^7 triangles holds their id columns, not 10^7 rows)."""
    if isinstance(aggregation, Aggregation) and isinstance(rows, Frame):
        return aggregation.reset_columns(rows.columns, rows.weights, ids.values)
    decoded_rows = decoded(rows, ids)
    return decoded_rows if aggregation is None else aggregation.reset(decoded_rows)


def step(aggregation: Aggregation | Projection | None, rows: IdRows, ids: Numbering
         ) -> ZSet[Row]:
    """A query's result changes from its step's set changes: the rows decoded, or an
    aggregate's groups stepped — from a frame's id columns when there is one, as
    :func:`reset` does (a tick's changed triangles are not decoded one by one)."""
    if isinstance(aggregation, Aggregation) and isinstance(rows, Frame):
        return aggregation.step_columns(rows.columns, rows.weights, ids.values)
    decoded_rows = decoded(rows, ids)
    return decoded_rows if aggregation is None or not decoded_rows else (
        aggregation.step(decoded_rows))
