"""The vectorised executor: GenericJoin one level at a time for every row of a step.

The row-at-a-time executor (:mod:`workers.executors.generic_join`) pays a few dict reads
and Python calls per row per extender; a tick of thousands of changed datoms pays them
thousands of times.  Here a step's rows are a :class:`Frame` — one column of value ids per
bound variable, one of weights — and each level is a handful of array operations over all
of them, against the spine's batch-of-prefixes verbs (``locate`` once, then
``estimates_at``, ``proposals_at``, ``lookups_at``; ``weights`` for checks):

1. every extender estimates its count for every row; each row's proposer is the smallest;
2. each extender proposes for the rows it won: ``(row, key, weight)`` arrays;
3. every other extender looks each candidate up; weights multiply, absent ones drop;
4. the new frame is the candidates' rows gathered, plus the key column.

``distinct`` counts each changed row's derivations in the old state with the support
program seeded by all the rows at once (uncapped: the counts come from the same arrays).

Plans it takes: data patterns whose tail binds one variable (``leaf``: ``[?e :a ?v]``
read by its prefix; ``scan``: one key and a ``_`` after it), checks, and the ``delta``
strategy's terms — no function, predicate, negation or derived relation (their queries
run row at a time).  The ``old`` state is the database's spine, a set: a key is present
when its summed weight is positive; ``new`` adds the tick's delta (a spine of one batch),
still a set; ``delta`` alone is a Z-set, where a key is present when a datom is under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from workers.arrangements import ArrangementRegistry, IndexOrder
from workers.arrangements.batch import Ints, Mask, sort_order, starts
from workers.arrangements.batch_reads import Located
from workers.arrangements.delta import TickDelta
from workers.arrangements.spine import SpineArrangement
from workers.executors.extenders import lookup_depth, with_ids
from workers.executors.share import WHOLE, Share
from workers.executors.threads import Threads
from workers.executors.work import Work
from workers.plan.ir import (
    DATOMS,
    DeltaTerm,
    ExtenderSpec,
    JoinProgram,
    Level,
    Plan,
    Role,
    StepKind,
)

ONE_THREAD = Threads(1)
# Where a step's shares start to pay on threads: a tick whose query touches ~4x10^6
# elements (its Work) — each share makes every NumPy call of the step again, and the
# threads hand the GIL to each other between those calls, so smaller steps lose (the
# triangle at LiveJournal's size, one thread against two, ticks alternated on one engine:
# 14.6 / 17.8 ms at 3.2x10^5 elements, 25.3 / 29.6 at 6.4x10^5, 114 / 129 at 2.6x10^6,
# 208 / 158 at 5.2x10^6; `python -m bench vector --threads 2` on 10^6 edges: 0.69x at
# 1,024 edges, 0.93x at 32,768) — and a bootstrap of a database of 100,000 datoms (2x at
# 2x10^5 edges on 2 threads).
PARALLEL_ELEMENTS = 4_000_000
PARALLEL_DATOMS = 100_000
# What an evaluation reads as the delta: nothing (``new`` reads as ``old``).
NO_DELTA = TickDelta()
# Each source of a pattern (the state, the delta) with where a frame's prefixes are in it.
Found = list[tuple[SpineArrangement, Located]]


@dataclass(slots=True)
class Frame:
    """Rows of a step as columns: ``columns[j]`` the ids of layout column ``j``; ``origin``
    the row of the frame the step started from (to count per starting row); ``located``
    its prefixes found in a source, by ``(source, order, prefix)``, for the extenders of
    the other terms that read the same (the triangle's three delta terms share their seed
    frame, and two of its six state reads)."""

    columns: list[Ints]
    weights: Ints
    origin: Ints
    located: dict[tuple[object, ...], Located] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.weights)

    def rows(self, start: int, stop: int) -> Frame:
        return Frame([c[start:stop] for c in self.columns], self.weights[start:stop],
                     self.origin[start:stop])

    def gather(self, rows: Ints, weights: Ints, key: Ints | None = None) -> Frame:
        columns = [c[rows] for c in self.columns]
        if key is not None:
            columns.append(key)
        return Frame(columns, weights, self.origin[rows])


class VectorExtender:
    """One data pattern over a role's sources, for a frame at a time."""

    def __init__(self, spec: ExtenderSpec, db: ArrangementRegistry) -> None:
        depth = lookup_depth(spec)
        assert isinstance(spec.order, IndexOrder)
        self.order, self.weighted, self.role = spec.order, spec.weighted, spec.role
        self._prefix = tuple((s.kind is StepKind.CONST, s.arg) for s in spec.steps[:depth])
        self._free_tail = all(s.kind is StepKind.FREE for s in spec.steps[depth + 1:])
        self._db = db

    @staticmethod
    def supports(spec: ExtenderSpec, level: bool) -> bool:
        """A data pattern whose steps are lookups, then (at a level) one BIND, then FREEs."""
        if spec.relation != DATOMS:
            return False
        tail = [s.kind for s in spec.steps[lookup_depth(spec):]]
        if level:
            return bool(tail) and tail[0] is StepKind.BIND and all(
                k is StepKind.FREE for k in tail[1:])
        return all(k is StepKind.FREE for k in tail)

    def _sources(self, delta: TickDelta) -> list[SpineArrangement]:
        if self.role is Role.OLD:
            return [self._db.state]
        if self.role is Role.DELTA:
            return [delta.spine()]
        return [self._db.state, delta.spine()]

    @property
    def depth(self) -> int:
        """The keys of its prefix: the level its lookups read."""
        return len(self._prefix)

    def _prefixes(self, frame: Frame) -> Ints:
        out = np.empty((len(frame), len(self._prefix)), np.int64)
        for j, (is_const, arg) in enumerate(self._prefix):
            out[:, j] = arg if is_const else frame.columns[arg]
        return out

    def locate(self, frame: Frame, delta: TickDelta) -> Found:
        """Every row's prefix found in each source (the state, ``delta``, or both), once
        for the level's three verbs and the frame's other readers of the same
        (``Frame.located``)."""
        found: Found = []
        prefixes = None
        for source in self._sources(delta):
            read = (source, self.order, self._prefix)
            at = frame.located.get(read)
            if at is None:
                prefixes = self._prefixes(frame) if prefixes is None else prefixes
                at = frame.located[read] = source.locate(self.order, prefixes)
            found.append((source, at))
        return found

    def estimates(self, located: Found) -> Ints:
        return sum((source.estimates_at(at) for source, at in located),
                   np.zeros(located[0][1].rows, np.int64))

    def propose(self, located: Found, rows: Ints) -> tuple[Ints, Ints, Ints]:
        """For the frame rows ``rows``: ``(frame row, key, weight)`` of every key present."""
        source, at = located[0]
        if len(located) == 1:
            found, keys, sums = source.proposals_at(at, rows)
            keep = sums != 0 if self.weighted else np.ones(len(sums), bool)
        else:  # state + delta, a set: every source's leaves summed in one merge, and
            # present when positive (a merge per spine, then one of both, sorted twice)
            every = Located(at.depth, at.rows, [node for _, a in located for node in a.nodes])
            found, keys, sums = source.proposals_at(every, rows)
            keep = sums > 0
        weights = sums[keep] if self.weighted else np.ones(int(keep.sum()), np.int64)
        return rows[found[keep]], keys[keep].astype(np.int64), weights

    def lookup(self, located: Found, rows: Ints, keys: Ints) -> tuple[Mask, Ints]:
        """For candidates ``(frame row, key)``: present, and this pattern's weight factor."""
        held, total = np.zeros(len(rows), bool), np.zeros(len(rows), np.int64)
        for source, at in located:
            found, sums = source.lookups_at(at, rows, keys.astype(np.int32))
            held |= found
            total += sums
        present = held if self.role is Role.DELTA else total > 0
        if self.weighted:
            present &= total != 0
        return present, total if self.weighted else np.ones(len(rows), np.int64)

    def check(self, frame: Frame, delta: TickDelta) -> tuple[Mask, Ints]:
        """A fully bound pattern (lookups then ``_``s): present, and its weight factor."""
        prefixes = self._prefixes(frame)
        total = np.zeros(len(frame), np.int64)
        present = np.zeros(len(frame), bool)
        for source in self._sources(delta):
            weights = source.weights(self.order, prefixes)
            total += weights
            if self.role is Role.DELTA:  # a Z-set: a prefix is present when a datom is
                present |= (weights != 0 if prefixes.shape[1] == 3
                            else source.counts(self.order, prefixes) > 0)
        if self.role is not Role.DELTA:
            present = total > 0
        if self.weighted:
            present &= total != 0
        return present, total if self.weighted else np.ones(len(frame), np.int64)


