"""Per-tick latency of the triangle query, local vs Spark executor, as the tick grows.

    python -m bench crossover [--sizes 1 10 100 1000 10000 100000] [--repeat 3]
                              [--spark-master local[2]] [--max-local-s S]
                              [--graph pegase|powerlaw] [--seed S] [--queries triangle,...]

Two engines, `executor="local"` and `executor="spark"`, load the same graph and then register
the triangle query (or `--queries`: every tick steps them all, on Spark in one job). Each
measured tick inserts `size` new random edges between existing nodes and is timed on both
engines; an unmeasured tick then retracts those edges, so every measured tick starts from the
same database. Both engines must return identical changes on every tick, retractions
included. The median per size goes into a markdown table, followed by the smallest tick at
which Spark is faster: the number behind `executor="auto"`'s tick threshold
(`workers/executors/dispatch.py`). Results go to bench/results/crossover-<start>.json.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from bench.data import Edge, endpoints, load_graph, node_count, power_law_edges
from bench.engine.tx import Tx, load_ticks, to_tx
from bench.harness import Results, log, markdown_table, mismatch, timed
from bench.queries import QUERIES
from workers.engine import Engine
from workers.executors.spark import SparkSettings
from workers.executors.spark.jobs import JobCount
from workers.zset import ZSet
from workers.zset.row import Row

DEFAULT_SIZES = [1, 10, 100, 1_000, 10_000, 100_000]
Changes = dict[str, ZSet[Row]]


@dataclass
class SizeResult:
    """One table row: median latencies of the ticks of one size (local None when skipped)."""

    size: int
    ticks: int
    local_ms: float | None
    spark_ms: float
    local_all_ms: list[float]
    spark_all_ms: list[float]
    changed_rows: list[int]  # rows changed by each insert tick (what parity compared)
    spark_jobs: list[int]  # Spark jobs of each insert tick (the read, then the step)
    spark_stages: list[int]  # their stages

    @property
    def ratio(self) -> float | None:
        """spark / local, the crossover criterion (< 1: Spark is faster)."""
        return None if self.local_ms is None else self.spark_ms / self.local_ms


@dataclass
class Engines:
    """The two engines under test, fed the same transactions."""

    local: Engine
    spark: Engine
    queries: tuple[str, ...]


# --- graph and ticks --------------------------------------------------------------------


def fresh_capacity(edges: list[Edge]) -> int:
    """How many new non-loop edges fit between the graph's existing nodes."""
    n = node_count(edges)
    return n * (n - 1) - len(edges)


def tick_graph(name: str, seed: int, largest: int) -> tuple[list[Edge], str]:
    """The benchmark graph, or a larger-node synthetic one if it can't take `largest` new
    edges comfortably (rejection sampling wants room: at least twice as many free slots)."""
    edges, label = load_graph(name, seed)
    capacity = fresh_capacity(edges)
    if capacity >= 2 * largest:
        return edges, label
    n = math.ceil(math.sqrt(2 * (len(edges) + 2 * largest))) + 1
    synthetic = power_law_edges(n, len(edges), seed)
    while fresh_capacity(synthetic) < 2 * largest:  # not every node id gets an edge
        n *= 2
        synthetic = power_law_edges(n, len(edges), seed)
    return synthetic, (
        f"SYNTHETIC power-law n={n} m={len(edges)} seed={seed} "
        f"({label} has room for only {capacity} new edges)"
    )


def new_edges(rng: random.Random, nodes: list[int], present: set[Edge], size: int) -> list[Edge]:
    """`size` distinct non-loop edges between `nodes` that are not in `present`."""
    chosen: set[Edge] = set()
    while len(chosen) < size:
        edge = (rng.choice(nodes), rng.choice(nodes))
        if edge[0] != edge[1] and edge not in present:
            chosen.add(edge)
    return sorted(chosen)


def make_ticks(edges: list[Edge], sizes: list[int], repeat: int, seed: int) -> list[list[Edge]]:
    """Per size, `repeat` insert ticks; all drawn up front so the stream doesn't depend on
    which sizes are skipped. Ticks are independent: each is retracted before the next."""
    rng = random.Random(seed)
    nodes = sorted(endpoints(edges))
    present = set(edges)
    return [new_edges(rng, nodes, present, size) for size in sizes for _ in range(repeat)]


def tx_of(edges: list[Edge], add: bool) -> Tx:
    """Already-parsed transaction forms adding (or retracting) `edges`."""
    return to_tx([(add, u, v) for u, v in edges])


# --- engines ------------------------------------------------------------------------------


