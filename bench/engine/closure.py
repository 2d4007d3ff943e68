"""Transitive closure kept live over single-edge ticks vs recomputing it from scratch.

    python -m bench closure [--edges N] [--ticks K] [--sample-every S]
                            [--graph pegase|powerlaw] [--seed S] [--no-duckdb]
                            [--clock wall|thread]

The benchmark graph is oriented from the lower to the higher node id (a DAG: the closure of
the undirected grid would be every pair) and optionally cut to a seeded random subset of
`--edges` edges. An engine loads it and registers the recursive `reach` query (bootstrap
timed). Then K seeded single-edge ticks follow, half retracting a present edge (breaking
paths), half adding one: re-adding a retracted edge (re-creating them) or a new
lower-to-higher edge (so the graph stays a DAG). Each `engine.transact` is timed.

Every S-th tick the same state is also recomputed from scratch, timed: by the engine
(`engine.query`, a one-shot evaluation) and by DuckDB (a `WITH RECURSIVE` count over an
`edges` table kept in sync tick by tick, the SQL only). There the closure integrated from
the incremental changes must equal the engine's recomputation, and DuckDB's pair set too
(its count is what is timed; the set is fetched untimed): any disagreement exits with
status 1. Results go to bench/results/closure-<start>.json.

`--clock thread` times by the calling thread's CPU time instead of the wall clock: on a
shared machine the wall clock also counts other processes' time slices, the thread's CPU
time does not (DuckDB's recompute runs on its own threads, so it needs `--no-duckdb`).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from bench.data import Edge, Op, dag_graph, endpoints, insert_edge, node_count, remove_edge
from bench.engine.tx import load_ticks, to_tx
from bench.harness import MismatchError, Results, log, markdown_table, mismatch, percentile, timed
from bench.queries import CLOSURE_QUERY, CLOSURE_RULES
from workers.engine import Engine

NAME = "tc"
REACH_SQL = (
    "WITH RECURSIVE reach(a, b) AS (SELECT a, b FROM edges UNION "
    "SELECT r.a, e.b FROM reach r JOIN edges e ON r.b = e.a)"
)
COUNT_SQL = f"{REACH_SQL} SELECT count(*) FROM reach"
PAIRS_SQL = f"{REACH_SQL} SELECT a, b FROM reach"
Pair = tuple[Any, ...]


@dataclass
class Timings:
    """Per-tick latencies in ns; `ticks` says which tick each one belongs to."""

    ticks: list[int] = field(default_factory=list)
    ns: list[int] = field(default_factory=list)

    def add(self, tick: int, ns: int) -> None:
        self.ticks.append(tick)
        self.ns.append(ns)


@dataclass
class Row:
    """One table row: a method's latency over the ticks it was timed on."""

    method: str
    ticks: int
    median_ms: float
    p95_ms: float
    mean_ms: float
    speedup: float | None  # this method's median / incremental median (recomputes only)


# --- graph and stream -------------------------------------------------------------------


def make_ticks(edges: list[Edge], count: int, seed: int) -> list[Op]:
    """`count` seeded single-edge ops: retract a present edge (50%), else add one back —
    a retracted edge (half the time, when there is one) or a new lower -> higher edge."""
    rng = random.Random(seed)
    nodes = sorted(endpoints(edges))
    present = list(edges)
    index = {edge: i for i, edge in enumerate(present)}
    retracted: list[Edge] = []
    ops: list[Op] = []
    while len(ops) < count:
        if present and rng.random() < 0.5:
            edge = present[rng.randrange(len(present))]
            remove_edge(present, index, edge)
            retracted.append(edge)
            ops.append((False, *edge))
            continue
        if retracted and rng.random() < 0.5:
            edge = retracted.pop(rng.randrange(len(retracted)))
        else:
            u, v = rng.choice(nodes), rng.choice(nodes)
            edge = (min(u, v), max(u, v))
            if u == v or edge in index:
                continue
            if edge in retracted:
                retracted.remove(edge)
        insert_edge(present, index, edge)
        ops.append((True, *edge))
    return ops