@dataclass(frozen=True, slots=True)
class VectorProgram:
    """A join program bound for frames: checks, then one tuple of extenders per level."""

    checks: tuple[VectorExtender, ...]
    levels: tuple[tuple[VectorExtender, ...], ...]
    output: tuple[int, ...]


@dataclass(slots=True)
class StepCost:
    """Elements touched per datom of the tick's delta in the plan's latest step: what the
    next step is expected to touch, to choose whether it runs over threads."""

    per_datom: float = 0.0


@dataclass(frozen=True, slots=True)
class VectorPlan:
    """The ``delta`` strategy's terms (each seeded from the delta, run for frames), the
    support program of ``distinct``, and the full evaluation (a bootstrap) when it starts
    from nothing (None: it runs row at a time).  ``one_derivation``: a row has at most one
    derivation (:func:`_one_derivation`), so ``distinct`` has nothing to recount."""

    seeds: tuple[ExtenderSpec, ...]
    terms: tuple[VectorProgram, ...]
    support: VectorProgram
    find: int
    full: VectorProgram | None
    one_derivation: bool
    cost: StepCost = field(default_factory=StepCost)


def vectorisable(plan: Plan) -> bool:
    """Whether :func:`prepare_vector` takes the plan."""
    return all(isinstance(t, DeltaTerm) and _program_ok(t.program, seeded=True)
               for t in plan.terms) and _program_ok(plan.support, seeded=False)


