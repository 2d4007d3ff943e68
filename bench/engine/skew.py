"""Skewed triangle instance: single-edge ticks at a hub, as the hub grows.

A hub vertex has n out-edges to vertices that are themselves connected in a ring (so the
triangle query has n results through the hub).  Each tick adds, then retracts, an edge from
the hub to a fresh vertex.  GenericJoin proposes from the fresh vertex's empty side, so
``delta`` does constant work; a binary plan first joins the hub's n edges.

    python -m bench.skew [--sizes 1000,10000,100000] [--ticks 50] [--queries triangle,4cycle]

The same instance drives the work curve of `python -m bench.peers` (`curve`).
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.queries import QUERIES
from workers.edn import keyword
from workers.engine import Engine
from workers.plan import STRATEGIES

ADD, RETRACT, TO = keyword("db/add"), keyword("db/retract"), keyword("g/to")
HUB = 0
CHUNK = 5000


def hub_engine(strategy: str, n: int, query: str = "triangle") -> Engine:
    """An engine with `query` registered over a hub with n out-edges into a ring."""
    engine = Engine(strategy=strategy)
    edges = [(HUB, b) for b in range(1, n + 1)] + [(b, b % n + 1) for b in range(1, n + 1)]
    for i in range(0, len(edges), CHUNK):
        engine.transact([[ADD, u, TO, v] for u, v in edges[i:i + CHUNK]])
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--queries", default="triangle")
    args = parser.parse_args()
    print(f"{'query':<9} {'hub n':>8} {'strategy':<10} {'median ms':>10} {'elements/tick':>14}")
    for query in args.queries.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            for strategy in STRATEGIES:
                latency, elements = measure(strategy, n, args.ticks, query)
                print(f"{query:<9} {n:>8} {strategy:<10} {latency:>10.3f} {elements:>14.0f}")


if __name__ == "__main__":
    main()
