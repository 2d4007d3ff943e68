"""deltalog against the systems a user would pick instead, side by side, in one run.

    python -m bench.peers [--budget-s 1200] [--workloads real,powerlaw,skewed,people,closure]
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
import sys
import time
from pathlib import Path
from typing import Any

from bench.engine.latency import csv_list, log, write_results
from bench.peers.base import MismatchError
from bench.peers.curve import work_curve
from bench.peers.registry import PEER_TARGETS, STRATEGY_TARGETS, versions
from bench.peers.report import report
from bench.peers.suite import WORKLOADS, as_json, run_suite
from bench.queries import SPECS


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.peers",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=1200.0,
                        help="time for the measured ticks, shared out as the run goes "
                        "(loads and the work curve come on top; default 1200)")
    parser.add_argument("--workloads", type=csv_list, default=list(WORKLOADS))
    parser.add_argument("--queries", type=csv_list, default=None,
                        help="only these queries (default: each workload's own)")
    parser.add_argument("--tick-sizes", type=csv_list, default=["1", "10", "100", "1000", "10000"])
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
    args.tick_sizes = [int(s) for s in args.tick_sizes]
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
    started, clock = time.localtime(), time.monotonic()
    built, runs = run_suite(args.workloads, args.targets, args.queries, args.tick_sizes,
                            args.budget_s, args.edges, args.seed, not args.no_spark,
                            args.spark_master)
    payload: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z", started),
        "args": vars(args),
        "versions": versions(),
        **as_json(built, runs),
    }
    if not args.no_curve:
        payload["curve"] = work_curve(scale=args.curve_scale)
    payload["elapsed_s"] = time.monotonic() - clock
    path = write_results(payload, started, "peers")
    log(f"results: {path}")
    log(f"report: {report(path, args.docs)}")
    return path


def main(argv: list[str] | None = None) -> None:
    """Run; a change-count disagreement exits with status 1."""
    try:
        run(parse_args(argv))
    except MismatchError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
