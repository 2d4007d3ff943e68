"""pydbsp (a pure-Python DBSP) maintaining the query as a chain of incremental joins.

The circuit is the textbook one: each pattern is a lifted selection of the fact stream, and
each join of the chain is incremental, `Δ(A ⋈ B) = I(A) ⋈ ΔB + ΔA ⋈ z⁻¹(I(B))`, with both
operands indexed on the join key (pydbsp's sort-merge join over `IndexedZSet`s). The
evaluator is compacted after every tick, as pydbsp recommends for monotone-forward reads.
Joins are bags; `SetChanges` turns the output into set changes (the queries' `distinct`).

pydbsp 2.x needs Python 3.12+: it runs in its own virtualenv (`python_for_pydbsp`), made
once in the bench cache with pip, through the worker protocol of `bench.peers.remote`.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.data import Fact, Tick, cache_dir
from bench.peers.base import SetChanges
from bench.peers.translate import binding, join_chain, matches, variables
from bench.queries import Clause, Spec

PYDBSP_VERSION = "2.1.0"
PY312_CANDIDATES = ("python3.13", "python3.12")


def python_for_pydbsp() -> str:
    """The interpreter of the pydbsp virtualenv, creating it on first use; raises
    RuntimeError (with what was tried) when no Python 3.12+ or no pydbsp can be had."""
    venv = cache_dir() / f"pydbsp-{PYDBSP_VERSION}-venv"
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    base = find_python312()
    for cmd in ([base, "-m", "venv", str(venv)],
                [str(python), "-m", "pip", "install", "-q", f"pydbsp=={PYDBSP_VERSION}"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
    return str(python)


def find_python312() -> str:
    """A Python >= 3.12: $DELTALOG_PY312, then PATH, then pyenv's versions."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [os.environ.get("DELTALOG_PY312", "")]
    candidates += [shutil.which(name) or "" for name in PY312_CANDIDATES]
    candidates += sorted(glob.glob(str(pyenv / "3.1[2-9]*" / "bin" / "python3")))
    for candidate in filter(None, candidates):
        probe = [candidate, "-c", "import sys; assert sys.version_info >= (3, 12)"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return candidate
    raise RuntimeError(f"pydbsp {PYDBSP_VERSION} needs Python >= 3.12; none found "
                       "(set DELTALOG_PY312)")


def incremental_join(circuit: Any, left: Any, right: Any, key_l: Any, key_r: Any,
                     proj: Any) -> Any:
    """Δ(A ⋈ B) = I(A) ⋈ ΔB + ΔA ⋈ z⁻¹(I(B)), both sides indexed on the join key."""
    from pydbsp.indexed_relational_operators import LiftIndex
    from pydbsp.indexed_zset import IndexedZSetAddition, sort_merge_join
    from pydbsp.operator import Delay, Integrate, Lift2
    from pydbsp.zset import ZSetAddition

    group_l = IndexedZSetAddition(ZSetAddition(), key_l)
    group_r = IndexedZSetAddition(ZSetAddition(), key_r)
    d_left = LiftIndex(indexer=key_l).connect(circuit, (left,))
    d_right = LiftIndex(indexer=key_r).connect(circuit, (right,))
    i_left = Integrate(group=group_l).connect(circuit, (d_left,))
    i_right = Integrate(group=group_r).connect(circuit, (d_right,))
    old_right = Delay(group=group_r).connect(circuit, (i_right,))

    def join(a: Any, b: Any) -> Any:
        return sort_merge_join(a, b, proj)

    first = Lift2(op=join).connect(circuit, (i_left, d_right))
    second = Lift2(op=join).connect(circuit, (d_left, old_right))
    return Lift2(op=ZSetAddition().add).connect(circuit, (first, second))


def select(circuit: Any, source: Any, clause: Clause) -> Any:
    """The lifted selection of one pattern: matching facts as tuples of its variables."""
    from pydbsp.operator import Lift1
    from pydbsp.zset import ZSet

    def pick(z: Any) -> Any:
        return ZSet({binding(clause, f): w for f, w in z.inner.items() if matches(clause, f)})

    return Lift1(f=pick).connect(circuit, (source,))


def project(z: Any, pick: Any) -> Any:
    """A Z-set's rows mapped through `pick`, weights of rows that meet summed."""
    from pydbsp.zset import ZSet

    weights: dict[Any, int] = {}
    for row, weight in z.inner.items():
        key = pick(row)
        weights[key] = weights.get(key, 0) + weight
    return ZSet({k: w for k, w in weights.items() if w})


def positions(columns: Sequence[str], names: Sequence[str]) -> Any:
    """A function picking `names` out of a row with `columns`."""
    index = [columns.index(n) for n in names]
    return lambda row: tuple(row[i] for i in index)


class PydbspPeer:
    """One pydbsp circuit per query, pushed one tick per outer time step."""

    name = "pydbsp"
    last_work: int | None = None

    def __init__(self) -> None:
        self.evaluator: Any = None
        self.source: Any = None
        self.output: Any = None
        self.time = -1
        self.changes = SetChanges()

    def unsupported(self, spec: Spec) -> str | None:
        return "closure not wired (a join chain only)" if spec.closure is not None else None

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        from pydbsp.circuit import Circuit
        from pydbsp.compute import ComputeCtx
        from pydbsp.core import Antichain, dbsp_time
        from pydbsp.evaluate import Evaluator
        from pydbsp.operator import Input, Lift1
        from pydbsp.storage import DictStorage
        from pydbsp.zset import ZSetAddition

        self.evaluator = Evaluator(circuit=Circuit(), storage=DictStorage(),
                                   ctx=ComputeCtx(lattice=dbsp_time(1)), group=ZSetAddition())
        circuit = self.evaluator.circuit
        self.source = Input(frontier=Antichain(dbsp_time(1))).connect(circuit, ())
        start, steps = join_chain(spec)
        result, bound = select(circuit, self.source, start), list(variables(start))
        for step in steps:
            right = select(circuit, self.source, step.clause)
            columns = variables(step.clause)
            new = positions(columns, step.new)
            result = incremental_join(circuit, result, right, positions(bound, step.key),
                                      positions(columns, step.key),
                                      lambda _k, a, b, new=new: a + new(b))
            bound += step.new
        find = positions(bound, spec.find)
        self.output = Lift1(f=lambda z: project(z, find)).connect(circuit, (result,))
        self.push({f: 1 for f in facts})
        self.changes.take()

    def push(self, weights: dict[Fact, int]) -> None:
        """Push one tick, read the output's change at that time, then compact."""
        from pydbsp.zset import ZSet

        self.evaluator.push(self.source, ZSet(weights))
        self.time += 1
        for row, weight in self.evaluator.read(self.output, (self.time,)).inner.items():
            self.changes.add(row, weight)
        self.evaluator.compact()

    def apply(self, tick: Tick) -> int:
        self.push({f: -1 for f in tick.removes} | {f: 1 for f in tick.adds})
        return self.changes.take()

    def close(self) -> None:
        self.evaluator = None