def start_engines(master: str, queries: tuple[str, ...]) -> Engines:
    """Both engines; the Spark one starts its SparkSession here, outside any timing."""
    started = time.perf_counter()
    spark = Engine(strategy="delta", executor="spark", spark=SparkSettings(master=master))
    log(f"Spark ({master}) started in {time.perf_counter() - started:.1f} s")
    return Engines(Engine(strategy="delta", executor="local"), spark, queries)


def load_and_register(engines: Engines, edges: list[Edge]) -> dict[str, float]:
    """Load the graph, then register the queries (so the load runs no Spark step); both
    bootstraps must agree. Returns the untimed-in-the-table setup durations in seconds."""
    timings: dict[str, float] = {}
    results: dict[str, Changes] = {}
    for label, engine in (("local", engines.local), ("spark", engines.spark)):
        started = time.perf_counter()
        for tick in load_ticks(edges):
            engine.transact(to_tx(tick))
        loaded = time.perf_counter()
        results[label] = {name: engine.register(name, QUERIES[name])
                          for name in engines.queries}
        timings[f"{label}_load_s"] = loaded - started
        timings[f"{label}_bootstrap_s"] = time.perf_counter() - loaded
    check("bootstrap", results["local"], results["spark"])
    log(f"bootstrap: {sum(map(len, results['local'].values()))} rows on both executors")
    return timings


def check(label: str, local: Changes, spark: Changes) -> None:
    """Raise MismatchError unless both executors returned the same changes."""
    for name in local.keys() | spark.keys():
        if local.get(name) != spark.get(name):
            raise mismatch(f"{label}: executors disagree on {name}", spark.get(name, {}),
                           local.get(name, {}), ("spark", "local"))


def run_tick(
    engines: Engines, edges: list[Edge], label: str, with_local: bool
) -> tuple[list[float], int, JobCount]:
    """Insert `edges` (timed: [local ms, spark ms] or [spark ms]), then retract them
    (untimed); both steps parity-checked when the local engine takes part. Also returns
    how many rows the insert changed and the Spark jobs and stages it ran."""
    latencies = []
    inserted: dict[str, Changes] = {}
    targets = [("local", engines.local)] if with_local else []
    targets.append(("spark", engines.spark))
    spark = engines.spark.dispatch.spark
    assert spark is not None
    before = spark.jobs.total
    for name, engine in targets:
        ns, inserted[name] = timed(partial(engine.transact, tx_of(edges, add=True)))
        latencies.append(ns / 1e6)
    after = spark.jobs.total
    spark_work = JobCount(after.jobs - before.jobs, after.stages - before.stages)
    retracted = {name: engine.transact(tx_of(edges, add=False)) for name, engine in targets}
    if with_local:
        check(f"{label} insert", inserted["local"], inserted["spark"])
        check(f"{label} retract", retracted["local"], retracted["spark"])
    return latencies, sum(map(len, inserted["spark"].values())), spark_work


def measure(
    engines: Engines,
    sizes: list[int],
    ticks: list[list[Edge]],
    repeat: int,
    max_local_s: float | None,
) -> list[SizeResult]:
    """Median latency per size; local stops once a size's median exceeded `max_local_s`."""
    results: list[SizeResult] = []
    with_local = True
    for i, size in enumerate(sizes):
        if results and max_local_s is not None and with_local:
            previous = results[-1].local_ms
            with_local = previous is not None and previous / 1e3 <= max_local_s
        log(f"tick size {size}: {repeat} ticks" + ("" if with_local else " (spark only)"))
        local_ms, spark_ms, changed, jobs, stages = [], [], [], [], []
        for r, edges in enumerate(ticks[i * repeat : (i + 1) * repeat]):
            latencies, rows, count = run_tick(engines, edges, f"size {size} tick {r}",
                                              with_local)
            *local, spark = latencies
            local_ms += local
            spark_ms.append(spark)
            changed.append(rows)
            jobs.append(count.jobs)
            stages.append(count.stages)
        results.append(
            SizeResult(
                size=size,
                ticks=repeat,
                local_ms=statistics.median(local_ms) if local_ms else None,
                spark_ms=statistics.median(spark_ms),
                local_all_ms=local_ms,
                spark_all_ms=spark_ms,
                changed_rows=changed,
                spark_jobs=jobs,
                spark_stages=stages,
            )
        )
    return results


def warm_up(engines: Engines, edges: list[Edge], seed: int) -> None:
    """One untimed single-edge tick, so the first measured Spark job isn't the JVM's first."""
    (edge,) = new_edges(random.Random(seed - 1), sorted(endpoints(edges)),
                        set(edges), 1)
    run_tick(engines, [edge], "warm-up", with_local=True)


