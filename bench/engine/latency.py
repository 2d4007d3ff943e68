"""Latency / throughput / memory benchmark of the deltalog engine on the PEGASE 9241 grid.

    python -m bench latency [--quick] [--ticks N] [--sizes 1,100,1000]
                            [--strategies delta,recursive,binary]
                            [--queries triangle,4cycle,2path]
                            [--graph pegase|powerlaw] [--seed S] [--memory]

Each (query, strategy) gets a fresh engine, the graph is loaded in chunks of edges, then the
same seeded stream of ticks (retract an existing edge or add a new random one, 50/50) is
timed per `engine.transact` call. The triangle query is also run through the hand-written
maintainer, whose changes must equal the engine's on every transaction. `--memory` instead
compares engine memory with 1 vs 100 registered queries. Results go to bench/results/.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import tracemalloc
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from bench.data import Edge, Op, endpoints, item_stream, load_graph, node_count
from bench.engine.handwritten import TriangleMaintainer
from bench.engine.tx import Tx, load_ticks, to_tx
from bench.harness import (
    Results,
    csv_list,
    log,
    markdown_table,
    mismatch,
    percentile,
    positive_ints,
    time_calls,
)
from bench.queries import GRAPH_QUERIES, MEMORY_KINDS, QUERIES, variants
from workers.zset import ZSet
from workers.zset.row import Row

Changes = ZSet[Row]
P = TypeVar("P")
R = TypeVar("R")

DEFAULT_TICKS = {1: 200, 100: 50, 1000: 10}
FALLBACK_TICKS = 20
MEMORY_QUERIES = 100
MEMORY_TARGET = 1.3
HANDWRITTEN = "handwritten"
MIB = 1 << 20


class EngineLike(Protocol):
    """The part of workers.engine.Engine the benchmark drives."""

    def register(self, name: str, edn_text: str) -> Any: ...

    def transact(self, tx: Tx) -> Mapping[str, Mapping[tuple[Any, ...], int]]: ...


@dataclass(frozen=True)
class Phase:
    """A run of ticks that all have `size` edge ops."""

    size: int
    ticks: list[list[Op]]


@dataclass
class Trace:
    """Latencies (ns) and query changes of one target over the load chunks and each phase."""

    load_ns: int
    load_changes: list[Changes]
    latencies: list[list[int]]
    changes: list[list[Changes]]


@dataclass
class Stats:
    """One table row: a (query, tick size, strategy) measurement."""

    query: str
    size: int
    strategy: str
    ticks: int
    median_ms: float
    p99_ms: float
    ops_per_s: float
    load_s: float
    mem_peak_mib: float
    mem_current_mib: float


# --- graph and stream -------------------------------------------------------------------


def make_stream(edges: list[Edge], plan: list[tuple[int, int]], seed: int) -> list[Phase]:
    """Seeded ticks following `plan` [(size, ticks)], applied in order from `edges`.

    Each op retracts a uniformly chosen present edge or adds a new random non-loop edge
    between known nodes (50/50). No edge is touched twice within one tick.
    """
    nodes = sorted(endpoints(edges))

    def draw(rng: random.Random) -> Edge:
        return rng.choice(nodes), rng.choice(nodes)

    return [
        Phase(size, [[(add, *edge) for add, edge in tick] for tick in ticks])
        for size, ticks in item_stream(edges, plan, seed, draw, lambda e: e[0] != e[1])
    ]


def to_pairs(tick: list[Op]) -> tuple[list[Edge], list[Edge]]:
    """A tick as (adds, removes) edge lists for the hand-written maintainer."""
    return [(u, v) for a, u, v in tick if a], [(u, v) for a, u, v in tick if not a]


# --- targets ----------------------------------------------------------------------------


def new_engine(strategy: str, queries: dict[str, str]) -> EngineLike:
    """A fresh engine with `queries` registered."""
    from workers.engine import Engine

    engine: EngineLike = Engine(strategy=strategy)
    for name, text in queries.items():
        engine.register(name, text)
    return engine


def loaded_engine(strategy: str, queries: dict[str, str], load: list[Tx]) -> EngineLike:
    """A fresh engine with `queries` registered and the graph loaded."""
    engine = new_engine(strategy, queries)
    for tx in load:
        engine.transact(tx)
    return engine


def loaded_maintainer(load: list[tuple[list[Edge], list[Edge]]]) -> TriangleMaintainer:
    """A hand-written triangle maintainer with the graph loaded."""
    maintainer = TriangleMaintainer()
    for adds, removes in load:
        maintainer.apply(adds, removes)
    return maintainer


def trace(
    apply: Callable[[P], R],
    extract: Callable[[R], Changes],
    load: list[P],
    phases: list[list[P]],
) -> Trace:
    """Time `apply` over the load then each phase, keeping the extracted query changes."""
    gc.collect()
    load_lat, load_out = time_calls(apply, load)
    timed = [time_calls(apply, payloads) for payloads in phases]
    return Trace(
        load_ns=sum(load_lat),
        load_changes=[extract(out) for out in load_out],
        latencies=[lat for lat, _ in timed],
        changes=[[extract(out) for out in outs] for _, outs in timed],
    )


def trace_engine(strategy: str, query: str, load: list[Tx], phases: list[list[Tx]]) -> Trace:
    """Trace a fresh engine with only `query` registered."""
    engine = new_engine(strategy, {query: QUERIES[query]})
    return trace(engine.transact, lambda out: dict(out.get(query, {})), load, phases)


def trace_maintainer(
    load: list[tuple[list[Edge], list[Edge]]],
    phases: list[list[tuple[list[Edge], list[Edge]]]],
) -> Trace:
    """Trace a fresh hand-written triangle maintainer."""
    maintainer = TriangleMaintainer()
    return trace(lambda p: maintainer.apply(*p), dict, load, phases)


def check(got: Trace, want: Trace, label: str, sizes: list[int]) -> None:
    """Raise MismatchError at the first transaction whose changes differ."""
    streams = [("load", got.load_changes, want.load_changes)] + [
        (f"k={size}", g, w) for size, g, w in zip(sizes, got.changes, want.changes, strict=True)
    ]
    for name, got_ticks, want_ticks in streams:
        for i, (g, w) in enumerate(zip(got_ticks, want_ticks, strict=True)):
            if g != w:
                raise mismatch(f"{label}: {name} transaction {i} disagrees with the "
                               "hand-written maintainer", g, w, ("engine", HANDWRITTEN))


def traced_memory(build: Callable[[], object]) -> tuple[int, int]:
    """(current, peak) bytes allocated by `build` under tracemalloc, with its result alive."""
    gc.collect()
    tracemalloc.start()
    try:
        alive = build()
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del alive
    return current, peak


# --- reporting --------------------------------------------------------------------------


def summarise(
    query: str,
    strategy: str,
    got: Trace,
    phases: list[Phase],
    memory: tuple[int, int],
) -> list[Stats]:
    """One Stats row per phase of a trace."""
    current, peak = memory
    return [
        Stats(
            query=query,
            size=phase.size,
            strategy=strategy,
            ticks=len(lat),
            median_ms=statistics.median(lat) / 1e6,
            p99_ms=percentile(lat, 0.99) / 1e6,
            ops_per_s=phase.size * len(lat) / (sum(lat) / 1e9),
            load_s=got.load_ns / 1e9,
            mem_peak_mib=peak / MIB,
            mem_current_mib=current / MIB,
        )
        for phase, lat in zip(phases, got.latencies, strict=True)
    ]


def table(rows: list[Stats]) -> str:
    """The latency table, rows grouped by (query, tick size)."""
    headers = ["query", "k", "strategy", "ticks", "median ms", "p99 ms", "ops/s", "load s",
               "peak MiB", "live MiB"]
    return markdown_table(headers, [
        [r.query, str(r.size), r.strategy, str(r.ticks), f"{r.median_ms:.3f}",
         f"{r.p99_ms:.3f}", f"{r.ops_per_s:.1f}", f"{r.load_s:.2f}", f"{r.mem_peak_mib:.1f}",
         f"{r.mem_current_mib:.1f}"]
        for r in rows
    ])


def ratios(rows: list[Stats]) -> dict[str, float]:
    """strategy -> engine median / hand-written median, for single-edge triangle ticks."""
    single = {r.strategy: r.median_ms for r in rows if r.query == "triangle" and r.size == 1}
    base = single.pop(HANDWRITTEN, None)
    return {s: m / base for s, m in single.items()} if base else {}


# --- scenarios --------------------------------------------------------------------------


def latency_scenario(
    edges: list[Edge],
    phases: list[Phase],
    strategies: list[str],
    queries: list[str],
) -> list[Stats]:
    """Benchmark every (query, strategy), checking the triangle query against the baseline."""
    load = load_ticks(edges)
    load_txs, load_pairs = [to_tx(t) for t in load], [to_pairs(t) for t in load]
    phase_txs = [[to_tx(t) for t in p.ticks] for p in phases]
    sizes = [p.size for p in phases]
    rows: list[Stats] = []
    for query in queries:
        reference = None
        if query == "triangle":
            log("running handwritten/triangle")
            reference = trace_maintainer(
                load_pairs, [[to_pairs(t) for t in p.ticks] for p in phases]
            )
            memory = traced_memory(partial(loaded_maintainer, load_pairs))
            rows += summarise(query, HANDWRITTEN, reference, phases, memory)
        for strategy in strategies:
            log(f"running {strategy}/{query}")
            got = trace_engine(strategy, query, load_txs, phase_txs)
            if reference is not None:
                check(got, reference, f"{strategy}/{query}", sizes)
            memory = traced_memory(
                partial(loaded_engine, strategy, {query: QUERIES[query]}, load_txs)
            )
            rows += summarise(query, strategy, got, phases, memory)
    rows.sort(key=lambda r: (queries.index(r.query), r.size))
    return rows


def top_nodes(edges: list[Edge], count: int) -> list[int]:
    """The `count` highest-degree nodes (ties by id), used as query constants."""
    degree = Counter(x for edge in edges for x in edge)
    return [node for node, _ in sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[:count]]


def memory_scenario(edges: list[Edge], strategies: list[str]) -> list[dict[str, Any]]:
    """Live memory after load with 1 vs MEMORY_QUERIES registered queries, per strategy."""
    load_txs = [to_tx(t) for t in load_ticks(edges)]
    many = variants(MEMORY_QUERIES, top_nodes(edges, 10))
    one = dict(list(many.items())[:1])
    results = []
    for strategy in strategies:
        measured = {}
        for label, queries in (("1", one), (str(MEMORY_QUERIES), many)):
            log(f"memory {strategy}: {label} queries")
            current, peak = traced_memory(partial(loaded_engine, strategy, queries, load_txs))
            measured[label] = {"current_mib": current / MIB, "peak_mib": peak / MIB}
        ratio = measured[str(MEMORY_QUERIES)]["current_mib"] / measured["1"]["current_mib"]
        results.append({"strategy": strategy, **measured, "ratio": ratio})
    return results


def memory_table(results: list[dict[str, Any]]) -> str:
    """The 1-vs-many-queries memory table, with the verdict against MEMORY_TARGET."""
    n = str(MEMORY_QUERIES)
    return markdown_table(
        ["strategy", "1 query MiB", f"{n} queries MiB", "ratio", f"target < {MEMORY_TARGET}"],
        [[r["strategy"], f"{r['1']['current_mib']:.1f}", f"{r[n]['current_mib']:.1f}",
          f"{r['ratio']:.2f}", "ok" if r["ratio"] < MEMORY_TARGET else "OVER"]
         for r in results],
    )


# --- command line -----------------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument(
        "--ticks",
        type=int,
        help="ticks per tick size (default 200/50/10 "
        f"for k=1/100/1000, {FALLBACK_TICKS} otherwise)",
    )
    parser.add_argument(
        "--sizes",
        type=positive_ints,
        default=[1, 100, 1000],
        help="edge ops per tick (default 1,100,1000)",
    )
    parser.add_argument(
        "--strategies",
        type=csv_list,
        default=["delta", "recursive", "binary"],
        help="engine strategies (default delta,recursive,binary)",
    )
    parser.add_argument(
        "--queries",
        type=csv_list,
        default=list(MEMORY_KINDS),
        help=f"queries (default {','.join(MEMORY_KINDS)}; also {','.join(GRAPH_QUERIES)})",
    )
    parser.add_argument(
        "--graph",
        choices=["pegase", "powerlaw"],
        default="pegase",
        help="benchmark graph (default pegase)",
    )
    parser.add_argument("--seed", type=int, default=42, help="stream/graph seed (default 42)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the ticks (min 2)")
    parser.add_argument(
        "--memory",
        action="store_true",
        help=f"run only the 1-vs-{MEMORY_QUERIES}-queries memory scenario",
    )
    args = parser.parse_args(argv)
    unknown = set(args.queries) - set(GRAPH_QUERIES)
    if unknown:
        parser.error(f"unknown queries {sorted(unknown)}; choose from {list(GRAPH_QUERIES)}")
    if args.ticks is not None and args.ticks < 1:
        parser.error("--ticks must be positive")
    return args


def tick_plan(args: argparse.Namespace) -> list[tuple[int, int]]:
    """[(tick size, number of ticks)] from the flags."""
    plan = []
    for size in args.sizes:
        count = args.ticks or DEFAULT_TICKS.get(size, FALLBACK_TICKS)
        plan.append((size, max(2, count // 10) if args.quick else count))
    return plan


def run(args: argparse.Namespace) -> None:
    """Run the selected scenario, print tables and write the JSON results."""
    output = Results("latency", args)
    edges, graph = load_graph(args.graph, args.seed)
    nodes = node_count(edges)
    print(f"graph: {graph}: {len(edges)} directed edges, {nodes} nodes")
    payload: dict[str, Any] = {"graph": {"name": graph, "edges": len(edges), "nodes": nodes}}
    if args.memory:
        memory = memory_scenario(edges, args.strategies)
        print(memory_table(memory))
        payload["memory"] = memory
    else:
        phases = make_stream(edges, tick_plan(args), args.seed)
        rows = latency_scenario(edges, phases, args.strategies, args.queries)
        print(table(rows))
        single = ratios(rows)
        for strategy, ratio in single.items():
            print(f"triangle k=1 median ratio {strategy}/{HANDWRITTEN}: {ratio:.2f}")
        payload |= {"latency": [asdict(r) for r in rows], "ratio_vs_handwritten_k1": single}
    output.write(payload)