# --- targets ------------------------------------------------------------------------------


def integrate(closure: set[Pair], changes: dict[Pair, int], label: str) -> None:
    """Apply a tick's set changes; a +1 on a present pair or -1 on an absent one is wrong."""
    for pair, n in changes.items():
        if n == 1 and pair not in closure:
            closure.add(pair)
        elif n == -1 and pair in closure:
            closure.remove(pair)
        else:
            raise MismatchError(
                f"{label}: change {pair}: {n:+d} with the pair "
                f"{'present' if pair in closure else 'absent'}"
            )


def compare(label: str, what: str, got: set[Pair], want: set[Pair], note: str = "") -> None:
    """Raise MismatchError unless the incremental closure `got` equals `want`."""
    if got != want:
        raise mismatch(
            f"{label}: incremental closure ({len(got):,} pairs) != {what} ({len(want):,}){note}",
            dict.fromkeys(got, 1), dict.fromkeys(want, 1), ("incremental", what))


class Duck:
    """An in-memory DuckDB `edges` table kept in sync with the engine."""

    def __init__(self, edges: list[Edge]) -> None:
        import duckdb

        self.version = duckdb.__version__
        self.con = duckdb.connect()
        self.con.execute("CREATE TABLE edges(a BIGINT, b BIGINT)")
        self.con.executemany("INSERT INTO edges VALUES (?, ?)", [list(e) for e in edges])
        (threads,) = self.con.execute("SELECT current_setting('threads')").fetchall()[0]
        self.threads = int(threads)

    def apply(self, op: Op) -> None:
        is_add, u, v = op
        sql = "INSERT INTO edges VALUES (?, ?)" if is_add else (
            "DELETE FROM edges WHERE a = ? AND b = ?")
        self.con.execute(sql, [u, v])

    def count(self) -> int:
        (n,) = self.con.execute(COUNT_SQL).fetchall()[0]
        return int(n)

    def pairs(self) -> set[Pair]:
        return {(a, b) for a, b in self.con.execute(PAIRS_SQL).fetchall()}


@dataclass
class Run:
    """Everything measured: setup, per-tick latencies and closure sizes."""

    load_s: float
    bootstrap_s: float
    bootstrap_pairs: int
    incremental: Timings
    inserts: Timings
    deletes: Timings
    local: Timings
    duckdb: Timings
    changed: list[int]
    sizes: dict[int, int]  # sampled tick -> closure size
    duckdb_info: dict[str, Any] | None


Clock = Callable[[], int]
CLOCKS: dict[str, Clock] = {"wall": time.perf_counter_ns, "thread": time.thread_time_ns}


def check_sample(
    label: str, engine: Engine, closure: set[Pair], duck: Duck | None, clock: Clock
) -> tuple[int, int | None]:
    """Recompute from scratch (engine, DuckDB), compare; return the two latencies in ns.
    Both recomputes run before any comparison, so a mismatch reports both sizes."""
    local_ns, rows = timed(lambda: engine.query(CLOSURE_QUERY, [CLOSURE_RULES]), clock)
    if not isinstance(rows, dict):
        raise TypeError(f"engine.query returned {type(rows).__name__}, expected {{row: 1}}")
    duck_ns, count = timed(duck.count) if duck is not None else (None, None)
    note = "" if count is None else f" [DuckDB counts {count:,}]"
    compare(label, "engine recompute", closure, set(rows), note)
    if duck is not None:
        if count != len(closure):
            raise MismatchError(
                f"{label}: incremental closure has {len(closure):,} pairs, DuckDB counts "
                f"{count:,}"
            )
        compare(label, "DuckDB", closure, duck.pairs())
    return local_ns, duck_ns


