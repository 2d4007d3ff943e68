"""What runs inside Spark's tasks: the local executors' own code, over the state's files.

Every function here is a ``mapInArrow`` body: it takes the record batches of its partition
and yields record batches of id rows (columns ``c0..c{n-1}``, weight ``w``).  Each task
opens the state at the step's version (:func:`~workers.executors.spark.cache.open_state`,
cached per Python worker), binds the plan to it and to the tick's delta (shipped with the
task: a tick is small), and runs the executor the local engine runs — the vectorised one
when it takes the plan, else row at a time — for its :class:`Share`:

- :func:`derive` (a step's first stage): the derivation change from the seed rows of its
  share (the input rows are the share numbers, one per partition);
- :func:`distinguish` (a step's second stage, after a shuffle by row): all the derivation
  changes of its rows, summed, then ``distinct`` against the same old state;
- :func:`step` (a small tick's one stage, one task): both of the above;
- :func:`speculate` (``executor=spark``, a small tick's only job): :func:`fetch` and
  :func:`step` at once, by the delta the task assumes (:class:`Speculation`);
- :func:`evaluate` (a bootstrap, one stage): the result's rows of its share of the first
  variable's values;
- :func:`join` (a join program of derived relations, one stage): its share of the rows
  handed in, through the program's levels;
- :func:`fetch` (what the driver reads of the database, :mod:`window`): the datoms of its
  share of the entities asked for;
- :func:`statistics` (for the planner): each attribute's distinct entities and values,
  counted by one task while every task opens the state;
- :func:`compact` (the state's compaction, :mod:`state`): its bucket of the state summed
  and written as a file of the new base.

The tasks read ids only: a plan's constants come numbered by the driver (:class:`PlanIds`).
Each runs with its Python worker's freed memory kept for its next arrays, and given back
when it ends (:func:`~workers.executors.heap.reusing_heap`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from workers.arrangements import ArrangementRegistry, IndexOrder, MemoryArrangement
from workers.arrangements.batch import (
    Ids,
    Ints,
    consolidate,
    sort_order,
    sorted_distinct,
    sorted_sum,
)
from workers.arrangements.delta import DatomColumns, TickDelta
from workers.db.bulk import assumed_delta
from workers.executors.distinct import set_changes
from workers.executors.generic_join import compile_program, run
from workers.executors.heap import reusing_heap
from workers.executors.local import LocalExecutor, PreparedPlan
from workers.executors.share import WHOLE, Share
from workers.executors.spark.cache import PlanIds, open_state
from workers.executors.spark.codec import (
    QUERY,
    WEIGHT,
    arrow_schema,
    by_query,
    column,
    from_columns,
    from_frame,
    from_rows,
    tag_rows,
    to_rows,
)
from workers.executors.spark.requests import Compaction, Fetch, Rows, Speculation, Tick
from workers.executors.spark.state import Manifest, index_here, summed, write_part
from workers.executors.terms import derivation_change
from workers.executors.vectorised import (
    VectorExecutor,
    VectorPlan,
    consolidated,
    distinct,
)
from workers.executors.work import Work
from workers.plan.ir import Plan

_NO_ROWS = np.zeros(0, np.int64)
_NO_DATOMS = (_NO_ROWS, _NO_ROWS, _NO_ROWS)


class Bound:
    """One task's view: the state at the step's version and the tick's delta, with the
    executors bound to them."""

    def __init__(self, manifest: Manifest, constants: dict[Any, int],
                 delta: DatomColumns) -> None:
        self.db: ArrangementRegistry = open_state(manifest)
        self.db.ids = PlanIds(constants)
        self.delta = TickDelta(delta)
        self.vector = VectorExecutor(self.db)
        self._local = LocalExecutor(self.db)
        self._bound: dict[int, tuple[VectorPlan | None, PreparedPlan | None]] = {}

    def plan(self, plan: Plan) -> tuple[VectorPlan | None, PreparedPlan | None]:
        """``plan`` bound once per task (a small tick derives, then takes ``distinct``, in
        one): vectorised when the vectorised executor takes it, else row at a time."""
        found = self._bound.get(id(plan))
        if found is None:
            vector = self.vector.prepare(plan) if self.vector.takes(plan) else None
            found = self._bound[id(plan)] = (vector,
                                             self.local(plan) if vector is None else None)
        return found

    def arranged(self) -> MemoryArrangement:
        """The tick's delta in tries, for the row-at-a-time code: filled on first use only
        (a vectorised step reads the columns; arranging 10^5 datoms costs a second)."""
        return self._local.input.feed(self.delta)

    def local(self, plan: Plan) -> PreparedPlan:
        self.arranged()
        prepared = self._local.prepare(plan)
        assert isinstance(prepared, PreparedPlan)
        return prepared


@reusing_heap
def derive(tick: Tick, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every query's derivation change of this task's shares, tagged with its number."""
    yield from _derived(Bound(tick.manifest, tick.constants, tick.delta), tick,
                        _shares(batches, tick.shares))


