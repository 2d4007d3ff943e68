"""Where a single-edge triangle tick spends its time, phase by phase (the engine's steps).

    python -m bench phases [--ticks 3000]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

from bench.data import load_pegase_edges
from bench.engine.tx import ADD, RETRACT, TO
from bench.queries import QUERIES
from workers.arrangements import ArrangementRegistry
from workers.arrangements.delta import TickDelta
from workers.datalog import compile_query
from workers.db import BUILTIN_SCHEMA, normalise, parse_tx
from workers.executors import LocalExecutor
from workers.plan import plan_query

PHASES = ("parse", "normalise", "arrange delta", "step", "apply")


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--ticks", type=int, default=3000,
                        help="single-edge ticks, half retracts (default 3000)")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Step the triangle's plan by hand over the grid, timing each phase; print the means."""
    edges = load_pegase_edges()
    db = ArrangementRegistry()
    executor = LocalExecutor(db)
    db.apply(db.encode({(u, TO, v): 1 for u, v in edges}))
    plan = plan_query(compile_query(QUERIES["triangle"]))
    prepared = executor.prepare(plan)
    totals = dict.fromkeys(PHASES, 0.0)
    rng = random.Random(1)
    for _ in range(args.ticks // 2):
        u, v = rng.choice(edges)
        for op in (RETRACT, ADD):
            t0 = time.perf_counter()
            ops = parse_tx([[op, u, TO, v]])
            t1 = time.perf_counter()
            delta = normalise(ops, db, BUILTIN_SCHEMA, tx=1).delta
            t2 = time.perf_counter()
            encoded = db.encode(delta)
            tick = TickDelta(encoded)
            executor.input.feed(tick)  # arranged here, as the step would
            t3 = time.perf_counter()
            executor.step(prepared, tick)
            t4 = time.perf_counter()
            db.apply(encoded)
            t5 = time.perf_counter()
            for phase, spent in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4),
                                    strict=True):
                totals[phase] += spent
    ticks = 2 * (args.ticks // 2)
    for phase, spent in totals.items():
        print(f"{phase:<14} {spent / ticks * 1e6:8.2f} us per tick")
    print(f"{'total':<14} {sum(totals.values()) / ticks * 1e6:8.2f} us per tick")