def measure(edges: list[Edge], ops: list[Op], every: int, duckdb: bool, clock: Clock) -> Run:
    """Load, bootstrap, then stream `ops`, recomputing and checking every `every`-th tick."""
    engine = Engine()
    started = time.perf_counter()
    engine.transact_many((to_tx(tick), i + 1) for i, tick in enumerate(load_ticks(edges)))
    load_s = time.perf_counter() - started
    bootstrap_ns, rows = timed(lambda: engine.register(NAME, CLOSURE_QUERY, [CLOSURE_RULES]),
                               clock)
    closure = set(rows)
    log(f"bootstrap: {len(closure):,} pairs in {bootstrap_ns / 1e9:.2f} s")
    duck = Duck(edges) if duckdb else None
    info = None if duck is None else {"version": duck.version, "threads": duck.threads}
    run = Run(load_s, bootstrap_ns / 1e9, len(closure), Timings(), Timings(), Timings(),
              Timings(), Timings(), [], {}, info)
    check_sample("bootstrap", engine, closure, duck, clock)  # also warms both recomputes up
    for i, op in enumerate(ops):
        ns, changes = timed(partial(engine.transact, to_tx([op])), clock)
        delta = changes.get(NAME, {})
        integrate(closure, delta, f"tick {i} {op}")
        run.incremental.add(i, ns)
        (run.inserts if op[0] else run.deletes).add(i, ns)
        run.changed.append(len(delta))
        if duck is not None:
            duck.apply(op)
        if (i + 1) % every == 0 or i == len(ops) - 1:
            local_ns, duck_ns = check_sample(f"tick {i}", engine, closure, duck, clock)
            run.local.add(i, local_ns)
            if duck_ns is not None:
                run.duckdb.add(i, duck_ns)
            run.sizes[i] = len(closure)
            log(f"tick {i + 1}/{len(ops)}: {len(closure):,} pairs, incremental "
                f"{ns / 1e6:.3f} ms, recompute {local_ns / 1e6:.1f} ms"
                + ("" if duck_ns is None else f", DuckDB {duck_ns / 1e6:.1f} ms"))
    return run


# --- reporting ----------------------------------------------------------------------------


def row(method: str, timings: Timings, base: float | None) -> Row:
    """Summarise one method's latencies; `speedup` is its median over `base` (ms)."""
    ns = timings.ns
    median = statistics.median(ns) / 1e6
    return Row(
        method=method,
        ticks=len(ns),
        median_ms=median,
        p95_ms=percentile(ns, 0.95) / 1e6,
        mean_ms=statistics.fmean(ns) / 1e6,
        speedup=None if base is None else median / base,
    )


def rows_of(run: Run) -> list[Row]:
    """The table: incremental (all, inserts, deletes, sampled ticks; inserts and deletes
    again without the tick right after each recompute, which finds the caches full of the
    recompute's data: ~3 ms more for any tick on the power-law closure), then the
    recomputes."""
    incremental = row("incremental (all ticks)", run.incremental, None)
    sampled = set(run.local.ticks)
    after = {tick + 1 for tick in sampled}
    rows = [incremental]
    rows += [row(label, t, None) for label, t in (
        ("incremental inserts", run.inserts),
        ("incremental deletes", run.deletes),
        ("incremental (sampled ticks)", _only(run.incremental, sampled.__contains__)),
        ("inserts, not right after a recompute",
         _only(run.inserts, lambda tick: tick not in after)),
        ("deletes, not right after a recompute",
         _only(run.deletes, lambda tick: tick not in after)),
    ) if t.ns]
    rows.append(row("recompute engine.query", run.local, incremental.median_ms))
    if run.duckdb.ns:
        rows.append(row("recompute DuckDB", run.duckdb, incremental.median_ms))
    return rows


def _only(timings: Timings, keep: Callable[[int], bool]) -> Timings:
    """The ticks of ``timings`` that ``keep`` accepts."""
    kept = Timings()
    for tick, ns in zip(timings.ticks, timings.ns, strict=True):
        if keep(tick):
            kept.add(tick, ns)
    return kept


