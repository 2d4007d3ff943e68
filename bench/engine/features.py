"""What a clause beyond data patterns costs: single-edge ticks of the triangle written flat
(delta terms, stateless) and with a predicate, a function, an ``or``, a ``not`` and an
aggregate (derived relations kept by DRed).

    python -m bench.features [--ticks K] [--seed S]

The PEGASE grid (power-law if it cannot be fetched) is loaded, each query registered alone
on its own engine (bootstrap timed), then the same K seeded single-edge adds and retracts
are applied and each ``engine.transact`` timed.  Results: bench/results/features-<start>.json.
"""

from __future__ import annotations

import argparse
import gc
import random
import time

from bench.engine.latency import load_graph, markdown_table, write_results
from workers.edn import keyword
from workers.engine import Engine

ADD, RETRACT, TO = keyword("db/add"), keyword("db/retract"), keyword("g/to")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.gmtime()
    edges, label = load_graph("pegase", args.seed)
    nodes = sorted({x for edge in edges for x in edge})
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
        times.sort()
        median, p95 = times[len(times) // 2], times[int(len(times) * 0.95)]
        results[name] = {"bootstrap_ms": bootstrap_ms, "median_us": median, "p95_us": p95}
        rows.append([name, f"{bootstrap_ms:.0f}", f"{median:.1f}", f"{p95:.1f}"])
    print(f"{label}, {args.ticks} single-edge ticks")
    print(markdown_table(["query", "bootstrap ms", "tick median µs", "tick p95 µs"], rows))
    path = write_results({"graph": label, "args": vars(args), "queries": QUERIES,
                          "results": results}, started, "features")
    print(f"results: {path}")


if __name__ == "__main__":
    main()
