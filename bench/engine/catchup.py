"""Catch-up ticks in one process: step 1 (normalising) and the rest, batch by batch.

    python -m bench catchup [--batches 4] [--batch-tx 50000] [--queries 12]
                            [--bulk-datoms N] [--seed S]

The replay benchmark's transactions (`workers.testing.edge_transactions`, 50 nodes) and
queries (`bench.service.fleet.query_set`) in one `Engine`, without Kafka, so the two halves
of a catch-up tick (`Engine.transact_many`) are timed apart, in thread CPU seconds: step 1,
normalising the batch (`_normalise_many`), and steps 2-6, stepping the queries and applying
the delta (`_tick`). `--bulk-datoms 1000000000` takes the per-transaction path. The first
batch starts from an empty database; compare the later ones.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Sequence

from bench.harness import Results, markdown_table
from bench.service.fleet import query_set
from workers.engine import BULK_DATOMS, Engine
from workers.testing import edge_transactions

NODES = 50  # the replay's graph


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--batches", type=int, default=4, help="catch-up ticks (default 4)")
    parser.add_argument("--batch-tx", type=int, default=50_000,
                        help="transactions a tick (default 50,000: tick_max_tx)")
    parser.add_argument("--queries", type=int, default=12, help="queries (default 12)")
    parser.add_argument("--bulk-datoms", type=int, default=BULK_DATOMS,
                        help=f"the engine's bulk_datoms (default {BULK_DATOMS})")
    parser.add_argument("--seed", type=int, default=1, help="stream seed (default 1)")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Register the queries, then normalise and step each batch; print the seconds."""
    engine = Engine(bulk_datoms=args.bulk_datoms)
    for name, text in query_set(args.queries).items():
        engine.register(name, text)
    stream = edge_transactions(args.seed, NODES)
    rows = []
    for number in range(args.batches):
        first = number * args.batch_tx
        batch = list(zip(itertools.islice(stream, args.batch_tx),
                         itertools.count(first), strict=False))
        started = time.thread_time()
        delta, refused = engine._normalise_many(batch)
        normalised = time.thread_time()
        engine._tick(delta)
        stepped = time.thread_time()
        rows.append({"batch": number, "normalise_s": normalised - started,
                     "step_s": stepped - normalised, "delta": len(delta),
                     "refused": len(refused)})
    print(markdown_table(
        ["batch", "normalise s", "µs/tx", "step s", "delta datoms", "refused"],
        [[str(row["batch"]), f"{row['normalise_s']:.3f}",
          f"{row['normalise_s'] / args.batch_tx * 1e6:.1f}", f"{row['step_s']:.3f}",
          str(row["delta"]), str(row["refused"])] for row in rows]))
    Results("catchup", args).write({"batches": rows})