def table(rows: list[Row]) -> str:
    headers = ["method", "ticks", "median ms", "p95 ms", "mean ms", "median / incremental"]
    return markdown_table(headers, [
        [r.method, f"{r.ticks:,}", f"{r.median_ms:,.3f}", f"{r.p95_ms:,.3f}",
         f"{r.mean_ms:,.3f}", "" if r.speedup is None else f"{r.speedup:,.1f}x"]
        for r in rows
    ])


# --- command line -------------------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--edges", type=int,
                        help="random subset of the oriented graph's edges (default all)")
    parser.add_argument("--ticks", type=int, default=200,
                        help="single-edge ticks (default 200)")
    parser.add_argument("--sample-every", type=int, default=20,
                        help="recompute and check every S-th tick, and the last (default 20)")
    parser.add_argument("--graph", choices=["pegase", "powerlaw"], default="pegase",
                        help="base graph (default pegase; powerlaw: ~7x larger closure)")
    parser.add_argument("--seed", type=int, default=42, help="stream/graph seed (default 42)")
    parser.add_argument("--no-duckdb", action="store_true", help="skip the DuckDB baseline")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="time by the wall clock (default) or the thread's CPU time")
    args = parser.parse_args(argv)
    if args.clock == "thread" and not args.no_duckdb:
        parser.error("--clock thread needs --no-duckdb (DuckDB runs on its own threads)")
    if args.ticks < 1 or args.sample_every < 1 or (args.edges is not None and args.edges < 1):
        parser.error("--edges, --ticks and --sample-every must be positive")
    return args


def run(args: argparse.Namespace) -> None:
    """Build the graph and stream, measure, print the table and write the JSON."""
    output = Results("closure", args)
    edges, graph = dag_graph(args.graph, args.edges, args.seed)
    ops = make_ticks(edges, args.ticks, args.seed)
    inserts = sum(1 for op in ops if op[0])
    print(f"graph: {graph}: {len(edges):,} directed edges, {node_count(edges):,} nodes")
    print(f"ticks: {len(ops)} single-edge ({inserts} inserts, {len(ops) - inserts} deletes, "
          f"seed {args.seed}); recompute + check every {args.sample_every}th tick")
    print(f"clock: {args.clock}")
    result = measure(edges, ops, args.sample_every, not args.no_duckdb, CLOCKS[args.clock])
    rows = rows_of(result)
    sizes = list(result.sizes.values())
    print(f"load {result.load_s:.2f} s; bootstrap (register) {result.bootstrap_s:.3f} s, "
          f"{result.bootstrap_pairs:,} pairs; closure {min(sizes):,}..{max(sizes):,} pairs "
          f"on the sampled ticks; pairs changed per tick: median "
          f"{statistics.median(result.changed):,.0f}, max {max(result.changed):,}")
    print()
    print(table(rows))
    print()
    speedups = {r.method: r.speedup for r in rows if r.speedup is not None}
    for method, speedup in speedups.items():
        verdict = "meets" if speedup >= 20 else "MISSES"
        print(f"{method}: {speedup:,.1f}x the incremental median ({verdict} the >= 20x target)")
    output.write({
        "graph": {"name": graph, "edges": len(edges), "nodes": node_count(edges)},
        "setup": {"load_s": result.load_s, "bootstrap_s": result.bootstrap_s,
                  "bootstrap_pairs": result.bootstrap_pairs},
        "duckdb": result.duckdb_info,
        "rows": [asdict(r) for r in rows],
        "ticks": [{"tick": i, "insert": op[0], "edge": list(op[1:]), "ns": ns,
                   "changed": changed}
                  for i, (op, ns, changed) in enumerate(
                      zip(ops, result.incremental.ns, result.changed, strict=True))],
        "samples": [{"tick": t, "pairs": result.sizes[t], "local_ns": ns,
                     "duckdb_ns": dict(zip(result.duckdb.ticks, result.duckdb.ns,
                                           strict=True)).get(t)}
                    for t, ns in zip(result.local.ticks, result.local.ns, strict=True)],
    })
