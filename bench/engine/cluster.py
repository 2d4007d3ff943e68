"""The triangle bootstrap on a Spark standalone cluster of one and of two workers, against
the embedded masters local[1] and local[2].

    python -m bench cluster [--edges 100000 1000000] [--repeat N] [--worker-memory 1g]
                            [--seed S]

Each graph is a seeded power-law graph (one datom `[a :g/to b]` per edge). A cluster is a
real master and workers of one core each on 127.0.0.1, started from the pip PySpark
(`workers.executors.spark.standalone`), fresh for each backend. Every measurement is
`python -m bench bootstrap --one spark --master M` in its own process — the same timing of
the `register` call alone (loading and the copy into Spark not timed) — so this benchmark
depends on nothing but `executor=spark` and the master URL. Seconds are the median of
`--repeat` runs; all backends must find the same triangles. The issue's targets: two
workers ≥ 1.6× one worker, local[2] ≥ 1.6× local[1]. Results go to
bench/results/cluster-<start>.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.engine.bootstrap import Backend, check, graph, run_child
from bench.harness import Results, log, markdown_table
from workers.executors.spark.standalone import DRIVER_ENV, StandaloneCluster

LOCAL_MASTERS = ("local[1]", "local[2]")
CLUSTER_WORKERS = (1, 2)


def label(workers: int) -> str:
    return f"cluster {workers}x1"


@contextmanager
def cluster_master(workers: int, memory: str) -> Iterator[str]:
    """The master URL of a fresh cluster of ``workers`` workers, stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="deltalog-spark-") as root, \
            StandaloneCluster(Path(root), workers=workers, cores=1, memory=memory) as cluster:
        yield cluster.master_url


def measure(spec: str, master: str, name: str, repeat: int, seed: int) -> dict[str, Any]:
    """``repeat`` runs of one backend: the median bootstrap and every run's numbers."""
    runs = []
    for attempt in range(repeat):
        log(f"{spec}: {name} run {attempt + 1}/{repeat}")
        runs.append(run_child(spec, Backend("spark", master), seed) | {"backend": name})
        log(f"{spec}: {name}: {runs[-1]['bootstrap_s']:.2f} s")  # kept if the run is cut short
    median = statistics.median(r["bootstrap_s"] for r in runs)
    return {"backend": name, "edges": runs[0]["edges"], "rows": runs[0]["rows"],
            "checksum": runs[0]["checksum"], "bootstrap_s": median, "runs": runs}


def speedup(results: dict[str, dict[str, Any]], slow: str, fast: str) -> str:
    return f"{results[slow]['bootstrap_s'] / results[fast]['bootstrap_s']:.2f}x"


def table(runs: dict[str, dict[str, dict[str, Any]]], names: list[str]) -> str:
    rows = []
    for results in runs.values():
        first = next(iter(results.values()))
        rows.append([f"{first['edges']:,}", f"{first['rows']:,}",
                     *(f"{results[n]['bootstrap_s']:,.2f}" for n in names),
                     speedup(results, "local[1]", "local[2]"),
                     speedup(results, label(1), label(2))])
    headers = ["edges", "triangles", *(f"{n} s" for n in names),
               "local[2] vs [1]", "2 workers vs 1"]
    return markdown_table(headers, rows)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    parser.add_argument("--edges", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="sizes of the power-law graphs (default 100000 1000000)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per backend and size, the median reported (default 1)")
    parser.add_argument("--worker-memory", default="1g",
                        help="memory of each cluster worker, all of it its executor's heap "
                        "(default 1g)")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.edges) or args.repeat < 1:
        parser.error("--edges and --repeat must be positive")
    return args


def run(args: argparse.Namespace) -> None:
    """Every backend on every graph; print the table, write JSON."""
    output = Results("cluster", args)
    load_before = os.getloadavg()[0]  # the machine is shared: say how busy it was
    # The measuring processes are the clusters' drivers; an executor takes its worker's all.
    os.environ.update({**DRIVER_ENV, "SPARK_EXECUTOR_MEMORY": args.worker_memory})
    specs = [str(n) for n in args.edges]
    for spec in specs:  # generate and cache up front: the measuring processes only read
        edges, name = graph(spec, args.seed)
        print(f"graph {spec}: {name}: {len(edges):,} edges")
    runs: dict[str, dict[str, dict[str, Any]]] = {spec: {} for spec in specs}
    for master in LOCAL_MASTERS:
        for spec in specs:
            runs[spec][master] = measure(spec, master, master, args.repeat, args.seed)
    for workers in CLUSTER_WORKERS:
        with cluster_master(workers, args.worker_memory) as url:
            for spec in specs:
                runs[spec][label(workers)] = measure(spec, url, label(workers), args.repeat,
                                                     args.seed)
    for spec, results in runs.items():
        check(spec, list(results.values()))
    names = [*LOCAL_MASTERS, *map(label, CLUSTER_WORKERS)]
    load = (load_before, os.getloadavg()[0])
    print(f"seconds of the triangle's register call, median of {args.repeat}; a cluster "
          f"worker is 1 core and {args.worker_memory}; 1-min load average {load[0]:.1f} "
          f"before, {load[1]:.1f} after ({os.cpu_count()} cores)")
    print()
    print(table(runs, names))
    output.write({"runs": runs, "load_average": load})
