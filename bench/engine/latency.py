"""Latency / throughput / memory benchmark of the deltalog engine on the PEGASE 9241 grid.

    python -m bench.run [--quick] [--ticks N] [--sizes 1,100,1000]
                        [--strategies delta,recursive,binary] [--queries triangle,4cycle,2path]
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
import json
import math
import random
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

from edn_format import Keyword

from bench.data import (
    PANDAPOWER_VERSION,
    Edge,
    endpoints,
    load_pegase_edges,
    node_count,
    power_law_edges,
)
from bench.engine.handwritten import TriangleMaintainer
from bench.queries import GRAPH_QUERIES, MEMORY_KINDS, QUERIES, variants

Op = tuple[bool, int, int]  # (is_add, from, to)
Tick = list[Op]
Tx = list[list[Any]]
Changes = dict[tuple[Any, ...], int]
P = TypeVar("P")
R = TypeVar("R")
Item = TypeVar("Item", bound=tuple[Any, ...])

CHUNK = 2000
DEFAULT_TICKS = {1: 200, 100: 50, 1000: 10}
FALLBACK_TICKS = 20
MEMORY_QUERIES = 100
MEMORY_TARGET = 1.3
HANDWRITTEN = "handwritten"
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
ADD, RETRACT, ATTR = Keyword("db/add"), Keyword("db/retract"), Keyword("g/to")
MIB = 1 << 20


class EngineLike(Protocol):
    """The part of workers.engine.Engine the benchmark drives."""

    def register(self, name: str, edn_text: str) -> Any: ...

    def transact(self, tx: Tx) -> Mapping[str, Mapping[tuple[Any, ...], int]]: ...


class MismatchError(RuntimeError):
    """The engine's changes differ from the hand-written maintainer's."""


@dataclass(frozen=True)
class Phase:
    """A run of ticks that all have `size` edge ops."""

    size: int
    ticks: list[Tick]


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


def load_graph(name: str, seed: int) -> tuple[list[Edge], str]:
    """The benchmark graph and a label; PEGASE falls back to power-law if it can't be fetched."""
    if name == "pegase":
        try:
            return load_pegase_edges(), f"PEGASE 9241 (pandapower {PANDAPOWER_VERSION})"
        except (OSError, RuntimeError) as exc:
            log(f"PEGASE unavailable ({exc}); falling back to a power-law graph")
    return power_law_edges(9241, 14232, seed), f"power-law n=9241 m=14232 seed={seed}"


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


def item_stream(
    items: Sequence[Item],
    plan: list[tuple[int, int]],
    seed: int,
    draw: Callable[[random.Random], Item],
    valid: Callable[[Item], bool],
) -> list[tuple[int, list[list[tuple[bool, Item]]]]]:
    """Seeded ticks of (is_add, item) over a set of items, following `plan` [(size, ticks)].

    Each op retracts a uniformly chosen present item or adds a new `draw`n `valid` one
    (50/50), so every retract hits a present item and every add an absent one; no item is
    touched twice within one tick.
    """
    rng = random.Random(seed)
    present = list(items)
    index = {item: i for i, item in enumerate(present)}
    phases = []
    for size, count in plan:
        ticks = []
        for _ in range(count):
            tick: list[tuple[bool, Item]] = []
            touched: set[Item] = set()
            while len(tick) < size:
                retract = rng.random() < 0.5 and bool(present)
                item = present[rng.randrange(len(present))] if retract else draw(rng)
                if item in touched or not valid(item) or (not retract and item in index):
                    continue
                touched.add(item)
                (remove_edge if retract else insert_edge)(present, index, item)
                tick.append((not retract, item))
            ticks.append(tick)
        phases.append((size, ticks))
    return phases


def insert_edge(present: list[Item], index: dict[Item, int], edge: Item) -> None:
    """Append `edge` (any item) to the indexed list."""
    index[edge] = len(present)
    present.append(edge)


def remove_edge(present: list[Item], index: dict[Item, int], edge: Item) -> None:
    """Swap-remove `edge` (any item) from the indexed list in O(1)."""
    i = index.pop(edge)
    last = present.pop()
    if last != edge:
        present[i] = last
        index[last] = i


def load_ticks(edges: list[Edge]) -> list[Tick]:
    """The initial load as add-only ticks of CHUNK edges."""
    return [[(True, u, v) for u, v in edges[i : i + CHUNK]] for i in range(0, len(edges), CHUNK)]


def to_tx(tick: Tick) -> Tx:
    """A tick as already-parsed EDN transaction forms."""
    return [[ADD if is_add else RETRACT, u, ATTR, v] for is_add, u, v in tick]


def to_pairs(tick: Tick) -> tuple[list[Edge], list[Edge]]:
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


def time_calls(apply: Callable[[P], R], payloads: Sequence[P]) -> tuple[list[int], list[R]]:
    """Call `apply` on each payload; return per-call latencies (ns) and the results."""
    latencies, results = [], []
    for payload in payloads:
        start = time.perf_counter_ns()
        result = apply(payload)
        latencies.append(time.perf_counter_ns() - start)
        results.append(result)
    return latencies, results


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
                extra = {row: n for row, n in g.items() if w.get(row) != n}
                missing = {row: n for row, n in w.items() if g.get(row) != n}
                raise MismatchError(
                    f"{label}: {name} transaction {i} disagrees with the hand-written "
                    f"maintainer; engine-only {sample(extra)}, handwritten-only {sample(missing)}"
                )


