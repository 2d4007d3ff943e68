"""A worker's tick without a broker: `bench pipeline`'s transactions applied in ticks.

The worker's compute of a tick, timed apart from Kafka: the PEGASE grid loaded, the
triangle query registered, then ticks of `--size` single-edge transactions
(`pipeline.edge_stream`: additions and retractions) through `BatchApplier.apply` — Avro
decode, normalise, the vectorised step, the delta applied — and their change rows encoded
(`RowRecords.change_and_view`, as `ResultSink` does before it produces).  The table gives
the median milliseconds of the thread's CPU a tick (the machine's other work counts less
than in elapsed time); the step alone is `Dispatch.steps`.

    python -m bench tick [--size 230] [--ticks 300]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.data import load_pegase_edges
from bench.harness import markdown_table
from bench.service.pipeline import ADD, TO, TRIANGLE, edge_stream
from workers.config import WorkerConfig
from workers.kafka.row_records import RowRecords
from workers.kafka.source import TxRecord
from workers.runtime.batch import BatchApplier
from workers.runtime.dead_letters import DeadLetters
from workers.runtime.engine_role import EngineRole
from workers.runtime.phases import TickPhases
from workers.runtime.ports import Source
from workers.runtime.tick_writer import TickOutput

WARM_UP_TICKS = 20


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--size", type=int, default=230,
                        help="transactions a tick (~230: a half-load tick of bench pipeline)")
    parser.add_argument("--ticks", type=int, default=300)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Apply the ticks; print the median thread CPU a tick of each part."""
    config = WorkerConfig()
    role = EngineRole(config)
    engine = role.engine
    edges = load_pegase_edges()
    engine.transact([[ADD, u, TO, v] for u, v in edges])
    engine.register("tri", TRIANGLE)
    applier = BatchApplier(config, role, DeadLetters(config, "tx", _no_log), TickPhases(None))
    records = RowRecords()
    stream = edge_stream(edges, args.size * (args.ticks + WARM_UP_TICKS), seed=1)
    stepping = _cpu_of(engine.dispatch, "steps")
    times: dict[str, list[float]] = {"apply": [], "of which the step": [], "encode": []}
    rows = 0
    for tick in range(args.ticks + WARM_UP_TICKS):
        first = engine.tx + 1
        values = stream[tick * args.size:(tick + 1) * args.size]
        batch = [TxRecord(first + i, value) for i, value in enumerate(values)]
        output = TickOutput()
        stepping.clear()
        started = time.thread_time()
        applier.apply(batch, output)
        applied = time.thread_time()
        records.begin()
        for query, changes in output.changes.items():
            for row, weight in changes.items():
                records.change_and_view(query, 1, row, weight, max(weight, 0), first,
                                        batch[-1].offset)
        if tick >= WARM_UP_TICKS:
            times["apply"].append(applied - started)
            times["of which the step"].append(sum(stepping))
            times["encode"].append(time.thread_time() - applied)
            rows += sum(map(len, output.changes.values()))
    print(f"ticks of {args.size} transactions on PEGASE ({len(edges)} edges), the triangle "
        f"query: {rows / args.ticks:.0f} changed rows a tick")
    print(markdown_table(["part", "thread CPU a tick, median (ms)"],
                         [[part, f"{statistics.median(seconds) * 1e3:.2f}"]
                          for part, seconds in times.items()]))


def _no_log(position: int) -> Source:
    """The transaction log's reader, which a tick of valid transactions never opens."""
    raise AssertionError("a tick without a broker reads no log")


def _cpu_of(target: Any, method: str) -> list[float]:
    """Wrap ``target.method`` to record the thread CPU of each call into the list returned."""
    calls: list[float] = []
    original: Callable[..., Any] = getattr(target, method)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            calls.append(time.thread_time() - started)

    setattr(target, method, timed)
    return calls