def _derived(bound: Bound, tick: Tick, shares: Iterable[Share]) -> Iterator[pa.RecordBatch]:
    for share in shares:
        for query, plan in enumerate(tick.plans):
            vector, local = bound.plan(plan)
            work = Work()
            if local is not None:
                rows = from_rows(derivation_change(local.terms, work, share), len(plan.find))
            else:
                assert vector is not None
                rows = from_frame(bound.vector.derivations(vector, bound.delta, work, share))
            tick.counters.add(query, work)
            yield tag_rows(rows, query, tick.width)


@reusing_heap
def distinguish(tick: Tick, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    table = pa.Table.from_batches(list(batches), schema=arrow_schema(tick.width, tagged=True))
    if table.num_rows:
        yield from _set_changes(Bound(tick.manifest, tick.constants, tick.delta), tick, table)


@reusing_heap
def step(tick: Tick, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A whole step in one task (a small tick): :func:`derive` then :func:`distinguish`,
    over one binding of the state and the plans."""
    yield from _stepped(tick, _shares(batches, tick.shares))


def _stepped(tick: Tick, shares: Iterable[Share]) -> Iterator[pa.RecordBatch]:
    bound = Bound(tick.manifest, tick.constants, tick.delta)
    derived = pa.Table.from_batches(list(_derived(bound, tick, shares)),
                                    schema=arrow_schema(tick.width, tagged=True))
    if derived.num_rows:
        yield from _set_changes(bound, tick, derived)


@reusing_heap
def speculate(request: Speculation, batches: Iterable[pa.RecordBatch]
              ) -> Iterator[pa.RecordBatch]:
    """:func:`fetch` and :func:`step` in one task, the step's delta assumed: the queries'
    set changes tagged with their numbers, the datoms read tagged ``len(plans)``, the
    assumed delta ``len(plans) + 1``, what the pulls read after it ``len(plans) + 2``."""
    list(batches)  # one share: the whole tick
    tick = request.tick
    db = open_state(tick.manifest)
    read = _fetched(db, request.read, WHOLE)
    delta = assumed_delta(db, request.events)
    queries = len(tick.plans)
    yield tag_rows(from_columns(read, np.ones(len(read[0]), np.int64)), queries, tick.width)
    yield tag_rows(from_columns((delta.e, delta.a, delta.v), delta.w), queries + 1,
                  tick.width)
    stepped = list(_stepped(dataclasses.replace(tick, delta=delta), [WHOLE])
                   ) if len(delta) else []
    yield from stepped
    if request.pulls is not None:
        by_query = {int(batch.column(QUERY)[0].as_py()): batch for batch in stepped
                    if batch.num_rows}

        def rows(query: int, c: int) -> Ints:
            found = by_query.get(query)
            return _NO_ROWS if found is None else found.column(c).to_numpy().astype(np.int64)
        seeds = request.pulls.seeds(rows, delta)
        after = _walked(_datoms_after(db, delta), seeds, _NO_DATOMS, request.pulls.hops)
        yield tag_rows(from_columns(after, np.ones(len(after[0]), np.int64)), queries + 2,
                      tick.width)


def _set_changes(bound: Bound, tick: Tick, table: pa.Table) -> Iterator[pa.RecordBatch]:
    """Each query's set changes of its derivation changes in ``table`` (summed here)."""
    for query, (plan, part) in enumerate(zip(tick.plans, by_query(table, len(tick.plans)),
                                             strict=True)):
        if part.num_rows:
            work = Work()
            changes = _query_set_changes(bound, plan, part, work)
            tick.counters.add(query, work)
            yield tag_rows(changes, query, tick.width)


def _query_set_changes(bound: Bound, plan: Plan, table: pa.Table, work: Work
                       ) -> pa.RecordBatch:
    width = len(plan.find)
    vector, local = bound.plan(plan)
    if local is not None:
        rows = to_rows(table, width)
        return from_rows(set_changes(local.support, rows, work), width)
    assert vector is not None
    columns = [table.column(column(i)).to_numpy() for i in range(width)]
    derivations = consolidated(columns, table.column(WEIGHT).to_numpy())
    return from_frame(distinct(vector, derivations, bound.delta, work))


@reusing_heap
def evaluate(tick: Tick, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    (plan,) = tick.plans
    bound = Bound(tick.manifest, tick.constants, tick.delta)
    bound.db.state.compact_for_scan()  # as a local evaluation (Dispatch.evaluate) does
    vector = bound.vector.prepare(plan) if bound.vector.takes(plan) else None
    full = None if vector is None else vector.full
    local = bound.local(plan) if full is None else None
    with bound.db.state.scan():  # the scan's bands are freed, not kept in the worker's cache
        work = Work()
        for share in _shares(batches, tick.shares):
            if local is not None:  # over a set, every derivation counts +1
                rows = run(local.full, {(): 1}, work, share)
                yield from_rows(dict.fromkeys(rows, 1), len(plan.full.output))
            else:
                assert full is not None
                yield from_frame(bound.vector.evaluation(full, work, share))
        tick.counters.add(0, work)


@reusing_heap
def join(task: Rows, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    bound = Bound(task.manifest, task.constants, task.delta)
    program = compile_program(task.program, bound.db, bound.arranged(), task.relations)
    work = Work()
    for share in _shares(batches, task.shares):
        yield from_rows(run(program, share.rows(task.rows), work), len(task.program.output))
    task.counters.add(0, work)


@reusing_heap
def fetch(request: Fetch, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The datoms of this task's share of the entities and values asked for (keyed by the
    id: ``id % shares``), each once, as rows ``(e, a, v)`` of weight 1."""
    db = open_state(request.manifest)
    for share in _shares(batches, request.shares):
        datoms = _fetched(db, request, share)
        yield from_columns(datoms, np.ones(len(datoms[0]), np.int64))


def _fetched(db: ArrangementRegistry, request: Fetch, share: Share) -> tuple[Ints, Ints, Ints]:
    """:func:`fetch`'s datoms of one share, in EAV order."""
    forward = request.forward[share.keys(request.forward)]
    backward = request.backward[share.keys(request.backward)]
    pairs = request.pairs[share.keys(request.pairs[:, 0])]
    triples = request.triples[share.keys(request.triples[:, 0])]
    under, present = _under(db, pairs), _present(db, triples)
    of = _of_attributes(db, request.attributes, share)
    e, a, v = (np.concatenate([under[i], present[i], of[i]]).astype(np.int64)
               for i in range(3))
    return _walked(partial(_datoms_of, db), sorted_distinct(np.concatenate([forward, backward])),
                   (e, a, v), request.hops, forward, backward)


def _of_attributes(db: ArrangementRegistry, attributes: Ints, share: Share
                   ) -> tuple[Ints, Ints, Ints]:
    """Every datom of ``attributes`` whose entity is in ``share``."""
    rows, (e, v), _ = db.state.enumerations(IndexOrder.AEV, attributes[:, None].astype(np.int64))
    a = attributes[rows].astype(np.int64)
    mine = share.keys(e.astype(np.int64))
    return e[mine].astype(np.int64), a[mine], v[mine].astype(np.int64)


DatomsOf = Callable[[Ints, Ints], tuple[Ints | Ids, Ints | Ids, Ints | Ids]]


def _walked(datoms_of: DatomsOf, seen: Ints, found: tuple[Ints, Ints, Ints], hops: int,
            forward: Ints | None = None, backward: Ints | None = None
            ) -> tuple[Ints, Ints, Ints]:
    """``found`` and the datoms ``datoms_of(forward, backward)`` gives (both ``seen`` by
    default), then ``hops`` times those of every id they hold not ``seen`` yet: each once,
    in EAV order."""
    first = datoms_of(seen if forward is None else forward, seen if backward is None else
                      backward)
    e, a, v = (np.concatenate([old, new.astype(np.int64)]) for old, new in zip(
        found, first, strict=True))
    for _ in range(hops):
        held = sorted_distinct(np.concatenate([e, v]))
        frontier = held[~np.isin(held, seen)]
        if not len(frontier):
            break
        seen = sorted_distinct(np.concatenate([seen, frontier]))
        more = datoms_of(frontier, frontier)
        e, a, v = (np.concatenate([old, new.astype(np.int64)]) for old, new in zip(
            (e, a, v), more, strict=True))
    order = sort_order(e, a, v)
    (e, a, v), _ = consolidate((e[order], a[order], v[order]), None)
    return e, a, v


def _datoms_of(db: ArrangementRegistry, forward: Ints, backward: Ints) -> tuple[Ids, Ids, Ids]:
    """The datoms ``[x _ _]`` for ``x`` in ``forward`` and ``[_ _ x]`` for ``x`` in
    ``backward`` (a datom may come twice)."""
    rows, (a, v), _ = db.state.enumerations(IndexOrder.EAV, forward[:, None].astype(np.int64))
    back, (a2, e2), _ = db.state.enumerations(IndexOrder.VAE,
                                              backward[:, None].astype(np.int64))
    return (np.concatenate([forward[rows], e2]), np.concatenate([a, a2]),
            np.concatenate([v, backward[back]]))


def _datoms_after(db: ArrangementRegistry, delta: DatomColumns) -> DatomsOf:
    """:func:`_datoms_of` in the state after ``delta``: the datoms found each once, plus
    the delta's that hold a wanted id, summed; those left present."""
    def datoms_of(forward: Ints, backward: Ints) -> tuple[Ints, Ints, Ints]:
        e, a, v = (c.astype(np.int32) for c in _datoms_of(db, forward, backward))
        e, a, v, _ = sorted_sum(e, a, v, np.ones(len(e), np.int64))  # each once
        touched = np.isin(delta.e, forward) | np.isin(delta.v, backward)
        e, a, v, w = sorted_sum(np.concatenate([e, delta.e[touched]]),
                                np.concatenate([a, delta.a[touched]]),
                                np.concatenate([v, delta.v[touched]]),
                                np.concatenate([np.ones(len(e), np.int64), delta.w[touched]]))
        present = w > 0
        return (e[present].astype(np.int64), a[present].astype(np.int64),
                v[present].astype(np.int64))
    return datoms_of


def _under(db: ArrangementRegistry, pairs: Ints) -> tuple[Ints, Ints, Ints]:
    """The datoms ``[e a _]`` for each row ``(e, a)`` of ``pairs``."""
    rows, (v,), _ = db.state.enumerations(IndexOrder.EAV, pairs) if len(pairs) else (
        _NO_ROWS, (_NO_ROWS,), _NO_ROWS)
    return pairs[rows, 0], pairs[rows, 1], v.astype(np.int64)


def _present(db: ArrangementRegistry, triples: Ints) -> tuple[Ints, Ints, Ints]:
    """The rows of ``triples`` that are datoms of the state."""
    if len(triples):
        triples = triples[db.state.weights(IndexOrder.EAV, triples) > 0]
    return triples[:, 0], triples[:, 1], triples[:, 2]


@reusing_heap
def statistics(manifest: Manifest, batches: Iterable[pa.RecordBatch]
               ) -> Iterator[pa.RecordBatch]:
    """Per attribute id: how many distinct entities and distinct values it has, counted
    in the AEV and AVE indexes as the local registry counts them — not by sorting the
    database's columns (~10 s at 10^7 datoms).  Every task opens the state and merges it
    into one batch, as the evaluation that follows will (so each Python worker starts it
    warm, all at once); the first share counts."""
    shares = [share.index for share in _shares(batches, 1)]
    state = open_state(manifest).state
    state.compact_for_scan()
    if 0 not in shares:
        return
    attributes = sorted(state.propose(IndexOrder.AEV, ()))
    yield from_columns([np.array(attributes, np.int64),
                         np.array([state.count(IndexOrder.AEV, (a,)) for a in attributes],
                                  np.int64),
                         np.array([state.count(IndexOrder.AVE, (a,)) for a in attributes],
                                  np.int64)], np.ones(len(attributes), np.int64))


@reusing_heap
def compact(request: Compaction, batches: Iterable[pa.RecordBatch]
            ) -> Iterator[pa.RecordBatch]:
    """Each bucket of this partition: the state's datoms of its entities summed, written as
    one file; a row ``(bucket, rows)``."""
    manifest = request.manifest
    for share in _shares(batches, request.buckets):
        columns = summed(manifest, share.index, request.buckets)
        part = write_part(manifest.location, request.name(share.index), columns,
                          manifest.version)
        yield from_columns([np.array([share.index])], np.array([part.rows]))


@reusing_heap
def index(manifest: Manifest, name: str, batches: Iterable[pa.RecordBatch]
          ) -> Iterator[pa.RecordBatch]:
    """The base of ``manifest`` built into its four orders and written as the file ``name``
    (:func:`~workers.executors.spark.state.index_here`, in one task); a row ``(0, rows)``."""
    for _ in batches:
        index_here(manifest, name)
    yield from_columns([np.array([0])], np.array([manifest.base_rows]))


def _shares(batches: Iterable[pa.RecordBatch], count: int) -> Iterator[Share]:
    """The shares this partition holds (its input rows are share numbers)."""
    for batch in batches:
        for index in batch.column(0).to_pylist():
            yield Share(index, count)


