"""deltalog against the systems a user would pick instead, side by side, in one run.

    python -m bench peers [--budget-s 1200] [--workloads real,powerlaw,skewed,people,closure]
                          [--queries ...] [--tick-sizes 1,10,100,1000,10000]
                          [--targets delta,recursive,binary,handwritten,duckdb,sqlite,kuzu,
                                     pathway,pydbsp] [--edges 100000] [--seed 42]
                          [--no-spark] [--no-curve] [--docs]

Every peer's per-tick change counts must equal deltalog's (`delta`) or the run exits with
status 1. Results: bench/results/peers-<start>.json and .md; `--docs` also writes the charts
to docs/img/ and the tables into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import Results, csv_list, log, positive_ints
from bench.peers.curve import work_curve
from bench.peers.registry import PEER_TARGETS, STRATEGY_TARGETS, versions
from bench.peers.report import report
from bench.peers.suite import WORKLOADS, as_json, run_suite
from bench.queries import SPECS


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--budget-s", type=float, default=1200.0,
                        help="time for the measured ticks, shared out as the run goes "
                        "(loads and the work curve come on top; default 1200)")
    parser.add_argument("--workloads", type=csv_list, default=list(WORKLOADS))
    parser.add_argument("--queries", type=csv_list, default=None,
                        help="only these queries (default: each workload's own)")
    parser.add_argument("--tick-sizes", type=positive_ints, default=[1, 10, 100, 1000, 10000])
    parser.add_argument("--targets", type=csv_list,
                        default=[*STRATEGY_TARGETS, *PEER_TARGETS])
    parser.add_argument("--edges", type=int, default=100_000,
                        help="edges of the generated power-law graph (default 100,000)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-spark", action="store_true",
                        help="skip the Spark executor (real graph, triangle)")
    parser.add_argument("--spark-master", default="local[2]")
    parser.add_argument("--no-curve", action="store_true", help="skip the hub work curve")
    parser.add_argument("--curve-scale", type=float, default=1.0,
                        help="drop hubs above this fraction of the largest (smoke runs)")
    parser.add_argument("--docs", action="store_true",
                        help="write charts to docs/img and tables into docs/benchmarks.md")
    args = parser.parse_args(argv)
    for name, known in (("workloads", WORKLOADS), ("targets", [*STRATEGY_TARGETS,
                                                              *PEER_TARGETS])):
        unknown = set(getattr(args, name)) - set(known)
        if unknown:
            parser.error(f"unknown {name} {sorted(unknown)}; choose from {list(known)}")
    if args.queries and set(args.queries) - set(SPECS):
        parser.error(f"unknown queries; choose from {list(SPECS)}")
    return args


def run(args: argparse.Namespace) -> Path:
    """The whole run; returns the JSON path."""
    output, clock = Results("peers", args), time.monotonic()
    built, runs = run_suite(args.workloads, args.targets, args.queries, args.tick_sizes,
                            args.budget_s, args.edges, args.seed, not args.no_spark,
                            args.spark_master)
    payload: dict[str, Any] = {
        "versions": versions(),
        **as_json(built, runs),
    }
    if not args.no_curve:
        payload["curve"] = work_curve(scale=args.curve_scale)
    payload["elapsed_s"] = time.monotonic() - clock
    path = output.write(payload)
    log(f"report: {report(path, args.docs)}")
    return path
