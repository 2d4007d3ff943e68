"""Helpers for the PostgreSQL sink's tests: a sink on a thread or as a process
(``deltalog sink postgres``), the oracle's table, and a wait for the table to equal it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import psycopg

from tests.integration.pipeline import WAIT_S
from workers.config import WorkerConfig
from workers.datalog import compile_query
from workers.sinks import PostgresSink, columns_of, read_position, read_table
from workers.sinks.columns import encoders
from workers.testing import evaluate_from_scratch
from workers.zset import ZSet
from workers.zset.row import Row

Table = ZSet[Row]


def oracle_table(query: str, datoms: Iterable[Any],
                 value_types: Mapping[str, str] | None = None) -> Table:
    """The query's result on ``datoms`` as the sink's table holds it: ``{values: weight}``,
    each value encoded for its column."""
    encode = encoders(columns_of(compile_query(query), value_types or {}))
    return {tuple(f(v) for f, v in zip(encode, row, strict=True)): weight
            for row, weight in evaluate_from_scratch(query, datoms).items()}


def table_now(dsn: str, table: str) -> Table | None:
    """The table's rows (None: no table yet)."""
    with psycopg.connect(dsn) as conn:
        try:
            return read_table(conn, table)
        except psycopg.errors.UndefinedTable:
            return None


def position(dsn: str, table: str) -> tuple[int | None, int, int] | None:
    with psycopg.connect(dsn) as conn:
        try:
            return read_position(conn, table)
        except psycopg.errors.UndefinedTable:
            return None


def column_types(dsn: str, table: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute(  # type: ignore[arg-type]
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = %s ORDER BY ordinal_position", (table,)).fetchall())


def wait_table(dsn: str, table: str, expected: Table, alive: Any = None,
               wait_s: float = WAIT_S) -> None:
    """Until the table equals ``expected``; fails with the difference.  ``alive()`` (a
    sink's) is asserted on the way."""
    deadline = time.monotonic() + wait_s
    while True:
        got = table_now(dsn, table)
        if got == expected:
            return
        if alive is not None:
            assert alive(), f"the sink of {table} died"
        if time.monotonic() > deadline:
            got = got or {}
            missing = {r: w for r, w in expected.items() if got.get(r) != w}
            extra = {r: w for r, w in got.items() if expected.get(r) != w}
            raise AssertionError(f"table {table} at {position(dsn, table)}: lacks {missing}, "
                                 f"has {extra} besides")
        time.sleep(0.3)


class SinkThread:
    """A :class:`PostgresSink` on a thread; ``error`` is what ended it, if anything."""

    def __init__(self, config: WorkerConfig, dsn: str, query: str, **options: Any) -> None:
        self.sink = PostgresSink(config, dsn, query, **options)
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.sink.run(self.stop_event)
        except BaseException as error:
            self.error = error

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(60)
        assert not self.thread.is_alive()


class SinkProcess:
    """``python -m workers sink postgres`` as a child process: start (again after a kill),
    kill -9, stop (SIGTERM); its output appended to ``log``."""

    running: set[SinkProcess] = set()  # noqa: RUF012 - the harness's registry

    def __init__(self, config: WorkerConfig, dsn: str, query: str, log: Path,
                 *flags: str) -> None:
        self.config, self.dsn, self.query, self.log, self.flags = config, dsn, query, log, flags
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [sys.executable, "-m", "workers", "sink", "postgres", self.query, "--dsn",
                self.dsn, "--bootstrap-servers", self.config.bootstrap_servers, "-v",
                *self.flags]
        env = {**os.environ, "DELTALOG_TOPIC_PREFIX": self.config.topic_prefix}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(args, env=env, stdout=log, stderr=log)
        SinkProcess.running.add(self)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        SinkProcess.running.discard(self)

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.terminate()
        try:
            code = self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(30)
        SinkProcess.running.discard(self)
        return code

    def wait(self, timeout_s: float) -> int:
        assert self.process is not None
        code = self.process.wait(timeout_s)
        SinkProcess.running.discard(self)
        return code

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