def _program_ok(program: JoinProgram, seeded: bool) -> bool:
    if seeded and (program.seed is None or program.seed.relation != DATOMS):
        return False
    return all(VectorExtender.supports(c, level=False) for c in program.checks) and all(
        isinstance(op, Level) and all(VectorExtender.supports(e, level=True)
                                      for e in op.extenders) for op in program.levels)


def prepare_vector(plan: Plan, db: ArrangementRegistry) -> VectorPlan:
    def bind(program: JoinProgram) -> VectorProgram:
        return VectorProgram(
            tuple(VectorExtender(with_ids(c, db.ids), db) for c in program.checks),
            tuple(tuple(VectorExtender(with_ids(e, db.ids), db) for e in op.extenders)
                  for op in program.levels if isinstance(op, Level)),
            program.output)

    terms = tuple(t for t in plan.terms if isinstance(t, DeltaTerm))
    full = plan.full.seed is None and _program_ok(plan.full, seeded=False)
    return VectorPlan(tuple(with_ids(t.program.seed, db.ids) for t in terms
                            if t.program.seed is not None),
                      tuple(bind(t.program) for t in terms), bind(plan.support), len(plan.find),
                      bind(plan.full) if full else None, _one_derivation(plan.support))


def _one_derivation(support: JoinProgram) -> bool:
    """Whether a row has at most one derivation: with its columns bound nothing is left to
    bind (no level) and every check names a whole datom (no ``_``), so over a set (the old
    state, the new one) its count is 0 or 1.  Then ``before`` and ``before + d`` are both 0
    or 1 and ``distinct``'s change ``[before + d > 0] - [before > 0]`` is ``d`` itself."""
    return not support.levels and all(step.kind is not StepKind.FREE
                                      for check in support.checks for step in check.steps)


def derivations(plan: VectorPlan, seeds: list[Frame], delta: TickDelta, work: Work) -> Frame:
    """The change of the derivation counts: each term's from its seeds, summed."""
    outputs = [run(program, frame, delta, work)
               for program, frame in zip(plan.terms, seeds, strict=True)]
    return summed_frames(outputs, plan.find)


def summed_frames(frames: list[Frame], width: int) -> Frame:
    """The rows of ``frames`` (``width`` columns each) together, equal rows added."""
    return consolidated([np.concatenate([f.columns[j] for f in frames]) for j in range(width)],
                        np.concatenate([f.weights for f in frames]))


