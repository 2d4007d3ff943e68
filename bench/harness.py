"""What every benchmark shares: running one from the command line, its results file, timing,
percentiles, tables, flag parsers, progress logging and the error that invalidates a run.

Standard library only: the peers' worker processes import the bench modules under whatever
Python a peer needs.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

RESULTS_DIR = Path(__file__).resolve().parent / "results"
P = TypeVar("P")
R = TypeVar("R")


class BenchError(RuntimeError):
    """The run cannot go on (a worker died, a measurement failed): `python -m bench` prints
    the message and exits with status 1, as the message says all there is to say."""


class MismatchError(BenchError):
    """Two systems that must agree (the engine and the hand-written maintainer, two executors,
    a peer and the reference) returned different results: the run's numbers are invalid."""


class Benchmark(Protocol):
    """A benchmark module, as `python -m bench NAME` runs it."""

    def parse_args(self, parser: argparse.ArgumentParser,
                   argv: Sequence[str]) -> argparse.Namespace:
        """Add the benchmark's flags to `parser`, parse `argv` and check the values."""
        ...

    def run(self, args: argparse.Namespace) -> object:
        """Run the benchmark, print its tables and write its results."""
        ...


def first_line(doc: str | None) -> str:
    """A module's one-line description: the first line of its docstring."""
    return (doc or "").strip().split("\n", 1)[0]


def main(name: str, module: str, argv: Sequence[str]) -> None:
    """Run benchmark `name` (defined in `module`) on `argv`; a BenchError exits with status 1."""
    benchmark = cast(Benchmark, importlib.import_module(module))
    parser = argparse.ArgumentParser(prog=f"python -m bench {name}",
                                     description=first_line(benchmark.__doc__))
    try:
        benchmark.run(benchmark.parse_args(parser, argv))
    except BenchError as exc:
        sys.exit(f"error: {exc}")


# --- results ------------------------------------------------------------------------------


@dataclass
class Results:
    """A run's results file, bench/results/<name>-<start time>.json (the folder is
    git-ignored), headed by the run's start time and its arguments."""

    name: str
    args: argparse.Namespace
    started: time.struct_time = field(default_factory=time.localtime)

    def write(self, payload: dict[str, Any]) -> Path:
        """Write the header and `payload` (paths as text) and print where."""
        RESULTS_DIR.mkdir(exist_ok=True)
        path = RESULTS_DIR / f"{self.name}-{time.strftime('%Y%m%dT%H%M%S', self.started)}.json"
        header = {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z", self.started),
                  "args": vars(self.args)}
        path.write_text(json.dumps(header | payload, indent=2, default=str) + "\n")
        print(f"results: {path}")
        return path


# --- measurements in a fresh interpreter ------------------------------------------------------


def run_json(cmd: Sequence[str]) -> dict[str, Any]:
    """Run one measurement in a subprocess and parse its JSON (stdout's last line); a
    failure is a BenchError with the end of its stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-20:])
        raise BenchError(f"{' '.join(cmd)} failed (status {proc.returncode}):\n{tail}")
    return dict(json.loads(lines[-1]))


# --- timing ---------------------------------------------------------------------------------


def timed(call: Callable[[], R], clock: Callable[[], int] = time.perf_counter_ns,
          ) -> tuple[int, R]:
    """One call's latency in ns by ``clock`` (garbage collected first: less noise) and its
    result."""
    gc.collect()
    started = clock()
    result = call()
    return clock() - started, result


def time_calls(apply: Callable[[P], R], payloads: Sequence[P]) -> tuple[list[int], list[R]]:
    """Call `apply` on each payload back to back; per-call latencies (ns) and the results."""
    latencies, results = [], []
    for payload in payloads:
        start = time.perf_counter_ns()
        result = apply(payload)
        latencies.append(time.perf_counter_ns() - start)
        results.append(result)
    return latencies, results


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (a value that was measured, never an interpolation)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# --- reporting ------------------------------------------------------------------------------


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A right-aligned markdown table, padded to its columns' widths: it reads in a terminal
    and pastes into docs as is."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows,
                                                                        strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def sample(changes: Mapping[Any, int], limit: int = 5) -> str:
    """A short printable excerpt of a change set."""
    items = sorted(changes.items(), key=repr)
    more = f" ... (+{len(items) - limit})" if len(items) > limit else ""
    return f"{dict(items[:limit])}{more}"


def mismatch(message: str, got: Mapping[Any, int], want: Mapping[Any, int],
             names: tuple[str, str]) -> MismatchError:
    """The error for two change sets that should be equal, with an excerpt of the rows each
    has that the other has not (`names`: what to call the two sides)."""
    got_only = {row: n for row, n in got.items() if want.get(row) != n}
    want_only = {row: n for row, n in want.items() if got.get(row) != n}
    return MismatchError(f"{message}; {names[0]}-only {sample(got_only)}, "
                         f"{names[1]}-only {sample(want_only)}")


def log(message: str) -> None:
    """Progress to stderr (stdout has the tables)."""
    print(message, file=sys.stderr, flush=True)


# --- flags ----------------------------------------------------------------------------------


def csv_list(text: str) -> list[str]:
    """Split a comma-separated flag value."""
    return [item.strip() for item in text.split(",") if item.strip()]


def positive_ints(text: str) -> list[int]:
    """A comma-separated list of positive integers."""
    try:
        values = [int(item) for item in csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not integers: {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"not positive: {text!r}")
    return values
