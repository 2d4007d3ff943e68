"""Benchmark graphs: the PEGASE 9241-bus European grid and a seeded power-law fallback.

The PEGASE case ships inside the pandapower wheel as a serialised pandapower net. We fetch
the wheel with pip (no install, no dependencies), read the JSON straight out of the zip and
keep only the directed edge list, cached as a CSV next to the wheel.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from itertools import accumulate
from pathlib import Path
from typing import Any

Edge = tuple[int, int]

PANDAPOWER_VERSION = "3.5.6"
CASE_PATH = "pandapower/networks/power_system_test_case_jsons/case9241pegase.json"
BRANCH_TABLES = {"line": ("from_bus", "to_bus"), "trafo": ("hv_bus", "lv_bus")}


def cache_dir() -> Path:
    """Return (and create) the cache directory, honouring DELTALOG_BENCH_CACHE."""
    default = Path.home() / ".cache" / "deltalog" / "bench"
    path = Path(os.environ.get("DELTALOG_BENCH_CACHE", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


def fetch_wheel(directory: Path) -> Path:
    """Return the pinned pandapower wheel in `directory`, downloading it with pip if absent."""
    pattern = f"pandapower-{PANDAPOWER_VERSION}-*.whl"
    found = sorted(directory.glob(pattern))
    if not found:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            f"pandapower=={PANDAPOWER_VERSION}",
            "-d",
            str(directory),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        found = sorted(directory.glob(pattern))
        if proc.returncode != 0 or not found:
            raise RuntimeError(f"pip download of pandapower failed:\n{proc.stderr.strip()}")
    return found[0]


def frame_columns(frame: dict[str, Any], names: tuple[str, str]) -> list[tuple[Any, Any]]:
    """Return the values of two columns of a pandapower-serialised DataFrame, row by row.

    The frame's `_object` is a JSON string (or already-decoded object) in pandas orient
    "split" ({columns, index, data}) or "columns" ({column: {index: value}}).
    """
    body = frame["_object"]
    table = json.loads(body) if isinstance(body, str) else body
    if "data" in table:
        first, second = (table["columns"].index(name) for name in names)
        return [(row[first], row[second]) for row in table["data"]]
    first_col, second_col = (table[name] for name in names)
    return [(first_col[key], second_col[key]) for key in first_col]


def extract_edges(net: dict[str, Any]) -> list[Edge]:
    """Directed branch edges of a pandapower net: deduplicated, self-loops dropped, sorted."""
    tables = net["_object"]
    edges = {
        (int(u), int(v))
        for table, names in BRANCH_TABLES.items()
        for u, v in frame_columns(tables[table], names)
        if u != v
    }
    return sorted(edges)


def write_edges(path: Path, edges: list[Edge]) -> None:
    """Write an edge list as a two-column CSV (atomically via a temporary file)."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["from", "to"])
        writer.writerows(edges)
    tmp.replace(path)


def read_edges(path: Path) -> list[Edge]:
    """Read an edge list written by `write_edges`."""
    with path.open(newline="") as handle:
        rows = csv.reader(handle)
        next(rows)
        return [(int(u), int(v)) for u, v in rows]


def load_pegase_edges() -> list[Edge]:
    """Directed edge list of PEGASE 9241 (lines from->to, trafos hv->lv), cached as CSV."""
    directory = cache_dir()
    cached = directory / f"case9241pegase-edges-pandapower-{PANDAPOWER_VERSION}.csv"
    if cached.exists():
        return read_edges(cached)
    with zipfile.ZipFile(fetch_wheel(directory)) as wheel:
        net = json.loads(wheel.read(CASE_PATH))
    edges = extract_edges(net)
    write_edges(cached, edges)
    return edges


def power_law_edges(n: int, m: int, seed: int) -> list[Edge]:
    """`m` distinct directed edges on nodes 0..n-1 (no self-loops), Chung-Lu style.

    Each endpoint is drawn independently with probability proportional to (i + 1) ** -(2/3),
    giving a degree distribution with power-law exponent about 2.5. Deterministic in `seed`.
    """
    if m > n * (n - 1):
        raise ValueError(f"cannot place {m} distinct edges on {n} nodes")
    rng = random.Random(seed)
    nodes = range(n)
    cum_weights = list(accumulate((i + 1) ** (-2 / 3) for i in nodes))
    edges: set[Edge] = set()
    while len(edges) < m:
        u, v = rng.choices(nodes, cum_weights=cum_weights, k=2)
        if u != v:
            edges.add((u, v))
    return sorted(edges)


if __name__ == "__main__":
    pegase = load_pegase_edges()
    print(
        f"PEGASE 9241 (pandapower {PANDAPOWER_VERSION}): {len(pegase)} directed edges, "
        f"{len({x for e in pegase for x in e})} nodes; cache {cache_dir()}"
    )


def endpoints(edges: Iterable[Edge]) -> set[int]:
    """The nodes an edge list touches."""
    return {x for edge in edges for x in edge}


def node_count(edges: Iterable[Edge]) -> int:
    return len(endpoints(edges))