def distinct(plan: VectorPlan, derivations: Frame, delta: TickDelta, work: Work,
             threads: Threads | None = None) -> Frame:
    """The set changes of consolidated derivation changes, recounting each row's
    derivations in the old state (:mod:`workers.executors.distinct`, for arrays; the rows
    cut over ``threads``).  They stay columns: the engine turns them into rows of values
    once (``Engine._decode``)."""
    if not len(derivations) or plan.one_derivation:
        return derivations
    before = np.zeros(len(derivations), np.int64)

    def recount(share: Share, counted: Work) -> None:  # the rows of a share, in place
        rows = share.positions(len(derivations))
        columns = derivations.columns if share.count == 1 else [c[rows] for c in
                                                                derivations.columns]
        ones = np.ones(len(rows), np.int64)
        supported = run(plan.support, Frame(columns, ones, np.arange(len(rows))), delta,
                        counted, project=False)
        before[rows] = np.bincount(supported.origin, weights=supported.weights,
                                   minlength=len(rows))

    (threads or ONE_THREAD).map(recount, work)
    after = before + derivations.weights  # distinct_change, for arrays
    change = (after > 0).astype(np.int64) - (before > 0).astype(np.int64)
    keep = np.flatnonzero(change)
    return derivations.gather(keep, change[keep])


def run(program: VectorProgram, frame: Frame, delta: TickDelta, work: Work,
        project: bool = True, share: Share = WHOLE) -> Frame:
    """The frame through the program's checks and levels, then projected and consolidated
    (``project``; else every row of the last level, for counting per origin).  A level's
    input is cut into pieces of at most ``PIECE_ROWS`` rows, each taken through the
    remaining levels before the next (depth first), so a bootstrap's frames stay bounded.
    Of the first level's rows only those in ``share`` go on (an evaluation between tasks)."""
    for check in program.checks:
        present, factor = check.check(frame, delta)
        work.calls += 1
        work.elements += len(frame)
        keep = np.flatnonzero(present)
        frame = frame.gather(keep, frame.weights[keep] * factor[keep])
    pieces = _through(frame, program.levels, 0, delta, work, share)
    if project:  # each piece consolidated as it comes: only results are held
        pieces = (consolidated([p.columns[i] for i in program.output], p.weights)
                  for p in pieces)
    done = list(pieces)
    if not done:
        empty = np.zeros(0, np.int64)
        return Frame([empty] * len(program.output), empty, empty)
    columns = [np.concatenate(c) for c in zip(*(p.columns for p in done), strict=True)]
    weights = np.concatenate([p.weights for p in done])
    if project:
        return consolidated(columns, weights)
    return Frame(columns, weights, np.concatenate([p.origin for p in done]))


# A piece's proposals on a power-law graph reach tens of times its rows: at 2^18 rows the
# triangle over 10^7 edges held ~880 MB in one level, and memory a process has not held
# costs its faults (on this machine's VM ~1-2 s a GB).  2^16: that bootstrap's share
# 4.9-5.5 s -> 4.5-4.7 s (CPU +0.3 s, faults -0.7 to -1.1 s; docs/engine.md).
PIECE_ROWS = 1 << 16
# ... and rows of hubs propose thousands each: at LiveJournal's size a piece of 2^16 rows
# of the triangle's last level proposed up to ~10^9 candidates (a bootstrap peaked at 19 GB
# against 8 in another run, by which pieces the two threads held at once).  A level's rows
# are proposed for in runs of at most PIECE_PROPOSALS estimated candidates (a row more
# than that alone): ~100 bytes a candidate in a level's arrays.
PIECE_PROPOSALS = 1 << 21


def _through(frame: Frame, levels: tuple[tuple[VectorExtender, ...], ...], depth: int,
             delta: TickDelta, work: Work, share: Share = WHOLE) -> Iterator[Frame]:
    """The non-empty frames ``frame`` becomes after ``levels[depth:]``, piece by piece."""
    if not len(frame):
        return
    if depth == len(levels):
        yield frame
        return
    for start in range(0, len(frame), PIECE_ROWS):
        piece = frame if len(frame) <= PIECE_ROWS else frame.rows(start, start + PIECE_ROWS)
        for extended in _extend(piece, levels[depth], delta, work,
                                share if depth == 0 else WHOLE):
            yield from _through(extended, levels, depth + 1, delta, work)


