"""Skewed triangle instance: single-edge ticks at a hub, as the hub grows.

A hub vertex has n out-edges to vertices that are themselves connected in a ring (so the
triangle query has n results through the hub).  Each tick adds, then retracts, an edge from
the hub to a fresh vertex.  GenericJoin proposes from the fresh vertex's empty side, so
``delta`` does constant work; a binary plan first joins the hub's n edges.

    python -m bench skew [--sizes 1000,10000,100000] [--ticks 50] [--queries triangle,4cycle]

The same instance drives the work curve of `python -m bench peers` (`bench.peers.curve`).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from bench.engine.tx import ADD, RETRACT, TO, load_ticks, to_tx
from bench.harness import csv_list, log, markdown_table, positive_ints
from bench.queries import GRAPH_QUERIES, QUERIES
from workers.engine import Engine
from workers.plan import STRATEGIES

HUB = 0


def hub_engine(strategy: str, n: int, query: str = "triangle") -> Engine:
    """An engine with `query` registered over a hub with n out-edges into a ring."""
    engine = Engine(strategy=strategy)
    edges = [(HUB, b) for b in range(1, n + 1)] + [(b, b % n + 1) for b in range(1, n + 1)]
    for tick in load_ticks(edges):
        engine.transact(to_tx(tick))
    engine.register("q", QUERIES[query])  # after the load: only the ticks are compared
    return engine


def measure(strategy: str, n: int, ticks: int, query: str = "triangle",
            inward: bool = False) -> tuple[float, float]:
    """Median latency (ms) and median elements touched per tick of an edge hub -> fresh
    vertex (`inward`: fresh -> hub); no result changes, the fresh vertex has no other edge."""
    engine = hub_engine(strategy, n, query)
    latencies, elements = [], []
    for t in range(ticks):
        fresh = n + 1 + t
        edge = (fresh, HUB) if inward else (HUB, fresh)
        for op in (ADD, RETRACT):
            start = time.perf_counter()
            changes = engine.transact([[op, edge[0], TO, edge[1]]])
            latencies.append((time.perf_counter() - start) * 1e3)
            assert changes == {}, changes
            elements.append(engine.last_work["q"].elements)
    return statistics.median(latencies), statistics.median(elements)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--sizes", type=positive_ints, default=[1000, 10000, 100000],
                        help="hub degrees (default 1000,10000,100000)")
    parser.add_argument("--ticks", type=int, default=50, help="ticks per hub (default 50)")
    parser.add_argument("--queries", type=csv_list, default=["triangle"],
                        help=f"queries (default triangle; also {','.join(GRAPH_QUERIES)})")
    args = parser.parse_args(argv)
    if set(args.queries) - set(GRAPH_QUERIES):
        parser.error(f"unknown queries; choose from {list(GRAPH_QUERIES)}")
    if args.ticks < 1:
        parser.error("--ticks must be positive")
    return args


def run(args: argparse.Namespace) -> None:
    """Measure every (query, hub degree, strategy) and print the table."""
    rows = []
    for query in args.queries:
        for n in args.sizes:
            for strategy in STRATEGIES:
                latency, elements = measure(strategy, n, args.ticks, query)
                log(f"{query} n={n} {strategy}: {latency:.3f} ms, {elements:.0f} elements")
                rows.append([query, str(n), strategy, f"{latency:.3f}", f"{elements:.0f}"])
    print(markdown_table(["query", "hub n", "strategy", "median ms", "elements/tick"], rows))
