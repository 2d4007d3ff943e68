"""Single-edge triangle ticks: the engine's and the hand-written maintainer's thread CPU time.

    python -m bench single [--graph pegase] [--ticks 1000] [--rounds 3] [--count] [--profile KEY]

The triangle is registered, the graph loaded in transactions of 1,000 edges, then each tick
retracts a random present edge and the next adds it back (issue 15's single-edge target:
no slower than the dict tries' 0.028 ms on PEGASE).  Each round times ``--ticks`` such
pairs with ``time.thread_time`` around every ``transact`` and prints the median; the
hand-written maintainer (:mod:`bench.engine.handwritten`) runs the same ticks, and every
tick's changes must equal the engine's.  ``--count`` adds the median bytecodes and Python
calls per tick, which load does not move; ``--profile`` a cProfile of one more round.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any

from bench.data import Edge, load_graph
from bench.engine.handwritten import TriangleMaintainer
from bench.engine.tx import ADD, RETRACT, TO
from bench.harness import MismatchError
from bench.queries import QUERIES
from workers.engine import Engine

Changes = Mapping[Any, int]  # a row (a tuple) -> its weight
LOAD_CHUNK = 1000
WARM_UP = 200


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--graph", choices=("pegase", "powerlaw"), default="pegase")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ticks", type=int, default=1000,
                        help="retract/re-add pairs per round (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, a median each")
    parser.add_argument("--profile", choices=("tottime", "cumtime", "ncalls"),
                        help="a cProfile of one more round, sorted by this")
    parser.add_argument("--count", action="store_true",
                        help="also the median bytecodes and Python calls per tick (traced: "
                             "the same on a busy machine as on a quiet one)")
    return parser.parse_args(argv)


def loaded(edges: list[Edge]) -> tuple[Engine, TriangleMaintainer]:
    """An engine with the triangle registered and a maintainer, both holding ``edges``."""
    engine, maintainer = Engine(), TriangleMaintainer()
    engine.register("triangle", QUERIES["triangle"])
    for i in range(0, len(edges), LOAD_CHUNK):
        chunk = edges[i:i + LOAD_CHUNK]
        engine.transact([[ADD, a, TO, b] for a, b in chunk])
        maintainer.apply(chunk, [])
    engine.db.state.settle()
    return engine, maintainer


def timed_ticks(step: Callable[[str, Edge], Changes],
                picks: list[Edge]) -> tuple[list[float], list[Changes]]:
    """Thread CPU seconds of each tick (every picked edge retracted, then added back), and
    the changes each tick returned."""
    spent, changes = [], []
    for edge in picks:
        for op in (RETRACT, ADD):
            started = time.thread_time()
            changed = step(op, edge)
            spent.append(time.thread_time() - started)
            changes.append(changed)
    return spent, changes


def traced(step: Callable[[str, Edge], Changes], picks: list[Edge]) -> tuple[float, float]:
    """Median bytecodes executed and Python calls made per tick (``sys.settrace``): a proxy
    for a tick's interpreter work that a busy machine does not move."""
    counts = [0, 0]

    def opcode(frame: FrameType, event: str, arg: Any) -> Any:
        counts[0] += event == "opcode"
        return opcode

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        counts[1] += 1
        frame.f_trace_opcodes = True
        return opcode

    per_tick = []
    for edge in picks:
        for op in (RETRACT, ADD):
            counts[:] = [0, 0]
            sys.settrace(call)
            step(op, edge)
            sys.settrace(None)
            per_tick.append(tuple(counts))
    return (statistics.median(c[0] for c in per_tick),
            statistics.median(c[1] for c in per_tick))


def run(args: argparse.Namespace) -> None:
    """Time the rounds on both sides, check they agree, print the medians."""
    edges, label = load_graph(args.graph, args.seed)
    engine, maintainer = loaded(edges)
    rng = random.Random(args.seed)

    def engine_tick(op: str, edge: Edge) -> Changes:
        return engine.transact([[op, edge[0], TO, edge[1]]]).get("triangle", {})

    def maintainer_tick(op: str, edge: Edge) -> Changes:
        return maintainer.apply([], [edge]) if op == RETRACT else maintainer.apply([edge], [])

    print(f"{label}: {len(edges):,} edges, triangle registered; thread CPU per tick")
    for round_ in range(args.rounds + 1):  # round 0 warms up
        picks = [edges[rng.randrange(len(edges))] for _ in range(args.ticks if round_ else
                                                                   WARM_UP)]
        ours, got = timed_ticks(engine_tick, picks)
        theirs, want = timed_ticks(maintainer_tick, picks)
        for i, (engine_changes, maintainer_changes) in enumerate(zip(got, want, strict=True)):
            if dict(engine_changes) != maintainer_changes:
                raise MismatchError(f"round {round_}, tick {i}: engine {dict(engine_changes)}, "
                                    f"hand-written {maintainer_changes}")
        if round_:
            engine_ms, maintainer_ms = (1000 * statistics.median(t) for t in (ours, theirs))
            print(f"round {round_}: median engine {engine_ms:.4f} ms, hand-written "
                  f"{maintainer_ms:.4f} ms ({engine_ms / maintainer_ms:.1f}x)")
    if args.count:
        bytecodes, calls = traced(engine_tick, [edges[rng.randrange(len(edges))]
                                                for _ in range(args.ticks)])
        print(f"per tick, median: {bytecodes:,.0f} bytecodes, {calls:,.0f} Python calls")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        timed_ticks(engine_tick, [edges[rng.randrange(len(edges))] for _ in range(args.ticks)])
        profile.disable()
        pstats.Stats(profile).sort_stats(args.profile).print_stats(30)