def _extend(frame: Frame, extenders: tuple[VectorExtender, ...], delta: TickDelta,
            work: Work, share: Share = WHOLE) -> Iterator[Frame]:
    """One GenericJoin level for every row of ``frame``, keeping the proposed values in
    ``share`` (before the other extenders check them: a share's first level checks its own
    values, not every task all of them); the rows in runs of at most ``PIECE_PROPOSALS``
    estimated proposals, a frame each."""
    located = [extender.locate(frame, delta) for extender in extenders]
    estimates = [e.estimates(at) for e, at in zip(extenders, located, strict=True)]
    if len(extenders) == 1:
        proposer, least = np.zeros(len(frame), np.int64), estimates[0]
    else:
        stacked = np.stack(estimates)
        proposer = np.argmin(stacked, axis=0)
        least = stacked[proposer, np.arange(len(frame))]
    for first, end in _runs(least):
        rows = np.arange(first, end)
        yield _extended(frame, extenders, located, proposer, rows, work, share)


def _runs(estimates: Ints) -> list[tuple[int, int]]:
    """Consecutive rows in runs whose ``estimates`` add up to ``PIECE_PROPOSALS`` at most
    (a row alone may exceed it): ``(first, end)`` each."""
    total = np.cumsum(estimates)
    if not len(total) or total[-1] <= PIECE_PROPOSALS:
        return [(0, len(estimates))]
    runs, first = [], 0
    while first < len(total):
        before = total[first - 1] if first else 0
        end = max(int(np.searchsorted(total, before + PIECE_PROPOSALS, side="right")),
                  first + 1)
        runs.append((first, end))
        first = end
    return runs


def _extended(frame: Frame, extenders: tuple[VectorExtender, ...], located: list[Found],
              proposer: Ints, rows: Ints, work: Work, share: Share) -> Frame:
    """The level for the frame's ``rows`` (a run of :func:`_runs`): each extender's
    proposals for the rows it won, looked up by the others — part by part, so a lookup
    reads its candidates as they come (no gathers of the level's every candidate by its
    proposer, no masks over all of them)."""
    mine = proposer[rows]
    found = []
    work.calls += len(extenders) + 1
    for i, extender in enumerate(extenders):
        at, keys, weights = extender.propose(located[i], rows[mine == i])
        if share.count > 1:
            held = np.flatnonzero(share.keys(keys))
            at, keys, weights = at[held], keys[held], weights[held]
        work.elements += len(at)
        for j, other in enumerate(extenders):
            if j == i or not len(at):
                continue
            present, factor = other.lookup(located[j], at, keys)
            work.calls += 1
            work.elements += len(at)
            keep = np.flatnonzero(present)
            at, keys = at[keep], keys[keep]
            weights = weights[keep] * factor[keep] if other.weighted else weights[keep]
        found.append((at, keys, weights))
    at, keys, weights = (np.concatenate(c) for c in zip(*found, strict=True))
    return frame.gather(at, frame.weights[at] * weights, keys)


def consolidated(columns: list[Ints], weights: Ints) -> Frame:
    """Equal rows added up, zeros dropped."""
    if not len(weights):
        return Frame(columns, weights, np.zeros(0, np.int64))
    if columns:
        order = sort_order(*columns)
        columns = [c[order] for c in columns]
        weights = weights[order]
        first = starts(*columns)
        weights = np.add.reduceat(weights, first)
        columns = [c[first] for c in columns]
    else:
        weights = np.array([weights.sum()], np.int64)
    keep = np.flatnonzero(weights)
    return Frame([c[keep] for c in columns], weights[keep], np.arange(len(keep)))


def seed_frame(spec: ExtenderSpec, delta: TickDelta) -> Frame:
    """The seed pattern's bindings from the tick's delta, as a frame."""
    assert isinstance(spec.order, IndexOrder)
    depth = next((d for d, s in enumerate(spec.steps) if s.kind is not StepKind.CONST),
                 len(spec.steps))
    prefix = np.array([[s.arg for s in spec.steps[:depth]]], np.int64).reshape(1, depth)
    _, suffix, weights = delta.spine().enumerations(spec.order, prefix)
    keep = np.ones(len(weights), bool)
    binds: dict[int, Ints] = {}
    for step, ids in zip(spec.steps[depth:], suffix, strict=True):
        column = ids.astype(np.int64)
        if step.kind is StepKind.BIND:
            binds[step.arg] = column
        elif step.kind is StepKind.CONST:
            keep &= column == step.arg
        elif step.kind is StepKind.SAME:
            keep &= column == binds[step.arg]
    columns = [binds[j][keep] for j in range(len(binds))]
    if spec.weighted:
        return consolidated(columns, weights[keep])
    seeds = consolidated(columns, np.ones(int(keep.sum()), np.int64))  # presence: one each
    seeds.weights[:] = 1
    return seeds


