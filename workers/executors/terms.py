"""How each strategy sums its terms into the change of a query's derivation counts.

- ``delta``:     Σ_i GJ(seed ΔR_i; new R_<i, old R_>i)
- ``binary``:    the same terms as left-deep chains of single-pattern joins
- ``recursive``: Δ_{1..k} = Δ_{1..k-1} ⋈ new(R_k) + GJ(seed ΔR_k; old R_<k)
  (seed 001's per-relation recursion with its first two terms collapsed; every
  intermediate row carries its exact weight, so no change is lost)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.executors.generic_join import CompiledProgram, compile_program, run, seed_rows
from workers.executors.share import WHOLE, Share
from workers.executors.work import Work
from workers.plan.ir import BinaryTerm, DeltaTerm, Term
from workers.zset import ZSet, add_into
from workers.zset.row import Row


@dataclass(frozen=True, slots=True)
class CompiledDelta:
    program: CompiledProgram


@dataclass(frozen=True, slots=True)
class CompiledChain:
    chain: tuple[CompiledProgram, ...]


@dataclass(frozen=True, slots=True)
class CompiledStage:
    extend: CompiledProgram | None
    seeded: CompiledProgram


CompiledTerm = CompiledDelta | CompiledChain | CompiledStage


def compile_term(term: Term, db: ArrangementRegistry, delta: MemoryArrangement) -> CompiledTerm:
    """Bind one IR term's programs to the arrangements."""
    if isinstance(term, DeltaTerm):
        return CompiledDelta(compile_program(term.program, db, delta))
    if isinstance(term, BinaryTerm):
        return CompiledChain(tuple(compile_program(p, db, delta) for p in term.chain))
    extend = None if term.extend is None else compile_program(term.extend, db, delta)
    return CompiledStage(extend, compile_program(term.seeded, db, delta))


def derivation_change(terms: Sequence[CompiledTerm], work: Work,
                      share: Share = WHOLE) -> ZSet[Row]:
    """The tick's change of the query's derivation counts, over the ``:find`` columns (from
    the ``share`` of each term's seed rows: every term is linear in them)."""
    total: ZSet[Row] = {}
    for term in terms:
        if isinstance(term, CompiledDelta):
            add_into(total, _seeded(term.program, work, share))
        elif isinstance(term, CompiledChain):
            add_into(total, _chain(term.chain, work, share))
        else:  # a recursive stage replaces the running change of the partial join
            so_far = run(term.extend, total, work) if term.extend is not None and total else {}
            total = add_into(so_far, _seeded(term.seeded, work, share))
    return total


def _seeded(program: CompiledProgram, work: Work, share: Share) -> ZSet[Row]:
    rows = share.rows(seed_rows(program, work))
    return run(program, rows, work) if rows else {}


def _chain(programs: Sequence[CompiledProgram], work: Work, share: Share) -> ZSet[Row]:
    rows = _seeded(programs[0], work, share)
    for program in programs[1:]:
        if not rows:
            return {}
        rows = run(program, rows, work)
    return rows
