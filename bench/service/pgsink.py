"""Rows per second into PostgreSQL by ``deltalog sink postgres``: a view loaded into a new
table, then a change stream followed (inserts and deletes).

1. Start a local broker, one worker (``--tick-max-tx`` transactions per tick) and a local
   PostgreSQL (fsync on: the sink's transactions are durable); register
   ``{:find [?e ?v] :where [[?e :bench/v ?v]]}`` (``:bench/v`` a long: an EDN ``text``
   column and a ``bigint`` one).
2. Send ``--tx`` transactions of ``--rows`` new datoms each; once committed, start the sink on
   a new table: the time until the table holds the view gives the **view** rate (the view
   read from Kafka, the schema scan, one ``COPY``).
3. Stop the sink; send ``--tx`` more transactions, each adding ``--rows`` datoms and retracting
   as many of the first ones; once committed, start the sink again: it resumes from its stored
   offset, and the time until its position reaches the last transaction gives the **changes**
   rate (change records read and written per second, each transaction of the sink at most
   ``BATCH_ROWS`` rows).  The table is then checked against the expected rows.

    python -m bench pgsink [--tx 200] [--rows 500] [--tick-max-tx 20]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from bench.harness import BenchError, Results, markdown_table
from workers.config import WorkerConfig, from_env
from workers.edn import keyword
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin, TxProducer, progress_table
from workers.runtime.process import WorkerProcess
from workers.sinks import PostgresSink, read_position, read_table
from workers.sinks.pgserver import LocalPostgres

QUERY = "{:find [?e ?v] :where [[?e :bench/v ?v]]}"
WAIT_S = 900.0
ADD, RETRACT, V = keyword("db/add"), keyword("db/retract"), keyword("bench/v")


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--tx", type=int, default=200, help="transactions in each phase")
    parser.add_argument("--rows", type=int, default=500, help="datoms added per transaction")
    parser.add_argument("--tick-max-tx", type=int, default=20)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Load a view, then follow changes, timing each."""
    n, rows = args.tx, args.rows
    first = [[[ADD, t * rows + i, V, i] for i in range(rows)] for t in range(n)]
    second = [[[ADD, (n + t) * rows + i, V, i] for i in range(rows)]
              + [[RETRACT, t * rows + i, V, i] for i in range(rows)] for t in range(n)]
    with tempfile.TemporaryDirectory() as scratch, \
            LocalBroker(Path(scratch) / "kafka") as broker, LocalPostgres() as postgres:
        config = from_env({}, bootstrap_servers=broker.bootstrap_servers)
        dsn = postgres.create_database("bench")
        with WorkerProcess(config, Path(scratch) / "snapshots", Path(scratch) / "worker.log",
                           "bench", tick_max_tx=args.tick_max_tx) as worker:
            worker.start()
            QueryAdmin(config).add("values", QUERY)
            _send(config, ["[{:db/ident :bench/v :db/valueType :db.type/long}]"])
            _send(config, first)
            _wait_committed(config, n)
            view_s, view_rows = _sink_until(config, dsn, lambda p: p is not None and
                                            p[0] is not None, "the view")
            _send(config, second)
            _wait_committed(config, 2 * n)
            changes_s, change_rows = _sink_until(config, dsn, lambda p: p is not None and
                                                 p[1] >= 2 * n, "the changes")
        with psycopg.connect(dsn) as conn:
            table = read_table(conn, "values")
        expected = {(str(e), i) for t in range(n, 2 * n) for i in range(rows)
                    for e in [t * rows + i]}
        if set(table) != expected or set(table.values()) != {1}:
            raise BenchError(f"the table has {len(table)} rows, {len(expected)} expected")
    table_rows = [["view (new table)", f"{view_rows:,}", f"{view_s:.2f}",
                   f"{view_rows / view_s:,.0f}"],
                  ["changes (resumed)", f"{change_rows:,}", f"{changes_s:.2f}",
                   f"{change_rows / changes_s:,.0f}"]]
    print(markdown_table(["phase", "rows written", "seconds", "rows/s"], table_rows))
    Results("pgsink", args).write({"view": {"rows": view_rows, "seconds": view_s},
                                   "changes": {"rows": change_rows, "seconds": changes_s}})


def _sink_until(config: WorkerConfig, dsn: str, done: Any, what: str) -> tuple[float, int]:
    """Run a sink until ``done(position)``; its wall-clock time and the rows it wrote."""
    sink = PostgresSink(config, dsn, "values")
    stop = threading.Event()
    thread = threading.Thread(target=sink.run, args=(stop,), daemon=True)
    started = time.perf_counter()
    thread.start()
    deadline = time.monotonic() + WAIT_S
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            try:
                if done(read_position(conn, "values")):
                    break
            except psycopg.errors.UndefinedTable:
                pass
            if not thread.is_alive() or time.monotonic() > deadline:
                raise BenchError(f"the sink did not write {what}")
            time.sleep(0.01)
    elapsed = time.perf_counter() - started
    stop.set()
    thread.join()
    return elapsed, sink.rows_written


def _send(config: WorkerConfig, transactions: Sequence[Any]) -> None:
    with TxProducer(config) as producer:
        for tx in transactions:
            producer.send(tx)
        producer.flush()


def _wait_committed(config: WorkerConfig, tx: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while (progress := progress_table(config).get("values")) is None or progress["tx_last"] < tx:
        if time.monotonic() > deadline:
            raise BenchError(f"the worker did not reach tx {tx}")
        time.sleep(0.2)
