"""Bulk load through the public API: load rate, memory per datom, snapshot save and restore.

    python -m bench load [--edges 1000000] [--tx-datoms 10000] [--query none|triangle]
                         [--api forms|columns] [--ticks 1000] [--seed S]
                         [--executor local|spark]

A seeded power-law graph (one datom `[u :g/to v]` per edge, the cached graph of
`python -m bench spine`) is sent to one `Engine` as transactions of `--tx-datoms` datoms
through `Engine.transact_many` (one tick per transaction; the forms of each are built just
before it, inside the timing, so the input is never held whole), or with `--api columns` as
slices of the graph's columns through `Engine.transact_columns`.  With `--query triangle` the
triangle query is registered first and kept live through the load.  Reported: the load
rate, the process RSS grown by the load per datom (`malloc_trim` first, as the spine
benchmark does) once the spine's background compaction has settled, and before (a running
compaction holds a second copy of the spine), the snapshot's save (`Engine.state` + publishing
it in a `SnapshotStore` on the local disk) and restore (`SnapshotStore.latest`: reading and
checking the file + `Engine.restore`) times and size, and the mean of `--ticks`
single-edge ticks afterwards (half of them retracting a loaded edge, half putting it back).
With ``--executor spark`` the engine steps its queries on an embedded Spark (``local[*]``) and
the RSS is the driver's Python process alone, measured from after Spark started: what issue 16
bounds per datom (Spark's JVM and its Python workers are other processes).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.data import powerlaw_graph, powerlaw_path
from bench.engine.spine import edge_columns, rss
from bench.engine.tx import ADD, API_CHOICES, RETRACT, TO, send_edges, settle
from bench.harness import Results, log, markdown_table
from bench.queries import QUERIES
from workers.engine import Engine
from workers.runtime.checkpoint import SnapshotStore

QUERY_CHOICES = ("none", "triangle")


def load(engine: Engine, us: Any, vs: Any, tx_datoms: int, api: str) -> float:
    """Send the edges as transactions of ``tx_datoms`` datoms; the seconds it took."""
    started = time.perf_counter()
    for offset in range(0, len(us), tx_datoms):
        send_edges(engine, us[offset:offset + tx_datoms], vs[offset:offset + tx_datoms], api,
                   offset)
    return time.perf_counter() - started


def snapshot_times(engine: Engine) -> dict[str, float]:
    """Save (state + publish in a store) and restore (read + restore) in seconds, and the
    file's size."""
    with tempfile.TemporaryDirectory() as directory:
        store = SnapshotStore.at(directory)
        started = time.perf_counter()
        path = store.save(engine.state(shared=True))  # as the worker writes it
        saved = time.perf_counter()
        state = store.latest(at_most=engine.tx)
        assert state is not None and path is not None
        Engine().restore(state, adopt=True)
        restored = time.perf_counter()
        return {"save_s": saved - started, "restore_s": restored - saved,
                "snapshot_bytes": Path(path).stat().st_size}


def single_edge_ticks(engine: Engine, us: Any, vs: Any, ticks: int, seed: int) -> float:
    """Mean microseconds of a single-edge tick: retract a loaded edge, then put it back."""
    rng = random.Random(seed)
    picks = [rng.randrange(len(us)) for _ in range(ticks // 2)]
    started = time.perf_counter()
    for i in picks:
        u, v = int(us[i]), int(vs[i])
        engine.transact([[RETRACT, u, TO, v]])
        engine.transact([[ADD, u, TO, v]])
    return (time.perf_counter() - started) / (2 * len(picks)) * 1e6


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--edges", type=int, default=1_000_000,
                        help="edges of the power-law graph (default 1000000)")
    parser.add_argument("--tx-datoms", type=int, default=10_000,
                        help="datoms per transaction (default 10000)")
    parser.add_argument("--query", choices=QUERY_CHOICES, default="none",
                        help="a query kept live through the load (default none)")
    parser.add_argument("--ticks", type=int, default=1000,
                        help="single-edge ticks after the load (default 1000)")
    parser.add_argument("--api", choices=API_CHOICES, default="forms",
                        help="transactions as forms (transact_many) or as columns "
                             "(transact_columns) (default forms)")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    parser.add_argument("--executor", choices=("local", "spark"), default="local",
                        help="where the queries step (default local)")
    args = parser.parse_args(argv)
    if min(args.edges, args.tx_datoms, args.ticks) < 2:
        parser.error("--edges, --tx-datoms and --ticks must be at least 2")
    return args


def run(args: argparse.Namespace) -> None:
    """Load, measure, print one table and write the results file."""
    output = Results("load", args)
    if not powerlaw_path(args.edges, args.seed).exists():
        powerlaw_graph(args.edges, args.seed)
    us, vs = edge_columns(args.edges, args.seed)
    engine = Engine(executor=args.executor)
    before = rss()
    if args.query != "none":
        engine.register(args.query, QUERIES[args.query])
    log(f"loading {args.edges:,} edges in transactions of {args.tx_datoms:,} ({args.api})")
    seconds = load(engine, us, vs, args.tx_datoms, args.api)
    datoms = engine.datoms
    unsettled = rss() - before  # a background compaction may hold a second copy now
    settle(engine)
    grown = rss() - before
    log("snapshot save and restore")
    snapshot = snapshot_times(engine)
    tick_us = single_edge_ticks(engine, us, vs, args.ticks, args.seed)
    result = {"datoms": datoms, "load_s": seconds, "datoms_per_s": datoms / seconds,
              "rss_bytes_per_datom": grown / datoms,
              "rss_unsettled_bytes_per_datom": unsettled / datoms,
              "single_edge_tick_us": tick_us,
              **snapshot}
    print(markdown_table(
        ["datoms", "query", "api", "executor", "load (datoms/s)", "RSS (B/datom)",
         "RSS before settling (B/datom)", "save (s)", "restore (s)",
         "snapshot (B/datom)", "single-edge tick (µs)"],
        [[f"{datoms:,}", args.query, args.api, args.executor, f"{result['datoms_per_s']:,.0f}",
          f"{result['rss_bytes_per_datom']:.0f}",
          f"{result['rss_unsettled_bytes_per_datom']:.0f}", f"{snapshot['save_s']:.2f}",
          f"{snapshot['restore_s']:.2f}", f"{snapshot['snapshot_bytes'] / datoms:.1f}",
          f"{tick_us:.0f}"]]))
    output.write({"result": result})
