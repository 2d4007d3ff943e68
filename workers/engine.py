"""The embedding API: a database of datoms with live Datalog queries, in one process.

```python
engine = Engine(strategy="delta")
engine.register("tri", '{:find [?a ?b ?c] :where [...]}')   # -> current result {row: 1}
engine.transact('[[:db/add 1 :g/to 2]]')                    # -> {name: {row: ±1}}
```
One tick per transaction (``transact``) or per batch of them (``transact_many``; in pieces
of bounded size with ``transact_in_chunks``), in numbered steps:

1. parse the ops and normalise them against the current state → effective delta (in a
   batch, against the state plus the transactions before; the deltas are summed) — the
   datoms it reads brought in by the database first (:mod:`workers.database`: a database
   in Spark's state fetches them);
2. number the delta's values; it is arranged as the queries stepping read it (small dict
   tries of ids row at a time, a one-batch spine vectorised: ``TickDelta``);
3. route it to the queries whose patterns can match its attributes;
4. step each of them (old state + delta → set changes and work, decoded) — all read the
   same ``old``;
5. apply the delta to the database (the only write) and adopt the new schema;
6. re-pull the maps of queries with ``pull`` the tick may have changed (:mod:`workers.pull`).

Where the datoms live, and whether other engines share them (a writer and its followers),
is the engine's :class:`~workers.database.base.Database`'s: the engine has no branch on it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import edn_format
import numpy as np
import numpy.typing as npt

from workers import edn
from workers.arrangements import ArrangementRegistry, MemoryArrangement, PendingReader
from workers.arrangements.delta import IdDelta, TickDelta, attribute_ids, pieces
from workers.arrangements.pending import PENDING_ORDERS
from workers.arrangements.values import Numbering, ValueIds
from workers.collector import collector_paused
from workers.database import Database, WorkerStamp, open_database
from workers.datalog import compile_query
from workers.db import BUILTIN_SCHEMA, Schema, normalise, parse_tx
from workers.db.bulk import normalise_bulk, normalise_columns
from workers.db.tx import DB_ADD, DB_RETRACT, BatchOps, TxOps, parse_batch
from workers.errors import ErrorCode, TransactionError, UnknownQueryError, WorkersError
from workers.executors import Work
from workers.executors.dispatch import (
    DEFAULT_AUTO,
    VECTOR_DATOMS,
    AutoPolicy,
    Dispatch,
    Prepared,
)
from workers.executors.rows import reset, step
from workers.executors.threads import Threads, default_threads
from workers.find import Aggregation, Projection, result_of, shaped
from workers.plan import STRATEGIES, QueryPlan, explain, query_plan
from workers.plan.ir import Plan
from workers.pull import Pulling, PullReader
from workers.pull.maintain import PullReads
from workers.zset import ZSet
from workers.zset.row import Row

if TYPE_CHECKING:
    from workers.executors.spark import SparkSettings

Changes = dict[str, ZSet[Row]]


class TxReport(dict[str, ZSet[Row]]):
    """What :meth:`Engine.transact` returns: the changed queries' changes, and ``tempids``,
    the ids its tempids were given (``{"-1": 4611686018428436480}``; Datomic's report)."""

    tempids: dict[Any, int]

    def __init__(self, changes: Changes, tempids: dict[Any, int]) -> None:
        super().__init__(changes)
        self.tempids = tempids

# A batch of this many datoms or more is normalised at once when it can be (workers.db.bulk):
# its arrays' fixed costs (~0.5 ms, about a hundred NumPy calls) against ~10 µs a
# transaction one by one.  Single-datom transactions against the PEGASE grid with the
# triangle live cross over at ~40 (10: 0.5 against 0.2 ms; 100: 0.6 against 1.2; 1,000: 2.1
# against 11.9); a live worker's ticks under load are hundreds of transactions.
BULK_DATOMS = 100


@dataclass(frozen=True, slots=True)
class EngineState:
    """The database at transaction ``tx``: its value dictionary, its datoms as id columns
    ``(e, a, v)`` in EAV order, and its schema."""

    values: Numbering
    columns: tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int32]]
    schema: Schema
    tx: int


