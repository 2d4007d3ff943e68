"""The one entry point of the benchmarks: `python -m bench NAME [args...]` runs one,
`python -m bench` lists them (`python -m bench NAME --help` for a benchmark's flags)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.harness import first_line, main

# name -> module; each module has `parse_args(parser, argv)` and `run(args)`
BENCHMARKS = {
    "latency": "bench.engine.latency",
    "single": "bench.engine.single",
    "bootstrap": "bench.engine.bootstrap",
    "cluster": "bench.engine.cluster",
    "closure": "bench.engine.closure",
    "crossover": "bench.engine.crossover",
    "features": "bench.engine.features",
    "phases": "bench.engine.phases",
    "catchup": "bench.engine.catchup",
    "skew": "bench.engine.skew",
    "handwritten": "bench.engine.handwritten",
    "spine": "bench.engine.spine",
    "load": "bench.engine.load",
    "model": "bench.engine.model",
    "scale": "bench.engine.scale",
    "vector": "bench.engine.vector",
    "livejournal": "bench.engine.livejournal",
    "fleet": "bench.service.fleet",
    "replay": "bench.service.replay",
    "pipeline": "bench.service.pipeline",
    "codec": "bench.service.codec",
    "tick": "bench.service.tick",
    "views": "bench.service.views",
    "pgsink": "bench.service.pgsink",
    "memory": "bench.service.memory",
    "tombstones": "bench.service.tombstones",
    "sweep": "bench.service.sweep",
    "peers": "bench.peers.compare",
    "peers-report": "bench.peers.report",
    "data": "bench.data",
}


def description(module: str) -> str:
    """A module's first docstring line, read from its source: listing imports no benchmark
    (nor Spark, Kafka or the peers' packages)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    return first_line(ast.get_docstring(ast.parse(Path(spec.origin).read_text())))


def listing() -> str:
    """Every benchmark with its one-line description."""
    width = max(map(len, BENCHMARKS))
    lines = [f"  {name:<{width}}  {description(module)}" for name, module in BENCHMARKS.items()]
    return "\n".join(["usage: python -m bench NAME [args...]", "", *lines])


def dispatch(argv: Sequence[str]) -> None:
    """Run the benchmark `argv` names, or list them all."""
    if not argv or argv[0] in ("-h", "--help"):
        print(listing())
        return
    name, *rest = argv
    if name not in BENCHMARKS:
        sys.exit(f"unknown benchmark {name!r}\n{listing()}")
    main(name, BENCHMARKS[name], rest)


if __name__ == "__main__":
    dispatch(sys.argv[1:])
