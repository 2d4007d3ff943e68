"""Every benchmark target by name: deltalog's strategies and executors, and the peers.

A peer whose package is missing or cannot start is still built, as a stub that says why
(`Unavailable`), so the run records the exact reason and goes on without it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sqlite3
from collections.abc import Callable, Sequence

from bench.data import Fact, Tick
from bench.peers.base import Peer
from bench.peers.deltalog_peer import Deltalog
from bench.peers.handwritten_peer import Handwritten
from bench.peers.kuzu_peer import KuzuRecompute
from bench.peers.pydbsp_peer import PYDBSP_VERSION, python_for_pydbsp
from bench.peers.remote import Remote
from bench.peers.sql_peers import DuckDBRecompute, SQLiteRecompute
from bench.queries import Spec

STRATEGY_TARGETS = ("delta", "recursive", "binary")
PEER_TARGETS = ("handwritten", "duckdb", "sqlite", "kuzu", "pathway", "pydbsp")
SPARK_TARGET = "delta-spark"
REFERENCE = "delta"


class Unavailable:
    """A peer that could not be had here; `unsupported` carries the exact error."""

    last_work: int | None = None

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason = name, reason

    def unsupported(self, spec: Spec) -> str | None:
        return self.reason

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        raise RuntimeError(self.reason)

    def apply(self, tick: Tick) -> int:
        raise RuntimeError(self.reason)

    def close(self) -> None:
        pass


def needs(module: str, name: str, build: Callable[[], Peer]) -> Peer:
    """`build()`, or an Unavailable stub when `module` is not importable."""
    if importlib.util.find_spec(module) is None:
        return Unavailable(name, f"python package {module!r} is not installed "
                                 "(pip install -e '.[bench]')")
    return build()


def pydbsp() -> Peer:
    """pydbsp in its Python 3.12 worker, or why it cannot run."""
    try:
        return Remote("pydbsp", python_for_pydbsp())
    except RuntimeError as exc:
        return Unavailable("pydbsp", str(exc))


def make_peer(name: str, spark_master: str = "local[2]") -> Peer:
    """A fresh target by name (see STRATEGY_TARGETS, PEER_TARGETS, SPARK_TARGET)."""
    if name in STRATEGY_TARGETS:
        return Deltalog(name)
    if name == SPARK_TARGET:
        return needs("pyspark", name, lambda: Deltalog("delta", "spark", spark_master))
    builders: dict[str, Callable[[], Peer]] = {
        "handwritten": Handwritten,
        "duckdb": lambda: needs("duckdb", name, DuckDBRecompute),
        "sqlite": SQLiteRecompute,
        "kuzu": lambda: needs("kuzu", name, KuzuRecompute),
        "pathway": lambda: needs("pathway", name, lambda: Remote("pathway")),
        "pydbsp": pydbsp,
    }
    if name not in builders:
        raise ValueError(f"unknown target {name!r}")
    return builders[name]()


def versions() -> dict[str, str]:
    """Installed versions of everything measured (what the JSON and the docs cite)."""
    found = {"sqlite": sqlite3.sqlite_version, "pydbsp": f"{PYDBSP_VERSION} (Python 3.12 venv)"}
    for package in ("duckdb", "pathway", "kuzu", "pyspark", "matplotlib"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found
