"""What a clause beyond data patterns costs, on single-edge ticks of the triangle query.

The triangle written flat (delta terms, stateless) and with a predicate, a function, an
``or``, a ``not`` and an aggregate (derived relations kept by DRed).

    python -m bench features [--ticks K] [--seed S]

The PEGASE grid (power-law if it cannot be fetched) is loaded, each query registered alone
on its own engine (bootstrap timed), then the same K seeded single-edge adds and retracts
are applied and each ``engine.transact`` timed.  Results: bench/results/features-<start>.json.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
from collections.abc import Sequence

from bench.data import endpoints, load_graph
from bench.engine.tx import ADD, RETRACT, TO
from bench.harness import Results, markdown_table, percentile
from workers.engine import Engine

TRIANGLE = "[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]"
QUERIES = {
    "triangle (flat)": f"[:find ?a ?b ?c :where {TRIANGLE}]",
    "+ predicate": f"[:find ?a ?b ?c :where {TRIANGLE} [(< ?a ?b)]]",
    "+ function": f"[:find ?a ?b ?s :where {TRIANGLE} [(+ ?a ?c) ?s]]",
    "or": "[:find ?a ?b ?c :where [?a :g/to ?b] [?a :g/to ?c] "
          "(or [?b :g/to ?c] [?c :g/to ?b])]",
    "+ not": f"[:find ?a ?b ?c :where {TRIANGLE} (not [?c :g/to ?a])]",
    "count per vertex": f"[:find ?a (count ?c) :where {TRIANGLE}]",
}


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--ticks", type=int, default=2000, help="single-edge ticks (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="tick/graph seed (default 1)")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Time every query's bootstrap and ticks, print the table and write the JSON."""
    output = Results("features", args)
    edges, label = load_graph("pegase", args.seed)
    nodes = sorted(endpoints(edges))
    rng = random.Random(args.seed)
    ticks = [[[rng.choice((ADD, RETRACT)), rng.choice(nodes), TO, rng.choice(nodes)]]
             for _ in range(args.ticks)]
    rows, results = [], {}
    for name, query in QUERIES.items():
        engine = Engine()
        engine.transact([[ADD, a, TO, b] for a, b in edges])
        began = time.perf_counter()
        engine.register("q", query)
        bootstrap_ms = (time.perf_counter() - began) * 1000
        times = []
        gc.collect()
        gc.disable()
        for tx in ticks:
            began = time.perf_counter()
            engine.transact(tx)
            times.append((time.perf_counter() - began) * 1e6)
        gc.enable()
        median, p95 = statistics.median(times), percentile(times, 0.95)
        results[name] = {"bootstrap_ms": bootstrap_ms, "median_us": median, "p95_us": p95}
        rows.append([name, f"{bootstrap_ms:.0f}", f"{median:.1f}", f"{p95:.1f}"])
    print(f"{label}, {args.ticks} single-edge ticks")
    print(markdown_table(["query", "bootstrap ms", "tick median µs", "tick p95 µs"], rows))
    output.write({"graph": label, "queries": QUERIES, "results": results})
