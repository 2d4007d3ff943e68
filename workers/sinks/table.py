"""A sink's table in PostgreSQL and its position row, written together: every write is one
database transaction holding both the rows and the position they are the view at.

The position table, ``deltalog_sink`` in the table's schema, one row per sink table::

    sink_table    text primary key   -- "schema.table"
    query         text               -- the query it keeps, of topic prefix topic_prefix
    topic_prefix  text
    registration  bigint             -- the query's registration the rows are the result of
    tx            bigint             -- ... after this transaction (offset in deltalog.tx)
    next_offset   bigint             -- the next offset of deltalog.results.<query> to read
    epoch         bigint             -- raised by each sink that opens the table
    columns       jsonb              -- [[name, kind], ...]; null until the table is made
    updated_at    timestamptz

Two guards keep a table to one sink:

1. a session-level advisory lock on the table's name, taken when a sink opens it and held as
   long as its connection lives: a second sink is **refused** while the first runs (its
   process killed, its connection closes and the lock goes with it);
2. the **epoch**: every write updates the position row ``WHERE epoch = <its own>``, so a sink
   whose lock went (its session ended under it, or a pooler in transaction mode gave its
   statements another session) and that another sink opened since is **fenced**: its
   transaction writes nothing and it stops.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from workers.errors import ErrorCode, WorkersError
from workers.sinks.columns import ROW_KEY, WEIGHT, Column, SinkError, encoders, table_row
from workers.zset import ZSet
from workers.zset.row import Row

POSITIONS = "deltalog_sink"
DELTA = "deltalog_delta"  # the session's temporary table a transaction's changes are copied to


class SinkFenced(WorkersError):
    code = ErrorCode.SINK_FENCED


@dataclass(frozen=True, slots=True)
class Position:
    """Where the table's rows stand: the result of ``registration`` after ``tx``, the change
    stream read up to ``offset`` (next to read).  ``registration`` None: no rows yet."""

    registration: int | None
    tx: int
    offset: int
    columns: tuple[Column, ...] | None


class SinkTable:
    """The table ``name`` (``table`` or ``schema.table``) on ``conn`` (not autocommit)."""

    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        self.conn = conn
        schema, _, table = name.rpartition(".")
        if not schema:
            row = conn.execute("SELECT current_schema()").fetchone()
            if row is None or row[0] is None:
                raise SinkError("no schema to make the table in (search_path is empty)")
            schema = row[0]
        self.schema, self.name = schema, table
        self.qualified = f"{schema}.{table}"
        self.table = sql.Identifier(schema, table)
        self.positions = sql.Identifier(schema, POSITIONS)
        self.epoch = 0
        self.columns: tuple[Column, ...] | None = None
        self._delta_ready = False

    # -- opening -------------------------------------------------------------------------

    def open(self, query: str, topic_prefix: str) -> Position:
        """Take the table for ``query``: refuse it when another sink holds it (step 1), make
        the position table if missing (2), raise the epoch (3) and return the position."""
        conn = self.conn
        with conn.transaction():  # Step 1: session-level, it outlives the transaction
            row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s), hashtext(%s))",
                               (POSITIONS, self.qualified)).fetchone()
            if row is None or not row[0]:
                holder = conn.execute(
                    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND classid::int = hashtext(%s) AND objid::int = hashtext(%s)",
                    (POSITIONS, self.qualified)).fetchone()
                raise SinkFenced(f"table {self.qualified} is kept by another sink (its "
                                 f"PostgreSQL session: pid {holder[0] if holder else '?'}); "
                                 "one sink per table", form=self.qualified)
        with conn.transaction():  # Step 2: one maker at a time
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (POSITIONS,))
            conn.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (sink_table text PRIMARY KEY, "
                "query text NOT NULL, topic_prefix text NOT NULL, registration bigint, "
                "tx bigint NOT NULL DEFAULT -1, next_offset bigint NOT NULL DEFAULT 0, "
                "epoch bigint NOT NULL, columns jsonb, "
                "updated_at timestamptz NOT NULL DEFAULT now())").format(self.positions))
        with conn.transaction():  # Step 3
            row = conn.execute(sql.SQL(
                "INSERT INTO {p} AS p (sink_table, query, topic_prefix, epoch) "
                "VALUES (%s, %s, %s, 1) ON CONFLICT (sink_table) DO UPDATE "
                "SET epoch = p.epoch + 1 "
                "RETURNING query, topic_prefix, registration, tx, next_offset, epoch, columns"
            ).format(p=self.positions), (self.qualified, query, topic_prefix)).fetchone()
            assert row is not None
            kept, prefix, registration, tx, offset, self.epoch, columns = row
            if (kept, prefix) != (query, topic_prefix):
                raise SinkError(f"table {self.qualified} keeps query {kept!r} of topic prefix "
                                f"{prefix!r}, not {query!r} of {topic_prefix!r}",
                                form=self.qualified)
            exists = conn.execute("SELECT to_regclass(%s)",
                                  (self._regclass(),)).fetchone()
            if columns is None and exists is not None and exists[0] is not None:
                raise SinkError(f"table {self.qualified} exists and no sink made it: give "
                                "another --table", form=self.qualified)
        self.columns = None if columns is None else tuple(Column(*c) for c in columns)
        return Position(registration, tx, offset, self.columns)

    def _regclass(self) -> str:
        return sql.Identifier(self.schema, self.name).as_string(self.conn)

    # -- writing -------------------------------------------------------------------------

    def replace(self, columns: tuple[Column, ...], rows: Mapping[Row, int], position: Position
                ) -> None:
        """The table becomes ``rows`` (a view), with ``columns`` (made again if they differ
        from the table's), at ``position``: one transaction."""
        encode = encoders(columns)
        with self.conn.transaction():
            self._fence(position, columns)
            if columns != self.columns:
                self.conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self.table))
                self.conn.execute(sql.SQL(
                    "CREATE TABLE {} ({} bytea PRIMARY KEY, {}, {} bigint NOT NULL)").format(
                        self.table, sql.Identifier(ROW_KEY),
                        sql.SQL(", ").join(sql.SQL("{} {}").format(
                            sql.Identifier(c.name), sql.SQL(c.sql_type)) for c in columns),
                        sql.Identifier(WEIGHT)))
                self.conn.execute(sql.SQL("DROP TABLE IF EXISTS pg_temp.{}").format(
                    sql.Identifier(DELTA)))
                self._delta_ready = False
            else:
                self.conn.execute(sql.SQL("TRUNCATE {}").format(self.table))
            self._copy(self.table, (table_row(row, weight, encode)
                                    for row, weight in rows.items()))
        self.columns = columns

    def apply(self, delta: Mapping[Row, int], position: Position) -> None:
        """Add ``delta`` (row → weight change) to the table, at ``position``: one
        transaction.  A row whose weight reaches 0 is deleted; one that would go below 0
        fails the transaction: the table was not the view the changes follow."""
        assert self.columns is not None
        with self.conn.transaction():
            self._fence(position, self.columns)
            if not delta:
                return
            if not self._delta_ready:
                self.conn.execute(sql.SQL(
                    "CREATE TEMP TABLE IF NOT EXISTS {} (LIKE {}) ON COMMIT DELETE ROWS"
                ).format(sql.Identifier(DELTA), self.table))
                self._delta_ready = True
            encode = encoders(self.columns)
            d = sql.Identifier(DELTA)
            self._copy(d, (table_row(row, weight, encode) for row, weight in delta.items()))
            # A CHECK (weight >= 0) would refuse the -1 of a row present: PostgreSQL checks
            # the row proposed for insertion before it finds the conflict.  So the upsert
            # counts the weights it leaves below 0, and any fails the transaction.
            below = self.conn.execute(sql.SQL(
                "WITH up AS (INSERT INTO {t} AS t SELECT * FROM {d} ON CONFLICT ({k}) "
                "DO UPDATE SET {w} = t.{w} + EXCLUDED.{w} RETURNING t.{w}) "
                "SELECT count(*) FROM up WHERE {w} < 0").format(
                    t=self.table, d=d, k=sql.Identifier(ROW_KEY),
                    w=sql.Identifier(WEIGHT))).fetchone()
            if below is not None and below[0]:
                raise SinkError(f"{below[0]} rows of {self.qualified} would weigh less than 0:"
                                " the table is not the view its changes follow (changed by "
                                "hand?); drop it to have it made again", form=self.qualified)
            self.conn.execute(sql.SQL(
                "DELETE FROM {t} AS t USING {d} AS d WHERE t.{k} = d.{k} AND t.{w} = 0"
            ).format(t=self.table, d=d, k=sql.Identifier(ROW_KEY), w=sql.Identifier(WEIGHT)))

    def _fence(self, position: Position, columns: tuple[Column, ...]) -> None:
        """Move the position row, if the table is still this sink's (its epoch)."""
        moved = self.conn.execute(sql.SQL(
            "UPDATE {} SET registration = %s, tx = %s, next_offset = %s, columns = %s, "
            "updated_at = now() WHERE sink_table = %s AND epoch = %s").format(self.positions),
            (position.registration, position.tx, position.offset,
             json.dumps([c.as_json() for c in columns]), self.qualified, self.epoch))
        if moved.rowcount != 1:
            raise SinkFenced(f"table {self.qualified} was taken over by another sink (this "
                             f"one's epoch {self.epoch} is not the position's)",
                             form=self.qualified)

    def _copy(self, target: sql.Composable, rows: Iterable[tuple[Any, ...]]) -> None:
        assert self.columns is not None or target == self.table
        with self.conn.cursor() as cursor, cursor.copy(
                sql.SQL("COPY {} FROM STDIN").format(target)) as copy:
            for row in rows:
                copy.write_row(row)


def read_table(conn: psycopg.Connection[Any], name: str) -> ZSet[Row]:
    """The table's rows as ``{values: weight}`` (tests and benchmarks compare it with the
    encoded view)."""
    table = sql.Identifier(*name.split("."))
    with conn.cursor() as cursor:
        cursor.execute(sql.SQL("SELECT * FROM {}").format(table))
        return {tuple(row[1:-1]): row[-1] for row in cursor.fetchall()}


def read_position(conn: psycopg.Connection[Any], name: str, schema: str = "public"
                  ) -> tuple[int | None, int, int] | None:
    """``(registration, tx, next_offset)`` of the sink table ``name`` (None: never opened)."""
    row = conn.execute(sql.SQL(
        "SELECT registration, tx, next_offset FROM {} WHERE sink_table = %s").format(
            sql.Identifier(schema, POSITIONS)), (f"{schema}.{name}",)).fetchone()
    return None if row is None else (row[0], row[1], row[2])
