"""DuckDB and SQLite recomputing the query after every tick: what a user without an
incremental engine does. The tick is applied to one `(e, v)` table per attribute, the query
re-run into a new result table, and the change count is the symmetric difference with the
previous result, computed in SQL (`EXCEPT` both ways), so no result ever crosses into Python.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from bench.data import Fact, Tick
from bench.peers.translate import table, to_sql
from bench.queries import Spec

DIFF_SQL = (
    "SELECT (SELECT count(*) FROM (SELECT * FROM res_new EXCEPT SELECT * FROM res_old)) + "
    "(SELECT count(*) FROM (SELECT * FROM res_old EXCEPT SELECT * FROM res_new))"
)


def by_table(facts: Iterable[Fact]) -> dict[str, list[tuple[int, int]]]:
    """Facts grouped into rows of their attribute's table."""
    rows: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
    for attribute, e, v in facts:
        rows[table(attribute)].append((e, v))
    return rows


class SqlRecompute:
    """The recompute loop shared by the SQL engines; subclasses connect and move rows."""

    name = "sql"
    last_work: int | None = None

    def __init__(self) -> None:
        self.con: Any = None
        self.sql = ""
        self.tables: tuple[str, ...] = ()

    def unsupported(self, spec: Spec) -> str | None:
        return None

    def connect(self) -> Any:
        raise NotImplementedError

    def insert(self, name: str, rows: list[tuple[int, int]]) -> None:
        raise NotImplementedError

    def delete(self, name: str, rows: list[tuple[int, int]]) -> None:
        raise NotImplementedError

    def prepare(self) -> None:
        """After the load, before the first evaluation (indexes, statistics)."""

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        self.con = self.connect()
        self.tables = tuple(table(a) for a in spec.attributes)
        for name in self.tables:
            self.con.execute(f"CREATE TABLE {name} (e BIGINT, v BIGINT)")
        for name, rows in by_table(facts).items():
            if name in self.tables:
                self.insert(name, rows)
        self.prepare()
        self.sql = to_sql(spec)
        self.con.execute(f"CREATE TABLE res_old AS {self.sql}")

    def apply(self, tick: Tick) -> int:
        for name, rows in by_table(tick.removes).items():
            if name in self.tables:
                self.delete(name, rows)
        for name, rows in by_table(tick.adds).items():
            if name in self.tables:
                self.insert(name, rows)
        self.con.execute(f"CREATE TABLE res_new AS {self.sql}")
        (changed,) = self.con.execute(DIFF_SQL).fetchone()
        self.con.execute("DROP TABLE res_old")
        self.con.execute("ALTER TABLE res_new RENAME TO res_old")
        return int(changed)

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None


class DuckDBRecompute(SqlRecompute):
    """DuckDB in memory (vectorised hash joins, all cores); rows move as Arrow tables."""

    name = "duckdb"

    def connect(self) -> Any:
        import duckdb

        return duckdb.connect()

    def arrow(self, rows: list[tuple[int, int]]) -> Any:
        import pyarrow as pa

        return pa.table({"e": [r[0] for r in rows], "v": [r[1] for r in rows]},
                        schema=pa.schema([("e", pa.int64()), ("v", pa.int64())]))

    def insert(self, name: str, rows: list[tuple[int, int]]) -> None:
        self.con.register("tick_rows", self.arrow(rows))
        self.con.execute(f"INSERT INTO {name} SELECT e, v FROM tick_rows")
        self.con.unregister("tick_rows")

    def delete(self, name: str, rows: list[tuple[int, int]]) -> None:
        self.con.register("tick_rows", self.arrow(rows))
        self.con.execute(f"DELETE FROM {name} USING tick_rows d WHERE {name}.e = d.e "
                         f"AND {name}.v = d.v")
        self.con.unregister("tick_rows")


class SQLiteRecompute(SqlRecompute):
    """SQLite in memory, with the two indexes a user would add: (e, v) and (v, e)."""

    name = "sqlite"

    def connect(self) -> Any:
        import sqlite3

        return sqlite3.connect(":memory:", isolation_level=None)

    def prepare(self) -> None:
        for name in self.tables:
            self.con.execute(f"CREATE INDEX {name}_ev ON {name}(e, v)")
            self.con.execute(f"CREATE INDEX {name}_ve ON {name}(v, e)")
        self.con.execute("ANALYZE")

    def insert(self, name: str, rows: list[tuple[int, int]]) -> None:
        self.con.executemany(f"INSERT INTO {name} VALUES (?, ?)", rows)

    def delete(self, name: str, rows: list[tuple[int, int]]) -> None:
        self.con.executemany(f"DELETE FROM {name} WHERE e = ? AND v = ?", rows)
