"""A large bounded-degree graph with the triangle and 4-cycle queries live: load, memory,
single-edge ticks and ticks of 1,000.

    python -m bench scale [--edges 10000000] [--degree 10] [--tx-datoms 100000]
                          [--queries triangle,4cycle] [--ticks 200] [--big-ticks 20]
                          [--tick-sizes 1000] [--api forms|columns] [--seed S]
                          [--no-idle] [--bootstrap 4cycle] [--executor local|spark]

A seeded random directed graph: `--edges` distinct edges on `edges / degree` nodes, both
ends uniform (so out- and in-degrees are Poisson with mean `--degree`: bounded, no hubs),
generated as NumPy columns.  The queries are registered on the empty engine, then the edges
are sent in transactions of `--tx-datoms` (forms through `Engine.transact_many`, or with
`--api columns` through `Engine.transact_columns`), each a tick the
live queries step (the vectorised executor, for ticks this large).  Reported: load time and
rate, process RSS per datom once loaded (`malloc_trim` first), the idle time a worker
would have next (`Engine.idle`, waited for: the batches compacted into one) and the RSS
after it, the live queries' result sizes, then the mean, percentiles and maximum of
single-edge ticks (half retract a loaded edge, half put it back) and of ticks of each
`--tick-sizes` changed edges (the same edges retracted in one tick, put back in the next),
as changed edges per second of wall time and, for a shared machine, per second of the
tick's thread CPU time (median).  Queries named in `--bootstrap` are registered only
after the load (and the idle compaction), their bootstrap timed, then ticked with the
others: a query whose maintenance through the whole load would cost more than one
evaluation of it at the end (the 4-cycle: every new edge's 3-paths, four delta terms,
against one pass over them).
With ``--executor spark`` the queries step on an embedded Spark (``local[*]``), the
database is Spark's state, and the RSS is the driver's Python process alone, from after
Spark started (issue 16).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.engine.spine import rss
from bench.engine.tx import ADD, API_CHOICES, RETRACT, TO, send_edges, settle
from bench.harness import Results, csv_list, log, markdown_table, percentile, positive_ints
from bench.queries import QUERIES
from workers.engine import Engine


def bounded_graph(edges: int, degree: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``edges`` distinct directed edges, no self-loops, on ``edges // degree`` nodes."""
    nodes = max(2, edges // degree)
    rng = np.random.default_rng(seed)
    found = np.zeros(0, np.int64)
    while len(found) < edges:
        more = rng.integers(0, nodes, size=(2, int((edges - len(found)) * 1.05) + 16))
        more = more[:, more[0] != more[1]]
        found = np.unique(np.concatenate([found, more[0] * nodes + more[1]]))
    keep = rng.permutation(len(found))[:edges]
    return found[keep] // nodes, found[keep] % nodes


def load(engine: Engine, us: np.ndarray, vs: np.ndarray, tx_datoms: int,
         api: str) -> tuple[float, dict[str, int]]:
    """Seconds to send the edges, and each live query's result size (its changes added)."""
    started = time.perf_counter()
    sizes = dict.fromkeys(engine.queries, 0)
    for offset in range(0, len(us), tx_datoms):
        changes = send_edges(engine, us[offset:offset + tx_datoms],
                             vs[offset:offset + tx_datoms], api, offset)
        for name, rows in changes.items():
            sizes[name] += sum(rows.values())
        if offset // tx_datoms % 10 == 9:
            log(f"  {offset + tx_datoms:,} edges in {time.perf_counter() - started:.0f} s")
    return time.perf_counter() - started, sizes


def tick_latencies(engine: Engine, us: np.ndarray, vs: np.ndarray, size: int, ticks: int,
                   seed: int) -> tuple[list[float], list[float]]:
    """Seconds per tick of ``size`` changed edges, wall and thread CPU (the machine is
    shared: CPU time is what other processes do not inflate): retract ``size`` loaded
    edges, then put them back, ``ticks`` ticks in all."""
    rng = random.Random(seed)
    wall, cpu = [], []
    for _ in range(ticks // 2):
        picked = rng.sample(range(len(us)), size)
        edges = [(int(us[i]), int(vs[i])) for i in picked]
        for op in (RETRACT, ADD):
            forms = [[op, u, TO, v] for u, v in edges]
            started, started_cpu = time.perf_counter(), time.thread_time()
            engine.transact_many([(forms, 0)])
            wall.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - started_cpu)
    return wall, cpu


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--edges", type=int, default=10_000_000, help="default 10000000")
    parser.add_argument("--degree", type=int, default=10, help="mean out-degree (default 10)")
    parser.add_argument("--tx-datoms", type=int, default=100_000,
                        help="edges per load transaction (default 100000)")
    parser.add_argument("--queries", type=csv_list, default=["triangle", "4cycle"],
                        help="live queries (default triangle,4cycle)")
    parser.add_argument("--ticks", type=int, default=200, help="single-edge ticks (default 200)")
    parser.add_argument("--big-ticks", type=int, default=20,
                        help="ticks of each size in --tick-sizes (default 20)")
    parser.add_argument("--tick-sizes", type=positive_ints, default=[1000],
                        help="changed edges per big tick (default 1000)")
    parser.add_argument("--api", choices=API_CHOICES, default="forms",
                        help="load transactions as forms (transact_many) or as columns "
                             "(transact_columns) (default forms)")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    parser.add_argument("--bootstrap", type=csv_list, default=[],
                        help="of --queries, those registered after the load, their "
                             "bootstrap timed (default none)")
    parser.add_argument("--idle", action=argparse.BooleanOptionalAction, default=True,
                        help="after the load, let the engine be idle (Engine.idle: the "
                             "batches compacted into one) before the ticks (default on)")
    parser.add_argument("--executor", choices=("local", "spark"), default="local",
                        help="where the queries step (default local)")
    args = parser.parse_args(argv)
    if min(args.edges, args.degree, args.tx_datoms, args.ticks, args.big_ticks) < 2:
        parser.error("--edges, --degree, --tx-datoms, --ticks, --big-ticks must be >= 2")
    if unknown := set(args.queries) - set(QUERIES):
        parser.error(f"unknown queries {sorted(unknown)}; known: {sorted(QUERIES)}")
    if stray := set(args.bootstrap) - set(args.queries):
        parser.error(f"--bootstrap {sorted(stray)} not in --queries")
    return args


def run(args: argparse.Namespace) -> None:
    """Generate, load with the queries live, tick; print a table, write the results."""
    output = Results("scale", args)
    log(f"generating {args.edges:,} edges, mean degree {args.degree}")
    us, vs = bounded_graph(args.edges, args.degree, args.seed)
    engine = Engine(executor=args.executor)
    before = rss()
    live = [name for name in args.queries if name not in args.bootstrap]
    for name in live:
        engine.register(name, QUERIES[name])
    log(f"loading in transactions of {args.tx_datoms:,} ({args.api}) with "
        f"{', '.join(live) or 'no query'} live")
    seconds, sizes = load(engine, us, vs, args.tx_datoms, args.api)
    datoms = engine.datoms
    result: dict[str, Any] = {
        "datoms": datoms, "load_s": seconds, "load_datoms_per_s": datoms / seconds,
        "rss_bytes_per_datom": (rss() - before) / datoms, "results": sizes}
    rows = [["load", f"{datoms:,} edges", f"{seconds:.0f} s",
             f"{result['load_datoms_per_s']:,.0f} edges/s",
             f"{result['rss_bytes_per_datom']:.0f} B/datom RSS", "", ""]]
    if args.idle:  # what a worker does once caught up: its poll comes back empty
        log("idle: compacting in the background, then waiting for it")
        started = time.perf_counter()
        engine.idle()
        settle(engine)
        idle_s = time.perf_counter() - started
        result.update(idle_s=idle_s, idle_rss_bytes_per_datom=(rss() - before) / datoms,
                      batches=[len(b) for b in engine.db.state.batches])
        rows.append(["idle", f"batches {result['batches']}", f"{idle_s:.1f} s", "",
                     f"{result['idle_rss_bytes_per_datom']:.0f} B/datom RSS", "", ""])
    for name in args.bootstrap:
        log(f"registering {name}: its bootstrap over {datoms:,} datoms")
        started, started_cpu = time.perf_counter(), time.thread_time()
        result["results"][name] = len(engine.register(name, QUERIES[name]))
        booted = {"s": time.perf_counter() - started, "cpu_s": time.thread_time() - started_cpu,
                  "rss_bytes_per_datom": (rss() - before) / datoms}
        result[f"bootstrap_{name}"] = booted
        rows.append([f"bootstrap {name}", f"{result['results'][name]:,} rows",
                     f"{booted['s']:.0f} s", f"thread CPU {booted['cpu_s']:.0f} s",
                     f"{booted['rss_bytes_per_datom']:.0f} B/datom RSS", "", ""])
    for size, count in [(1, args.ticks), *((s, args.big_ticks) for s in args.tick_sizes)]:
        log(f"{count} ticks of {size:,} changed edges")
        latencies, cpu = tick_latencies(engine, us, vs, size, count, args.seed + size)
        mean, cpu_p50 = statistics.fmean(latencies), percentile(cpu, 0.5)
        tail = {f"p{q}_s": percentile(latencies, q / 100) for q in (50, 95, 99)}
        result[f"ticks_{size}"] = {"mean_s": mean, **tail, "max_s": max(latencies),
                                   "edges_per_s": size / mean, "cpu_p50_s": cpu_p50,
                                   "edges_per_cpu_s": size / cpu_p50}
        rows.append([f"ticks of {size:,}", f"mean {mean * 1e3:.2f} ms",
                     f"p50 {tail['p50_s'] * 1e3:.2f} ms",
                     f"p95 / p99 / max {tail['p95_s'] * 1e3:.0f} / {tail['p99_s'] * 1e3:.0f}"
                     f" / {max(latencies) * 1e3:.0f} ms",
                     f"{size / mean:,.0f} changed edges/s",
                     f"thread CPU p50 {cpu_p50 * 1e3:.2f} ms",
                     f"{size / cpu_p50:,.0f} changed edges/CPU-s"])
    print(f"bounded-degree graph, {args.edges:,} edges, mean degree {args.degree}, "
          f"live: {', '.join(f'{q} ({n:,} rows)' for q, n in result['results'].items())}\n")
    print(markdown_table(["what", "", "", "", "", "", ""], rows))
    output.write({"result": result})
