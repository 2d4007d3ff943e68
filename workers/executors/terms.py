"""How each strategy sums its terms into the change of a query's derivation counts.

- ``delta``:     Σ_i GJ(seed ΔR_i; new R_<i, old R_>i)
- ``binary``:    the same terms as left-deep chains of single-pattern joins
- ``recursive``: Δ_{1..k} = Δ_{1..k-1} ⋈ new(R_k) + GJ(seed ΔR_k; old R_<k)
  (seed 001's per-relation recursion with its first two terms collapsed; every
  intermediate row carries its exact weight, so no change is lost)
"""

from __future__ import annotations

from collections.abc import Sequence

from workers.executors.extenders import Row
from workers.executors.generic_join import CompiledProgram, run, seed_rows
from workers.executors.work import Work
from workers.zset import add_into

# A compiled term: (kind, programs).  delta: (p,); binary: chain; recursive: (extend?, seeded)
CompiledTerm = tuple[str, tuple[CompiledProgram | None, ...]]


def derivation_change(terms: Sequence[CompiledTerm], work: Work) -> dict[Row, int]:
    """The tick's change of the query's derivation counts, over the ``:find`` columns."""
    total: dict[Row, int] = {}
    for kind, programs in terms:
        if kind == "delta":
            add_into(total, _seeded(programs[0], work))  # type: ignore[arg-type]
        elif kind == "binary":
            add_into(total, _chain(programs, work))  # type: ignore[arg-type]
        else:
            extend, seeded = programs
            so_far = run(extend, total, work) if extend is not None and total else {}
            total = add_into(so_far, _seeded(seeded, work))  # type: ignore[arg-type]
    return total


def _seeded(program: CompiledProgram, work: Work) -> dict[Row, int]:
    rows = seed_rows(program, work)
    return run(program, rows, work) if rows else {}


def _chain(programs: Sequence[CompiledProgram], work: Work) -> dict[Row, int]:
    rows = _seeded(programs[0], work)
    for program in programs[1:]:
        if not rows:
            return {}
        rows = run(program, rows, work)
    return rows
