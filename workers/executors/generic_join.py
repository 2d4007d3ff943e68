"""GenericJoin over compiled extenders: seed → checks → one level per variable.

At each level, for each row (prefix), the extender with the smallest ``count`` proposes
candidate values and every other extender intersects them; weights multiply.  Rows are
tuples in the program's layout; the result is projected onto ``output`` and consolidated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.executors.extenders import (
    Candidates,
    Extender,
    Relations,
    SpineExtender,
    TrieExtender,
    compile_extender,
)
from workers.executors.ops import AbsentOp, CheckOp, CompiledOp, ComputeOp, FilterOp
from workers.executors.share import WHOLE, Share
from workers.executors.work import Work
from workers.plan.ir import Absent, ExtenderSpec, Filter, JoinProgram, Level, Op
from workers.zset import ZSet
from workers.zset.row import Row

EMPTY_ROW: Row = ()
# proposals in the first chunk a depth-first search intersects (:func:`_extend_lazily`)
FIRST_CHUNK = 16


Stage = tuple[Extender, ...] | CompiledOp  # a GenericJoin level (its extenders), or an op


@dataclass(frozen=True, slots=True)
class CompiledProgram:
    """A JoinProgram bound to arrangements: ready to run every tick without rebuilding."""

    seed: SpineExtender | TrieExtender | None
    checks: tuple[Extender, ...]
    levels: tuple[Stage, ...]
    output: tuple[int, ...]
    identity: bool


def compile_program(program: JoinProgram, db: ArrangementRegistry, delta: MemoryArrangement,
                    relations: Relations | None = None) -> CompiledProgram:
    def bind(spec: Any) -> Extender:
        return compile_extender(spec, db, delta, relations)

    def stage(op: Op) -> Stage:
        if isinstance(op, Level):
            return tuple(bind(e) for e in op.extenders)
        if isinstance(op, ExtenderSpec):
            return CheckOp(bind(op))
        if isinstance(op, Absent):
            return AbsentOp(bind(op.spec))
        return FilterOp(op, db.ids) if isinstance(op, Filter) else ComputeOp(op, db.ids)

    seed = bind(program.seed) if program.seed is not None else None
    assert seed is None or isinstance(seed, SpineExtender | TrieExtender)
    return CompiledProgram(
        seed=seed,
        checks=tuple(bind(c) for c in program.checks),
        levels=tuple(stage(op) for op in program.levels),
        output=program.output,
        identity=program.output == tuple(range(len(program.layout))),
    )


def seed_rows(program: CompiledProgram, work: Work) -> ZSet[Row]:
    """The seed pattern's tuples (from the tick's delta), or the single empty row."""
    if program.seed is None:
        return {EMPTY_ROW: 1}
    rows = program.seed.enumerate()
    work.calls += 1
    work.elements += len(rows)
    return rows


def run(program: CompiledProgram, rows: ZSet[Row], work: Work,
        share: Share = WHOLE) -> ZSet[Row]:
    """Extend ``rows`` through the program; return the projected, consolidated Z-set (of
    the first level's rows in ``share``: an evaluation split between tasks)."""
    for check in program.checks:
        work.calls += len(rows)
        work.elements += len(rows)
        rows = {row: w * cw for row, w in rows.items() if (cw := check.weight(row))}
    for depth, stage in enumerate(program.levels):
        rows = _extend(rows, stage, work) if isinstance(stage, tuple) else \
            _expand(rows, stage, work)
        if depth == 0 and share.count > 1:
            rows = {row: w for row, w in rows.items() if share.holds(row)}
        if not rows:
            return {}
    return project(program, rows)


def _expand(rows: ZSet[Row], op: CompiledOp, work: Work) -> ZSet[Row]:
    work.calls += len(rows)
    out: ZSet[Row] = {}
    for row, weight in rows.items():
        for new_row, new_weight in op.expand(row, weight):
            out[new_row] = out.get(new_row, 0) + new_weight
    work.elements += len(out)
    return {row: w for row, w in out.items() if w}


def _extend(rows: ZSet[Row], extenders: tuple[Extender, ...], work: Work) -> ZSet[Row]:
    out: ZSet[Row] = {}
    for row, weight in rows.items():
        candidates = extend_one(row, extenders, work)
        for value, value_weight in candidates.items():
            out[row + (value,)] = weight * value_weight
    return out


def extend_one(row: Row, extenders: tuple[Extender, ...], work: Work) -> Candidates:
    """Values for the next variable of ``row``: smallest count proposes, the rest intersect.

    When every extender reads its node whole (``small``: the common case, small nodes),
    each is read once: its size is its count, and the others' dicts intersect the
    smallest's key by key (weights multiplied) — what ``propose`` and ``intersect``
    return, without three calls per extender."""
    if len(extenders) == 2:  # most levels: one product over the keys both hold
        first = extenders[0].small(row)
        second = None if first is None else extenders[1].small(row)
        if second is not None:
            assert first is not None
            work.calls += 4
            work.elements += 2 * min(len(first), len(second))
            return {x: first[x] * second[x] for x in first.keys() & second.keys()}
    elif len(extenders) > 2:
        nodes = []
        for extender in extenders:
            node = extender.small(row)
            if node is None:
                break
            nodes.append(node)
        else:
            return _intersect_small(nodes, work)
    proposer = _proposer(row, extenders, work)
    return _intersect(row, extenders, proposer, proposer.propose(row), work)


def _intersect_small(nodes: list[Candidates], work: Work) -> Candidates:
    """:func:`_intersect` of extenders read whole: the smallest proposes."""
    work.calls += 2 * len(nodes)
    proposer, candidates = 0, nodes[0]
    for i in range(1, len(nodes)):
        if len(nodes[i]) < len(candidates):
            proposer, candidates = i, nodes[i]
    work.elements += len(candidates)
    for i, node in enumerate(nodes):
        if i != proposer and candidates:
            work.elements += len(candidates)
            candidates = {x: candidates[x] * node[x] for x in candidates.keys() & node.keys()}
    return candidates


def _proposer(row: Row, extenders: tuple[Extender, ...], work: Work) -> Extender:
    """The extender with the smallest count for ``row``."""
    proposer = extenders[0]
    if len(extenders) > 1:
        smallest = -1
        for extender in extenders:
            size = extender.count(row)
            if smallest < 0 or size < smallest:
                proposer, smallest = extender, size
        work.calls += len(extenders)
    return proposer


def _intersect(row: Row, extenders: tuple[Extender, ...], proposer: Extender,
               candidates: Candidates, work: Work) -> Candidates:
    """``candidates`` (from ``proposer``) intersected with every other extender."""
    work.calls += 1
    work.elements += len(candidates)
    for extender in extenders:
        if extender is not proposer and candidates:
            work.calls += 1
            work.elements += len(candidates)
            candidates = extender.intersect(row, candidates)
    return candidates


def _extend_lazily(row: Row, extenders: tuple[Extender, ...],
                   work: Work) -> Iterator[tuple[Any, int]]:
    """:func:`extend_one`'s values, many proposals intersected ``FIRST_CHUNK`` first: a
    search that stops at its first accepted row (a delete's support check, a hub's
    successors against a pair's sources) mostly stops in that chunk, and one that goes on
    pays one more intersection call, not one per chunk; few proposals go in one call."""
    proposer = _proposer(row, extenders, work)
    proposals = proposer.propose(row)
    if len(proposals) <= 4 * FIRST_CHUNK:
        yield from _intersect(row, extenders, proposer, proposals, work).items()
        return
    rest = iter(proposals.items())
    first = dict(islice(rest, FIRST_CHUNK))
    yield from _intersect(row, extenders, proposer, first, work).items()
    yield from _intersect(row, extenders, proposer, dict(rest), work).items()


def project(program: CompiledProgram, rows: ZSet[Row]) -> ZSet[Row]:
    if program.identity:
        return rows
    out: ZSet[Row] = {}
    columns = program.output
    for row, weight in rows.items():
        key = tuple(row[i] for i in columns)
        out[key] = out.get(key, 0) + weight
    return {key: weight for key, weight in out.items() if weight}


def count_support(program: CompiledProgram, row: Row, cap: int, work: Work) -> int:
    """Derivations of ``row`` (bound to the program's seed columns) in the old state,
    counting only until ``cap`` is reached — depth first, so the search stops early."""
    total = 0
    for _, weight in derivations(program, row, work):
        total += weight
        if total >= cap:
            break
    return total


def witnessed(program: CompiledProgram, row: Row, accept: Callable[[Row], bool],
              work: Work) -> bool:
    """Whether one derivation of ``row`` (bound to the seed columns) has an output row that
    ``accept`` holds, stopping at the first: DRed's support check needs one witness per
    candidate, not all of them (a hub's candidates have hundreds)."""
    columns = None if program.identity else program.output  # a witness: its whole row
    for full, weight in derivations(program, row, work):
        if weight > 0 and accept(full if columns is None else tuple(full[i] for i in columns)):
            return True
    return False


def derivations(program: CompiledProgram, row: Row, work: Work) -> Iterator[tuple[Row, int]]:
    """The full rows extending ``row`` (bound to the seed columns), lazily, depth first."""
    weight = 1
    for check in program.checks:
        work.calls += 1
        weight *= check.weight(row)
        if not weight:
            return iter(())
    return _derive_from(program.levels, 0, row, weight, work)


def _derive_from(levels: tuple[Stage, ...], depth: int, row: Row, weight: int,
                 work: Work) -> Iterator[tuple[Row, int]]:
    """The rows from ``depth`` on, as iterators chained, not generators nested: a
    delete's support checks and rederive ask thousands of rows one level deep."""
    if depth == len(levels):
        return iter(((row, weight),))
    stage = levels[depth]
    following: Iterator[tuple[Row, int]]
    if isinstance(stage, tuple):
        following = ((row + (value,), weight * value_weight)
                     for value, value_weight in _extend_lazily(row, stage, work))
    else:
        work.calls += 1
        following = iter(stage.expand(row, weight))
    if depth + 1 == len(levels):
        return following
    return chain.from_iterable(_derive_from(levels, depth + 1, next_row, next_weight, work)
                               for next_row, next_weight in following)