def sample(changes: Changes, limit: int = 5) -> str:
    """A short printable excerpt of a change set."""
    items = sorted(changes.items(), key=repr)
    more = f" ... (+{len(items) - limit})" if len(items) > limit else ""
    return f"{dict(items[:limit])}{more}"


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


def percentile(values: list[int], q: float) -> int:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


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


def print_table(rows: list[Stats]) -> None:
    """Print the latency table, one block per (query, tick size)."""
    header = (
        f"{'query':<9} {'k':>5} {'strategy':<12} {'ticks':>5} {'median ms':>10} "
        f"{'p99 ms':>10} {'ops/s':>11} {'load s':>8} {'peak MiB':>9} {'live MiB':>9}"
    )
    print(header)
    print("-" * len(header))
    previous = None
    for r in rows:
        if previous is not None and (r.query, r.size) != previous:
            print()
        previous = (r.query, r.size)
        print(
            f"{r.query:<9} {r.size:>5} {r.strategy:<12} {r.ticks:>5} {r.median_ms:>10.3f} "
            f"{r.p99_ms:>10.3f} {r.ops_per_s:>11.1f} {r.load_s:>8.2f} "
            f"{r.mem_peak_mib:>9.1f} {r.mem_current_mib:>9.1f}"
        )


def ratios(rows: list[Stats]) -> dict[str, float]:
    """strategy -> engine median / hand-written median, for single-edge triangle ticks."""
    single = {r.strategy: r.median_ms for r in rows if r.query == "triangle" and r.size == 1}
    base = single.pop(HANDWRITTEN, None)
    return {s: m / base for s, m in single.items()} if base else {}


def log(message: str) -> None:
    """Progress to stderr."""
    print(message, file=sys.stderr, flush=True)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A right-aligned markdown table, pasteable into docs as is."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def write_results(payload: dict[str, Any], started: time.struct_time, script: str = "") -> Path:
    """Write a run's results to bench/results/[<script>-]<start timestamp>.json."""
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", started)
    path = RESULTS_DIR / f"{script}-{stamp}.json" if script else RESULTS_DIR / f"{stamp}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


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


def print_memory(results: list[dict[str, Any]]) -> None:
    """Print the 1-vs-many-queries memory table."""
    n = str(MEMORY_QUERIES)
    print(
        f"{'strategy':<12} {'1 query MiB':>12} {n + ' queries MiB':>16} {'ratio':>7}  "
        f"target < {MEMORY_TARGET}"
    )
    for r in results:
        verdict = "ok" if r["ratio"] < MEMORY_TARGET else "OVER"
        print(
            f"{r['strategy']:<12} {r['1']['current_mib']:>12.1f} {r[n]['current_mib']:>16.1f} "
            f"{r['ratio']:>7.2f}  {verdict}"
        )


# --- command line -----------------------------------------------------------------------


def csv_list(text: str) -> list[str]:
    """Split a comma-separated flag value."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--ticks",
        type=int,
        help="ticks per tick size (default 200/50/10 "
        f"for k=1/100/1000, {FALLBACK_TICKS} otherwise)",
    )
    parser.add_argument(
        "--sizes",
        type=csv_list,
        default=["1", "100", "1000"],
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
    try:
        args.sizes = [int(s) for s in args.sizes]
    except ValueError:
        parser.error("--sizes takes comma-separated integers")
    if any(s < 1 for s in args.sizes) or (args.ticks is not None and args.ticks < 1):
        parser.error("--sizes and --ticks must be positive")
    return args


def tick_plan(args: argparse.Namespace) -> list[tuple[int, int]]:
    """[(tick size, number of ticks)] from the flags."""
    plan = []
    for size in args.sizes:
        count = args.ticks or DEFAULT_TICKS.get(size, FALLBACK_TICKS)
        plan.append((size, max(2, count // 10) if args.quick else count))
    return plan


def main(argv: list[str] | None = None) -> None:
    """Run the selected scenario; an engine/baseline disagreement exits with status 1."""
    try:
        run(parse_args(argv))
    except MismatchError as exc:
        sys.exit(f"error: {exc}")


def run(args: argparse.Namespace) -> None:
    """Run the selected scenario, print tables and write the JSON results."""
    started = time.localtime()
    edges, graph = load_graph(args.graph, args.seed)
    nodes = node_count(edges)
    print(f"graph: {graph}: {len(edges)} directed edges, {nodes} nodes")
    payload: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z", started),
        "args": vars(args),
        "graph": {"name": graph, "edges": len(edges), "nodes": nodes},
    }
    if args.memory:
        results = memory_scenario(edges, args.strategies)
        print_memory(results)
        payload["memory"] = results
    else:
        phases = make_stream(edges, tick_plan(args), args.seed)
        rows = latency_scenario(edges, phases, args.strategies, args.queries)
        print_table(rows)
        single = ratios(rows)
        for strategy, ratio in single.items():
            print(f"triangle k=1 median ratio {strategy}/{HANDWRITTEN}: {ratio:.2f}")
        payload |= {"latency": [asdict(r) for r in rows], "ratio_vs_handwritten_k1": single}
    print(f"results: {write_results(payload, started)}")


if __name__ == "__main__":
    main()
