"""Where the vectorised executor starts to pay: ticks of each size, row at a time and a frame
at a time, on the same engine and the same ticks.

    python -m bench vector [--edges 1000000] [--sizes 16,64,256,1024] [--ticks 20]
                           [--queries triangle] [--bootstrap] [--graph bounded|powerlaw]
                           [--seed S]

The bounded-degree graph of `python -m bench scale` (or with `--graph powerlaw` the
power-law graph of `python -m bench load`) is loaded with the queries live; then,
for each size, `--ticks` ticks (the same edges retracted, then put back) are stepped with
the vectorised executor switched off (`vector_datoms` above any tick) and forced on (0),
alternating, so both see the same spine.  Reported: the mean milliseconds per tick of each
path and their ratio; `VECTOR_DATOMS` in `workers/executors/dispatch.py` is set where the
ratio crosses 1.  `--bootstrap`: also each query's full evaluation (`Engine.result`) both
ways, on the loaded graph.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from bench.data import powerlaw_graph, powerlaw_path
from bench.engine.scale import bounded_graph, load
from bench.engine.spine import edge_columns
from bench.engine.tx import ADD, RETRACT, TO
from bench.harness import MismatchError, Results, csv_list, log, markdown_table, positive_ints
from bench.queries import QUERIES
from workers.engine import Engine

NEVER = 10**12


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--edges", type=int, default=1_000_000, help="default 1000000")
    parser.add_argument("--sizes", type=positive_ints, default=[16, 64, 256, 1024],
                        help="changed edges per tick (default 16,64,256,1024)")
    parser.add_argument("--ticks", type=int, default=20, help="ticks per size and path")
    parser.add_argument("--queries", type=csv_list, default=["triangle"],
                        help="live queries (default triangle)")
    parser.add_argument("--bootstrap", action="store_true",
                        help="also time each query's full evaluation both ways")
    parser.add_argument("--graph", choices=("bounded", "powerlaw"), default="bounded",
                        help="the bounded-degree graph of `bench scale`, or the power-law "
                             "graph of `bench load` (default bounded)")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Load, then time both paths per tick size; print the table, write the results."""
    output = Results("vector", args)
    if args.graph == "powerlaw":
        if not powerlaw_path(args.edges, args.seed).exists():
            powerlaw_graph(args.edges, args.seed)
        us, vs = edge_columns(args.edges, args.seed)
    else:
        us, vs = bounded_graph(args.edges, 10, args.seed)
    engine = Engine()
    for name in args.queries:
        engine.register(name, QUERIES[name])
    log(f"loading {args.edges:,} edges")
    load(engine, us, vs, 100_000, "columns")
    rng = random.Random(args.seed)
    rows: list[list[str]] = []
    results: dict[Any, Any] = {}
    for size in args.sizes:
        spent: dict[str, list[float]] = {"row": [], "vector": []}
        for _ in range(args.ticks // 2):
            edges = [(int(us[i]), int(vs[i])) for i in rng.sample(range(len(us)), size)]
            for path, threshold in (("row", NEVER), ("vector", 0)):
                engine.dispatch.vector_datoms = threshold
                for op in (RETRACT, ADD):
                    started = time.perf_counter()
                    engine.transact_many([([[op, u, TO, v] for u, v in edges], 0)])
                    spent[path].append(time.perf_counter() - started)
        row, vector = (statistics.fmean(spent[p]) * 1e3 for p in ("row", "vector"))
        results[size] = {"row_ms": row, "vector_ms": vector}
        rows.append([f"{size:,}", f"{row:.2f}", f"{vector:.2f}", f"{row / vector:.2f}"])
    print(markdown_table(["changed edges", "row at a time (ms)", "vectorised (ms)",
                          "row / vectorised"], rows))
    if args.bootstrap:
        print()
        print(markdown_table(["query", "rows", "row at a time (s)", "vectorised (s)"],
                             [bootstrap(engine, name, results) for name in args.queries]))
    output.write({"results": results})


def bootstrap(engine: Engine, name: str, results: dict[Any, Any]) -> list[str]:
    """Time ``Engine.result(name)`` row at a time and vectorised; they must agree."""
    answers, seconds = [], []
    for threshold in (NEVER, 0):
        engine.dispatch.vector_datoms = threshold
        started = time.perf_counter()
        answers.append(engine.result(name))
        seconds.append(time.perf_counter() - started)
    if answers[0] != answers[1]:
        raise MismatchError(f"{name}: the vectorised bootstrap differs from the row path")
    results[f"bootstrap {name}"] = {"row_s": seconds[0], "vector_s": seconds[1]}
    return [name, f"{len(answers[0]):,}", f"{seconds[0]:.2f}", f"{seconds[1]:.2f}"]