@dataclass(frozen=True, slots=True)
class Refusal:
    """A transaction of a batch that was refused, and why."""

    tx_id: int
    error: TransactionError


@dataclass(frozen=True, slots=True)
class RegisteredQuery:
    name: str
    text: Any
    plan: QueryPlan
    prepared: Prepared
    aggregation: Aggregation | Projection | None  # basis changes -> result changes
    pulling: Pulling | None = None  # result changes -> the same with pulled maps

    @staticmethod
    def of(name: str, text: Any, plan: QueryPlan, prepared: Prepared) -> RegisteredQuery:
        """A query with fresh state for its ``:find`` (aggregate groups, pulled maps)."""
        return RegisteredQuery(name, text, plan, prepared, result_of(plan.find),
                               Pulling.of(plan.find))

    @property
    def attributes(self) -> tuple[Any, ...] | None:
        """The attributes whose datoms can change the result (None: any): the plan's, and
        those its pulls read."""
        if self.pulling is None or self.plan.attributes is None:
            return self.plan.attributes
        pulled = self.pulling.attributes
        return None if pulled is None else tuple(dict.fromkeys(self.plan.attributes + pulled))


class Engine:
    """Shared arrangements, registered queries and their incremental maintenance."""

    def __init__(self, strategy: str = "delta", executor: str = "local",
                 spark: SparkSettings | None = None, auto: AutoPolicy = DEFAULT_AUTO,
                 bulk_datoms: int = BULK_DATOMS, vector_datoms: int = VECTOR_DATOMS,
                 threads: int | None = None) -> None:
        """``executor``: ``local``, ``spark`` or ``auto`` (see :mod:`workers.executors.dispatch`);
        ``spark`` says where Spark runs (embedded ``local[*]`` by default); ``bulk_datoms``:
        the batch size from which :meth:`transact_many` tries normalising all at once;
        ``vector_datoms``: the tick size from which a query steps a frame at a time
        (:mod:`workers.executors.vectorised`), when its plan allows; ``threads``: the
        threads a big vectorised step runs on (:mod:`workers.executors.threads`; None: the
        machine's cores, at most four)."""
        if strategy not in STRATEGIES:
            raise WorkersError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}",
                               code=ErrorCode.CONFIG)
        self.strategy = strategy
        self.bulk_datoms = bulk_datoms
        # What the engine and its executors read: the database, or its window.
        self.db = ArrangementRegistry()
        self.schema = BUILTIN_SCHEMA
        self.tx = 0
        self.last_work: dict[str, Work] = {}  # the last tick's, per query (its steps')
        # The last tick's transactions' tempids: {tx id: {tempid: entity id}}
        self.tempids: dict[int, dict[Any, int]] = {}
        self.dispatch = Dispatch(executor, self.db, spark, auto)
        self.dispatch.vector_datoms = vector_datoms
        self.dispatch.vector.threads = Threads(default_threads() if threads is None else threads)
        self.database: Database = open_database(self.db, self.dispatch)
        self._unapplied = False  # transact_in_chunks' pieces are still to step
        if self.database.opened is not None:  # a shared database, where it is
            self.schema, self.tx = self.database.opened
        self._queries: dict[str, RegisteredQuery] = {}
        self._by_attribute: dict[Any, set[str]] = {}
        self._any_attribute: set[str] = set()

    # -- transactions --------------------------------------------------------------------

    def transact(self, tx: Any, tx_id: int | None = None) -> TxReport:
        """Apply one transaction (EDN text or forms); return the changed queries' changes
        (weights ±1, but any weight for a bag: ``:with`` without aggregates) and the ids
        its tempids were given.

        ``tx_id`` numbers it (the worker passes its Kafka offset); by default the next number.
        A refused transaction raises :class:`TransactionError` and changes nothing.
        """
        self._writable()
        self.tx = self.tx + 1 if tx_id is None else tx_id
        forms = edn.read(tx) if isinstance(tx, str) else tx
        self.tempids = {}
        # Step 1: normalise against the current state (a big one at once when it can be).
        if isinstance(forms, list | tuple) and len(forms) >= self.bulk_datoms:
            with collector_paused():  # the parsed ops are made and freed inside
                delta = self._normalise_big(forms)
        else:
            ops = parse_tx(forms)
            self._read(BatchOps.of(ops))
            delta = self._normalise(ops)
        return TxReport(self._tick(delta), self.tempids.get(self.tx, {}))

    @property
    def following(self) -> bool:
        """Following a database another engine writes: its transactions are the writer's."""
        return self.database.replication.following

    def _writable(self) -> None:
        if self.following:
            raise WorkersError("this engine follows a Spark state another engine writes: its "
                               "database changes only through its writer",
                               code=ErrorCode.CONFIG)

    def _normalise(self, ops: TxOps) -> IdDelta:
        """Step 1 of one transaction, op by op, against the current state (under
        ``executor=spark`` the caller has fetched what it reads)."""
        normalised = normalise(ops, self.db, self.schema, self.tx)
        self.schema = normalised.schema
        if normalised.tempids:
            self.tempids[self.tx] = normalised.tempids
        return self.db.encode(normalised.delta)

    def _normalise_big(self, forms: Any) -> IdDelta:
        """Step 1 of one big transaction as :meth:`transact_many` does a batch's (the same
        delta, :mod:`workers.db.bulk`); op by op, from the same parse, when it touches the
        schema or is refused (to raise the same error)."""
        parsed = parse_batch([forms])
        if parsed.refused:
            raise parsed.refused[0][1]  # the grammar's error, as parse_tx raised it
        self._read(parsed)
        bulk = normalise_bulk(parsed, self.db, self.schema)
        if bulk is None or bulk.refused:
            return self._normalise(parsed.transaction(0))
        return bulk.delta

    def transact_columns(self, e: Any, a: Any, v: Any, added: Any = None,
                         tx_id: int | None = None) -> TxReport:
        """One transaction of datoms given as columns: a bulk import (from NumPy, Arrow,
        Parquet) without a form per datom.  ``e``: entity ids (ints); ``a``: one attribute
        keyword, or one per datom; ``v``: the values (an int array, or any sequence);
        ``added``: which datoms are added (by default all; the others are retracted).

        It is the transaction ``[[:db/add e a v] ...]`` (``:db/retract`` where not
        ``added``): the same changes and the same refusals.  Columns of plain datoms —
        long entities, values of the usual types — are normalised all at once
        (:func:`~workers.db.bulk.normalise_columns`); any other goes as forms.
        """
        self._writable()
        n = len(e)
        if (not _one_attribute(a) and len(a) != n) or len(v) != n or (
                added is not None and len(added) != n):
            raise TransactionError(f"columns of different lengths: {n} entities, "
                                   f"{'one attribute' if _one_attribute(a) else len(a)}"
                                   f" attributes, {len(v)} values"
                                   + ("" if added is None else f", {len(added)} flags"),
                                   code=ErrorCode.TX_SHAPE)
        delta = normalise_columns(e, a, v, added, self.db, self.schema, self.database.fetch)
        if delta is None:
            return self.transact(_forms(e, a, v, added), tx_id)
        self.tx = self.tx + 1 if tx_id is None else tx_id
        self.tempids = {}
        return TxReport(self._tick(delta), {})

    def transact_many(self, txs: Iterable[tuple[Any, int]]) -> tuple[Changes, list[Refusal]]:
        """Apply ``(forms, tx_id)`` transactions as one tick; return the consolidated changes
        and the refused transactions (which changed nothing).

        Step 1 normalises each transaction against the state plus the ones before it in the
        tick (a :class:`PendingReader`) — a batch of at least ``bulk_datoms`` datoms at once
        when its transactions allow (:mod:`workers.db.bulk`); the queries then step once
        with the summed delta — one Spark job for a whole catch-up batch instead of one per
        transaction.
        """
        delta, refused = self._normalise_many(txs)
        return self._tick(delta), refused

    def transact_in_chunks(self, txs: Iterable[tuple[Any, int]], chunk_datoms: int
                           ) -> tuple[Iterator[Changes], list[Refusal]]:
        """Like :meth:`transact_many`, but the summed delta is stepped ``chunk_datoms`` datoms
        at a time and each piece's changes are yielded as computed, so a tick whose change is
        enormous (retracting a hub) is never held whole.  The pieces sum to the tick's
        change; a row may come and go between them.  Any order of a consolidated delta's
        datoms passes through sets, so every piece is an ordinary tick.  The database is at
        the last transaction once the iterator is exhausted — the caller must exhaust it.
        """
        delta, refused = self._normalise_many(txs)
        self._unapplied = bool(len(delta))  # until the last piece
        if len(delta) <= chunk_datoms:  # the usual tick: the delta itself, if any
            return (self._tick(piece) for piece in [delta] if len(piece)), refused
        last = (len(delta) - 1) // chunk_datoms
        return (self._tick(piece, complete=i == last)
                for i, piece in enumerate(pieces(delta, chunk_datoms))), refused

    def _normalise_many(self, txs: Iterable[tuple[Any, int]]) -> tuple[IdDelta, list[Refusal]]:
        """Step 1 of a batch: the summed effective delta (value ids) and the refused
        transactions, in the batch's order.  The batch is parsed once, for either path."""
        self._writable()
        batch = list(txs)
        if batch:
            self.tx = batch[-1][1]
        self.tempids = {}
        with collector_paused():  # the parsed ops are made and freed inside
            delta, refused = self._normalise_parsed(parse_batch([forms for forms, _ in batch]),
                                                    [tx_id for _, tx_id in batch])
        return delta, [Refusal(batch[position][1], error)
                       for position, error in sorted(refused, key=itemgetter(0))]

    def _normalise_parsed(self, parsed: BatchOps, tx_ids: list[int]
                          ) -> tuple[IdDelta, list[tuple[int, TransactionError]]]:
        """Step 1 of a parsed batch (its transactions numbered ``tx_ids``): at once when it
        can be, else transaction after transaction."""
        self._read(parsed)
        bulk = None
        if len(parsed.ops.adds) + len(parsed.ops.retracts) >= self.bulk_datoms:
            bulk = normalise_bulk(parsed, self.db, self.schema)
        if bulk is not None:
            return bulk.delta, parsed.refused + bulk.refused
        return self._normalise_one_by_one(parsed, tx_ids)

    def _normalise_one_by_one(self, parsed: BatchOps, tx_ids: list[int]
                              ) -> tuple[IdDelta, list[tuple[int, TransactionError]]]:
        """Step 1 transaction after transaction, against the state plus the ones before:
        the summed delta and the refused transactions' positions (the grammar's too)."""
        pending = MemoryArrangement(orders=PENDING_ORDERS)
        reader = PendingReader(self.db, pending)
        refused = list(parsed.refused)
        unparsed = {position for position, _ in refused}
        for position in range(len(parsed)):
            if position in unparsed:
                continue
            try:
                normalised = normalise(parsed.transaction(position), reader, self.schema,
                                       tx_ids[position])
            except TransactionError as error:
                refused.append((position, error))
                continue
            self.schema = normalised.schema
            if normalised.tempids:
                self.tempids[tx_ids[position]] = normalised.tempids
            pending.update(self.db.encode(normalised.delta))
        return dict(pending.datoms()), refused

    def _read(self, batch: BatchOps) -> None:
        """Bring in the datoms normalising ``batch`` reads (and step the queries it may
        change with them, when the database can: :meth:`_ahead`)."""
        self.database.read_transactions(batch, self.schema, self._ahead)

    def _ahead(self, attributes: set[Any]) -> tuple[tuple[Plan, ...], PullReads | None]:
        """The plans a tick changing ``attributes`` steps remotely (on Spark), and what
        their queries' pulls read after it (as :meth:`_read_pulled` asks; None when a
        pulling query's input is not its plan's rows: aggregated, or stepped here)."""
        queries = [self._queries[name] for name in self._affected(attributes)]
        plans = self.dispatch.remote_plans([query.prepared for query in queries])
        position = {id(plan): i for i, plan in enumerate(plans)}
        pulling = [query for query in queries if query.pulling is not None]
        found = [(position[id(query.prepared.plan)], query.pulling) for query in pulling
                 if id(query.prepared.plan) in position and query.aggregation is None
                 and query.pulling is not None]
        if not pulling or len(found) < len(pulling):
            return plans, None
        return plans, PullReads(tuple((i, tuple(column.source for column in each.pulls))
                                      for i, each in found),
                                2 * max(each.depth for _, each in found))

    def _tick(self, delta: IdDelta, complete: bool = True) -> Changes:
        """Steps 2-6 of a tick whose effective delta is ``delta`` (value ids); not
        ``complete``: a piece of it, not its last (a shared database shows none)."""
        if not len(delta):
            self.database.moved(self.tx)  # a shared database's position moves all the same
            return {}
        # Step 2: the tick's delta, arranged as the queries stepping read it.
        tick = TickDelta(delta)
        value = self.db.ids.value
        # Steps 3-4: route and step the affected queries.
        changes: Changes = {}
        pulled: dict[str, ZSet[Row]] = {}  # stepped pull queries: their input's change
        affected = self._affected({value(a) for a in attribute_ids(delta)})
        stepped = self.dispatch.steps({name: self._queries[name].prepared for name in affected},
                                      tick)
        self.last_work = {name: work for name, (_, work) in stepped.items()}
        for name in affected:
            registered = self._queries[name]
            started = time.perf_counter()
            rows = step(registered.aggregation, stepped[name][0], self.db.ids)
            self.last_work[name].seconds += time.perf_counter() - started
            if registered.pulling is not None:
                pulled[name] = rows
            elif rows:
                changes[name] = rows
        # Step 5: the only write to the database (under ``auto`` Spark's copy follows it).
        self.database.apply(delta, tick, self.tx, self.schema, complete)
        self.dispatch.applied(tick)
        self._unapplied &= not complete
        # Step 6: pulled maps, re-read after the tick for the entities it may have changed.
        if pulled:
            self._read_pulled(pulled, delta)
        reader = PullReader(self.db, self.schema) if pulled else None
        for name, rows in pulled.items():
            pulling = self._queries[name].pulling
            assert pulling is not None and reader is not None
            started = time.perf_counter()
            rows = pulling.step(rows, reader, delta)
            self.last_work[name].seconds += time.perf_counter() - started
            if rows:
                changes[name] = rows
        self.database.forget()  # the tick is over: the next one reads its own
        return changes

    def _read_pulled(self, rows: Mapping[str, Mapping[Row, int]], delta: IdDelta | None) -> None:
        """Bring in what the pulls of the queries ``rows`` read (after ``delta``)."""
        pulls = [(self._queries[name].pulling, changed) for name, changed in rows.items()]
        self.database.read_pulled([(pulling, changed) for pulling, changed in pulls
                                   if pulling is not None], delta)

    @property
    def datoms(self) -> int:
        """How many datoms the database holds."""
        return self.database.datoms

    def idle(self) -> None:
        """Nothing to step now: the time goes to compacting the database in the background
        (the next ticks search one batch instead of several; docs/engine.md), and Spark's
        state, once written (docs/spark.md)."""
        self.database.idle()
        self.dispatch.idle()

    def _affected(self, attributes: set[Any]) -> list[str]:
        names = set(self._any_attribute)
        if self.schema.component_attributes():  # a pulled component reads any attribute
            names.update(name for name, q in self._queries.items() if q.pulling is not None)
        for attribute in attributes:
            names |= self._by_attribute.get(attribute, set())
        return sorted(names)

    # -- queries ---------------------------------------------------------------------------

    def register(self, name: str, query: Any, inputs: Sequence[Any] = (),
                 bootstrap: bool = True) -> ZSet[Row]:
        """Keep ``query`` live under ``name``; return its current result ``{row: 1}`` (a bag's
        rows with their multiplicities)
        (``bootstrap=False`` skips computing it, for a query resumed after a restart)."""
        if name in self._queries:
            raise WorkersError(f"query {name!r} is already registered",
                               code=ErrorCode.DUPLICATE_QUERY, form=name)
        plan = self.plan(query, inputs)
        registered = RegisteredQuery.of(name, query, plan, self._prepare(plan))
        self._queries[name] = registered
        if registered.attributes is None:
            self._any_attribute.add(name)
        else:
            for attribute in registered.attributes:
                self._by_attribute.setdefault(attribute, set()).add(name)
        if bootstrap or plan.keeps_state:
            return self._evaluate(registered)
        return {}

    def unregister(self, name: str) -> None:
        registered = self._registered(name)
        del self._queries[name]
        self._any_attribute.discard(name)
        for attribute in registered.attributes or ():
            self._by_attribute[attribute].discard(name)

    def is_bag(self, name: str) -> bool:
        """Whether the query's result is a bag (``:with`` without aggregates): its rows weigh
        their multiplicity, where a set's weigh 1."""
        return isinstance(self._registered(name).aggregation, Projection)

    def result(self, name: str) -> ZSet[Row]:
        """The current result of a registered query, evaluated over the shared arrangements."""
        return self._evaluate(self._registered(name))

    def query(self, query: Any, inputs: Sequence[Any] = ()) -> Any:
        """One-shot: evaluate ``query`` on the current database without registering it.

        The result is ``{row: 1}`` (``{row: multiplicity}`` for a bag), a list of maps when
        the query names its columns with ``:keys`` (keyword keys), ``:strs`` (strings) or
        ``:syms`` (symbols), or what its find specification asks: a list for
        ``[?x ...]``, one tuple for ``[?a ?b]``, one value for ``?x .``
        (:mod:`workers.find.shape`)."""
        plan = self.plan(query, inputs)
        rows = self._evaluate(RegisteredQuery.of("", query, plan, self._prepare(plan)))
        return shaped(plan.find.spec, plan.find.keys, rows)

    def plan(self, query: Any, inputs: Sequence[Any] = ()) -> QueryPlan:
        """Parse, check, bind and plan a query with the current statistics: data patterns
        only as delta terms of the engine's strategy, anything else as a program of derived
        relations.  A plan is evaluated next (mostly): the database's batches are merged
        first when worth it (``compact_for_scan``), and each attribute's statistics read
        once."""
        self.database.compact_for_scan()
        return query_plan(compile_query(query, inputs), self.strategy,
                          functools.cache(self.database.attribute_stats))

    def _evaluate(self, registered: RegisteredQuery) -> ZSet[Row]:
        rows = reset(registered.aggregation, self.dispatch.evaluate(registered.prepared)[0],
                     self.db.ids)
        if registered.pulling is not None:
            self.database.read_pulled([(registered.pulling, rows)], None)
            rows = registered.pulling.reset(rows, PullReader(self.db, self.schema))
            self.database.forget()
        return rows

    def seek(self, tx: int) -> None:
        """Put the position at ``tx``: the worker's position is a log offset, and the last
        offset of a batch (or a snapshot's) may be one no transaction here was numbered by
        (an undecodable record).  A shared database's writer stamps its version with it
        — or the version a tick's pieces still to step end with (a follower is where its
        writer put it)."""
        self.tx = tx
        if not self.following and not self._unapplied:
            self.database.moved(tx)

    def explain(self, query: Any, inputs: Sequence[Any] = ()) -> str:
        return explain(self.plan(query, inputs))

    def state(self, shared: bool = False) -> EngineState:
        """The database as a snapshot can store it (the queries are registered anew): a copy
        of the value dictionary and the datoms' id columns, nothing shared with the engine —
        unless ``shared``: then the dictionary is the engine's own, for a state written out
        before the next transaction (the worker's snapshots: no second dictionary)."""
        columns = self.database.columns()  # Spark's: mapped files, not on the heap
        return EngineState(self.db.ids if shared else self.db.ids.copy(), columns, self.schema,
                           self.tx)

    def dictionary(self, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
                   objects: list[Any]) -> ValueIds:
        """A snapshot's dictionary (its entries) as this engine keeps it: in memory, or
        under ``executor=spark`` in files, written as it is read (a worker's restore, which
        then adopts it: :meth:`restore`)."""
        return self.database.dictionary(kinds, payloads, objects)

    def restore(self, state: EngineState, adopt: bool = False) -> None:
        """Take a snapshot's database; registered queries are bound to it anew (their
        constants are numbered in the snapshot's dictionary).  The dictionary is copied (the
        state may be restored again elsewhere) unless ``adopt``: the state is handed over,
        used nowhere else (a snapshot just read), and the engine goes on numbering in it —
        no second copy of millions of values while the first is alive."""
        self._writable()
        values = state.values if adopt else state.values.copy()
        self.database.restore(values, state.columns, state.tx, state.schema)
        self.dispatch.restored()
        self.schema = state.schema  # before the queries' state is rebuilt: pulls read it
        self._bind_anew()
        self.tx = state.tx

    def _bind_anew(self) -> None:
        """Every query bound anew to the database and its dictionary (its constants
        numbered again), and the state of those that keep one rebuilt from the database."""
        for name, registered in self._queries.items():
            registered = self._queries[name] = replace(
                registered, prepared=self._prepare(registered.plan))
            if registered.plan.keeps_state:
                self._evaluate(registered)

    def stamp_refusals(self, refused: Sequence[tuple[int, str, str]]) -> None:
        """The refused transactions whose dead letters are not committed yet (offset, code,
        reason): a shared database's writer stamps its next versions with them, so that
        a writer taking over writes their dead letters (the replication's stamp)."""
        self.database.replication.stamp(tuple(refused))

    def stamped_refusals(self) -> WorkerStamp:
        """What the shared database's version this engine is at was stamped with."""
        return self.database.replication.stamped()

    def lead(self) -> bool:
        """Following a shared database, become its writer (its writer stopped: another
        engine of the fleet writes no more) from the writer's newest version, which this
        engine must be at: False when it is not (:meth:`follow` first).  Values it numbered
        itself take the writer's numbering, and its queries are bound anew to the writer's
        dictionary (their plans number functions' results in the dictionary they were bound
        to)."""
        if not self.database.replication.lead():
            return False
        self._bind_anew()
        return True

    def step_down(self) -> None:
        """Writing a shared database, stop (another engine takes writing over: the fleet's
        writer moved) and follow it from this version on, its queries bound anew to a
        follower's dictionary."""
        self.database.replication.step_down()
        self._bind_anew()

    def follow(self) -> Changes:
        """Following a database another engine writes (``SparkSettings.follow``): step the
        queries to the writer's newest version — the changes since the version this engine
        was at, as a tick's.  Raises :class:`~workers.executors.spark.shared.FollowerBehind`
        when it cannot (the writer replaced its state, or no longer keeps the versions
        between): then :meth:`follow_anew`."""
        caught = self.database.replication.follow()
        if caught is None:
            return {}
        if caught.renumbered:  # against the version it is at, before the new schema
            self._bind_anew()
        self.schema, self.tx = caught.schema, caught.position
        if not len(caught.delta):  # versions that cancel out: nothing to step
            self.database.replication.reached()
            return {}
        return self._tick(caught.delta)

    def follow_anew(self) -> None:
        """Following a database another engine writes and unable to step to its writer's
        newest version (:meth:`follow` raised ``FollowerBehind``), open it anew there, as a
        follower starting does; the queries are bound anew to it.  What they changed
        between is not known here: the caller takes their results anew (a worker, from
        their committed views)."""
        self.schema, self.tx = self.database.replication.follow_anew()
        self._bind_anew()

    @property
    def queries(self) -> tuple[str, ...]:
        return tuple(self._queries)

    def _prepare(self, plan: QueryPlan) -> Prepared:
        return self.dispatch.prepare(plan.body)

    def _registered(self, name: str) -> RegisteredQuery:
        try:
            return self._queries[name]
        except KeyError:
            raise UnknownQueryError(f"no query named {name!r}; registered: "
                                    f"{', '.join(sorted(self._queries)) or 'none'}",
                                    form=name) from None


def _forms(e: Any, a: Any, v: Any, added: Any) -> list[list[Any]]:
    """Columns of datoms as the transaction's forms."""
    n = len(e)
    entities, values = (list(c.tolist() if isinstance(c, np.ndarray) else c) for c in (e, v))
    attributes = [a] * n if _one_attribute(a) else list(a)
    ops = [DB_ADD] * n if added is None else [DB_ADD if x else DB_RETRACT for x in added]
    return [list(datom) for datom in zip(ops, entities, attributes, values, strict=True)]


def _one_attribute(a: Any) -> bool:
    """Whether a column transaction's ``a`` is one attribute for every datom."""
    return isinstance(a, edn_format.Keyword | str)