def spark_floor_ms(engines: Engines, repeat: int) -> float:
    """The median time of an empty one-task Spark job (`mapInArrow` over one row, collected):
    the floor under any Spark step, measured beside the ticks because on a shared machine it
    moves with the load."""
    spark = engines.spark.dispatch.spark
    assert spark is not None
    frame = spark.session.range(0, 1, 1, 1).mapInArrow(_same, "id long")
    return statistics.median(timed(frame.toArrow)[0] / 1e6 for _ in range(repeat))


def _same(batches: Any) -> Any:
    yield from batches


# --- reporting ----------------------------------------------------------------------------


def ms_text(value: float | None) -> str:
    """A latency cell: two decimals, thousands separated, or 'skipped'."""
    return "skipped" if value is None else f"{value:,.2f}"


def table(results: list[SizeResult]) -> str:
    """The tick size | local ms | spark ms | spark/local table, plus the median number of
    rows an insert changed (how much the parity check had to compare) and the
    most Spark jobs and stages an insert ran."""
    rows = [
        [
            f"{r.size:,}",
            ms_text(r.local_ms),
            ms_text(r.spark_ms),
            "n/a" if r.ratio is None else f"{r.ratio:.2f}",
            f"{statistics.median(r.changed_rows):,.0f}",
            f"{max(r.spark_jobs)} / {max(r.spark_stages)}",
        ]
        for r in results
    ]
    headers = ["tick edges", "local ms", "spark ms", "spark/local", "changed rows",
               "spark jobs / stages (max)"]
    return markdown_table(headers, rows)


def crossover(results: list[SizeResult]) -> int | None:
    """The smallest tick size at which Spark's median beats local's."""
    return next((r.size for r in results if r.ratio is not None and r.ratio < 1), None)


def crossover_text(results: list[SizeResult]) -> str:
    """'crossover: N edges per tick' or 'none up to N' (the largest size with both timed)."""
    found = crossover(results)
    if found is not None:
        return f"crossover: Spark is faster from {found:,} edges per tick"
    both = [r.size for r in results if r.local_ms is not None]
    return f"crossover: none up to {max(both):,} edges per tick" if both else "crossover: n/a"


# --- command line -------------------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--sizes", type=int, nargs="+", default=DEFAULT_SIZES,
                        help="edges inserted per tick (default 1 10 100 1000 10000 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="ticks per size (default 3)")
    parser.add_argument("--spark-master", default="local[2]",
                        help="Spark master (default local[2])")
    parser.add_argument("--max-local-s", type=float,
                        help="skip local sizes after one whose median took longer than this")
    parser.add_argument("--graph", choices=["pegase", "powerlaw"], default="pegase",
                        help="base graph (default pegase)")
    parser.add_argument("--seed", type=int, default=42, help="tick/graph seed (default 42)")
    parser.add_argument("--queries", default="triangle",
                        help="comma-separated queries of bench.queries (default triangle)")
    args = parser.parse_args(argv)
    args.queries = tuple(args.queries.split(","))
    if unknown := set(args.queries) - QUERIES.keys():
        parser.error(f"unknown queries: {', '.join(sorted(unknown))}")
    if any(s < 1 for s in args.sizes) or args.repeat < 1:
        parser.error("--sizes and --repeat must be positive")
    args.sizes = sorted(set(args.sizes))
    return args


def run(args: argparse.Namespace) -> None:
    """Set up both engines, measure every size, print the table and write the JSON."""
    output = Results("crossover", args)
    edges, graph = tick_graph(args.graph, args.seed, max(args.sizes))
    print(f"graph: {graph}: {len(edges):,} directed edges, {node_count(edges):,} nodes")
    print(f"ticks insert new random edges between existing nodes (seed {args.seed}), "
          f"each retracted by an untimed tick; median of {args.repeat} per size; "
          f"spark master {args.spark_master}; queries {', '.join(args.queries)}")
    ticks = make_ticks(edges, args.sizes, args.repeat, args.seed)
    engines = start_engines(args.spark_master, args.queries)
    setup = load_and_register(engines, edges)
    warm_up(engines, edges, args.seed)
    results = measure(engines, args.sizes, ticks, args.repeat, args.max_local_s)
    floor = spark_floor_ms(engines, max(args.repeat, 5))
    print()
    print(table(results))
    print()
    print(crossover_text(results))
    print(f"an empty one-task Spark job meanwhile: {floor:,.0f} ms (median)")
    output.write({
        "graph": {"name": graph, "edges": len(edges), "nodes": node_count(edges)},
        "setup": setup,
        "results": [asdict(r) | {"ratio": r.ratio} for r in results],
        "crossover": crossover(results),
        "spark_floor_ms": floor,
    })
