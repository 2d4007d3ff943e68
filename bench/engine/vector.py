"""Where the vectorised executor starts to pay: ticks of each size, row at a time and a frame
at a time, on the same engine and the same ticks.

    python -m bench vector [--edges 1000000] [--sizes 16,64,256,1024] [--ticks 20]
                           [--queries triangle] [--bootstrap] [--graph bounded|powerlaw]
                           [--threads N] [--seed S]

The bounded-degree graph of `python -m bench scale` (or with `--graph powerlaw` the
power-law graph of `python -m bench load`) is loaded with the queries live; then,
for each size, `--ticks` ticks (the same edges retracted, then put back) are stepped with
the vectorised executor switched off (`vector_datoms` above any tick) and forced on (0),
alternating, so both see the same spine.  Reported: the mean milliseconds per tick of each
path and their ratio; `VECTOR_DATOMS` in `workers/executors/dispatch.py` is set where the
ratio crosses 1.  `--threads N` (N > 1) adds a third path: the vectorised executor with every
tick cut over N threads (`workers/executors/threads.py`), whose ratio to one thread sets
`PARALLEL_ELEMENTS` and `PARALLEL_DATOMS` in `workers/executors/vectorised.py`.
`--bootstrap`: also each query's full evaluation (`Engine.result`) each way, on the loaded
graph.
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
from workers.executors.threads import Threads

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
    parser.add_argument("--threads", type=int, default=1,
                        help="also the vectorised executor on this many threads (default 1: "
                             "not)")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    return parser.parse_args(argv)


def paths(threads: int) -> dict[str, tuple[int, int]]:
    """Each path's ``vector_datoms`` and threads."""
    chosen = {"row": (NEVER, 1), "vector": (0, 1)}
    if threads > 1:
        chosen[f"{threads} threads"] = (0, threads)
    return chosen


def choose(engine: Engine, path: tuple[int, int]) -> None:
    """Set the engine's executor to ``path``: every step vectorised on N threads from 0."""
    engine.dispatch.vector_datoms, threads = path
    engine.dispatch.vector.threads = Threads(threads)
    engine.dispatch.vector.parallel_datoms = engine.dispatch.vector.parallel_elements = 0


def run(args: argparse.Namespace) -> None:
    """Load, then time both paths per tick size; print the table, write the results."""
    output = Results("vector", args)
    if args.graph == "powerlaw":
        if not powerlaw_path(args.edges, args.seed).exists():
            powerlaw_graph(args.edges, args.seed)
        us, vs = edge_columns(args.edges, args.seed)
    else:
        us, vs = bounded_graph(args.edges, 10, args.seed)
    engine, chosen = Engine(), paths(args.threads)
    for name in args.queries:
        engine.register(name, QUERIES[name])
    log(f"loading {args.edges:,} edges")
    load(engine, us, vs, 100_000, "columns")
    rng = random.Random(args.seed)
    rows: list[list[str]] = []
    results: dict[Any, Any] = {}
    for size in args.sizes:
        spent: dict[str, list[float]] = {name: [] for name in chosen}
        for _ in range(args.ticks // 2):
            edges = [(int(us[i]), int(vs[i])) for i in rng.sample(range(len(us)), size)]
            for name, path in chosen.items():
                choose(engine, path)
                for op in (RETRACT, ADD):
                    started = time.perf_counter()
                    engine.transact_many([([[op, u, TO, v] for u, v in edges], 0)])
                    spent[name].append(time.perf_counter() - started)
        ms = {name: statistics.fmean(times) * 1e3 for name, times in spent.items()}
        results[size] = {f"{name}_ms": value for name, value in ms.items()}
        rows.append([f"{size:,}", *(f"{value:.2f}" for value in ms.values()),
                     f"{ms['row'] / ms['vector']:.2f}",
                     *(f"{ms['vector'] / value:.2f}" for value in list(ms.values())[2:])])
    print(markdown_table(["changed edges", *(f"{name} (ms)" for name in chosen),
                          "row / vector", *(f"vector / {name}" for name in list(chosen)[2:])],
                         rows))
    if args.bootstrap:
        print()
        print(markdown_table(["query", "rows", *(f"{name} (s)" for name in chosen)],
                             [bootstrap(engine, name, chosen, results)
                              for name in args.queries]))
    output.write({"results": results})


def bootstrap(engine: Engine, name: str, chosen: dict[str, tuple[int, int]],
              results: dict[Any, Any]) -> list[str]:
    """Time ``Engine.result(name)`` on each path; they must agree."""
    answers, seconds = [], {}
    for path, setting in chosen.items():
        choose(engine, setting)
        started = time.perf_counter()
        answers.append(engine.result(name))
        seconds[path] = time.perf_counter() - started
    if any(answer != answers[0] for answer in answers):
        raise MismatchError(f"{name}: the paths' bootstraps differ")
    results[f"bootstrap {name}"] = {f"{path}_s": value for path, value in seconds.items()}
    return [name, f"{len(answers[0]):,}", *(f"{value:.2f}" for value in seconds.values())]