class VectorExecutor:
    """Steps the plans it takes (:meth:`takes`) a frame at a time, over the shared
    arrangements and the delta a step is given (read as a spine); big steps and evaluations
    over ``threads``."""

    name = "vectorised"

    def __init__(self, db: ArrangementRegistry, threads: Threads = ONE_THREAD) -> None:
        self._db = db
        self.threads = threads
        self.parallel_elements, self.parallel_datoms = PARALLEL_ELEMENTS, PARALLEL_DATOMS

    @staticmethod
    def takes(plan: Plan) -> bool:
        """Whether :meth:`prepare` takes the plan (:func:`vectorisable`)."""
        return vectorisable(plan)

    def prepare(self, plan: Plan) -> VectorPlan:
        """The plan bound, with the state's sieves its ticks' lookups ask made now."""
        prepared = prepare_vector(plan, self._db)
        for program in prepared.terms:
            for level in program.levels:
                for extender in level if len(level) > 1 else ():  # (one: no lookup)
                    if extender.role is not Role.DELTA:
                        self._db.state.sieve(extender.order, extender.depth)
        return prepared

    def step(self, prepared: VectorPlan, delta: TickDelta) -> tuple[Frame, Work]:
        """The tick's set changes, as columns of value ids and weights ±1: over the threads
        when the plan's latest step says this one will touch ``parallel_elements``."""
        work = Work()
        datoms = len(delta)
        if self.threads.count == 1 or datoms * prepared.cost.per_datom < self.parallel_elements:
            changes = distinct(prepared, self.derivations(prepared, delta, work), delta, work)
        else:
            with self._shared_reads(delta):
                derived = summed_frames(self.threads.map(
                    lambda share, counted: self.derivations(prepared, delta, counted, share),
                    work), prepared.find)
                changes = distinct(prepared, derived, delta, work, self.threads)
        prepared.cost.per_datom = work.elements / max(datoms, 1)
        return changes, work

    def derivations(self, prepared: VectorPlan, delta: TickDelta, work: Work,
                    share: Share = WHOLE) -> Frame:
        """The change of the derivation counts from ``share`` of each term's seed rows."""
        reads = [(spec.order, spec.steps, spec.weighted) for spec in prepared.seeds]
        made = {read: seed_frame(spec, delta)  # terms seeded by one read share its frame
                for read, spec in dict(zip(reads, prepared.seeds, strict=True)).items()}
        seeds = [made[read] for read in reads]
        if share.count > 1:
            seeds = [seed.gather(rows, seed.weights[rows])
                     for seed in seeds for rows in [share.positions(len(seed))]]
        return derivations(prepared, seeds, delta, work)

    def evaluate(self, prepared: VectorPlan) -> tuple[Frame, Work]:
        """The query's result over the current state: its rows, each of weight 1 (over the
        threads on a database of ``parallel_datoms``); the plan's ``full`` program must be
        one this executor takes (not None)."""
        full = prepared.full
        assert full is not None, "evaluated row at a time"
        work = Work()
        with self._db.state.scan():
            if self.threads.count == 1 or not full.levels or len(self._db) < self.parallel_datoms:
                out = self.evaluation(full, work)
            else:  # a row may come from several shares' first levels: summed, counted once
                with self._shared_reads(NO_DELTA):
                    out = summed_frames(self.threads.map(
                        lambda share, counted: self.evaluation(full, counted, share), work),
                        len(full.output))
        return Frame(out.columns, np.ones(len(out), np.int64), out.origin), work

    def evaluation(self, full: VectorProgram, work: Work, share: Share = WHOLE) -> Frame:
        """The result's rows: the full program from the one empty row, its rows of positive
        derivation count.  Over a set every derivation counts +1, so the rows ``share``
        derives are the result's rows from that share's first-level rows."""
        one = np.ones(1, np.int64)
        out = run(full, Frame([], one, np.zeros(1, np.int64)), NO_DELTA, work, share=share)
        rows = np.flatnonzero(out.weights > 0)
        return out.gather(rows, out.weights[rows])

    @contextmanager
    def _shared_reads(self, delta: TickDelta) -> Iterator[None]:
        """The arrangements ready to be read from several threads (see :mod:`threads`)."""
        delta.spine()
        with self._db.state.shared_reads():
            yield
