"""The driver's database under ``executor=spark``: a window on the state Spark holds.

Under ``executor=spark`` the state files (:mod:`~workers.executors.spark.state`) are the
database, and the driver holds no datoms: it keeps the schema, and reads the value
dictionary in the state too — the values numbered lately in memory, the others in the
state's files (:class:`~workers.executors.spark.state_dictionary.StateDictionary`).
What the driver itself reads — the datoms a tick's transactions are normalised against,
the entities a pull shows — it first fetches in one Spark job keyed by entity
(:func:`~workers.executors.spark.tasks.fetch`) into a small registry, which the normalisers
and the pull reader read as they read the whole database locally: the same code, so the
same semantics.  A tick's transactions read no more than their ops name (so the fetch is
bounded by the tick, not by the degree of the entities it touches):

- ``[:db/add e a v]`` and ``[:db/retract e a v]``: whether that datom is present;
- a cardinality-one add and ``[:db/retract e a]``: the values of ``a`` on ``e``;
- ``[:db/retractEntity e]``: every datom of ``e``, and when the schema has references,
  every datom whose value is ``e``;
- a transaction that touches the schema (it may change what the others read): every datom
  of every entity named, and of every attribute it redefines (the data must allow it);
- a batch naming entities by tempid, lookup ref or unique value: the datoms of the entities
  it names, of the owners of the unique values and lookup refs it names, and one hop on.

The window holds what one tick reads while the tick runs; it is emptied after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from workers.arrangements import ArrangementRegistry
from workers.arrangements.batch import Ids, Ints, sorted_distinct
from workers.arrangements.spilled import SpilledValueIds, TieredValueIds
from workers.arrangements.values import Numbering
from workers.db.bulk import batch_events, by_identity, lookup_column, needs_resolving
from workers.db.codec import decode_schema, encode_schema
from workers.db.resolve import named
from workers.db.schema import BUILTIN_SCHEMA, SCHEMA_ATTRIBUTES, Schema
from workers.db.tx import BatchOps, LookupRef, TempId
from workers.executors.spark.shared import FollowerIds, StateFollower
from workers.executors.spark.state import Marks
from workers.executors.spark.state_dictionary import StateDictionary
from workers.plan.ir import Plan

if TYPE_CHECKING:
    from workers.executors.spark.executor import SparkExecutor
    from workers.pull.maintain import PullReads


_NONE = np.zeros(0, np.int32)
_NO_IDS = np.zeros(0, np.int64)
_NO_KEYS = {width: np.zeros((0, width), np.int64) for width in (2, 3)}


class StateWindow:
    """Fills ``db`` (the engine's registry) with the datoms the driver is about to read."""

    def __init__(self, db: ArrangementRegistry, spark: SparkExecutor,
                 memory_values: int) -> None:
        """``memory_values``: the values of the dictionary kept in memory."""
        self.db, self._spark, self._memory_values = db, spark, memory_values
        opened = spark.state.opened  # a shared state, followed or written on
        self.values: TieredValueIds | FollowerIds
        self.datoms = len(db)  # the database's size, kept from the applied deltas
        # what a shared state is stamped with (Marks)
        self._position, self._schema, self._complete = 0, BUILTIN_SCHEMA, True
        self.refused: tuple[tuple[int, str, str], ...] = ()
        if opened is not None:  # a follower numbers values of its own; a writer its writer's
            self.values = opened.ids if spark.state.follower is not None else opened.ids.replica
            self.datoms, self._position = opened.marks.datoms, opened.marks.position
            self._schema = decode_schema(opened.marks.schema)
            db.ids = self.values
        self._version = 0  # ticks applied: the statistics' key
        self._statistics: tuple[int, dict[int, tuple[int, int]]] | None = None
        spark.state.marks = self.marks
        spark.state.hold_dictionary()
        manifest = spark.state.manifest()  # the state exists from the start: ticks append
        if opened is None:  # written with the engine's dictionary, read in the state now
            self.numbering(StateDictionary(manifest, memory_values))

    def read_transactions(self, batch: BatchOps, schema: Schema,
                          steps: Callable[[set[Any]], tuple[tuple[Plan, ...], PullReads | None]]
                          ) -> None:
        """The datoms normalising ``batch`` against ``schema`` reads (the module's list),
        their keys found a column at a time (a catch-up tick names 10^5 datoms).

        A small batch of plain datoms is read in the job that also steps the plans of the
        queries its attributes may change (``steps``) by the delta the task assumes from
        the batch and the state, and reads what their pulls will read after it
        (:meth:`SparkExecutor.read_and_step`): when normalising here gives that delta —
        the usual case — the tick is one Spark job, not two or three."""
        ops = batch.ops
        if needs_resolving(batch, schema) or (ops.retract_entities
                                              and schema.component_attributes()):
            self._read_resolving(batch, schema)
            return
        backward = self.ids_of(ops.retract_entities if schema.ref_attributes() else ())
        datoms = ops.adds + ops.retracts
        attributes, of_datom = by_identity([datom[1] for datom in datoms])
        if any(attribute in SCHEMA_ATTRIBUTES for attribute in attributes):
            entities = [datom[0] for datom in datoms]
            entities += [e for e, _ in ops.retract_attributes]
            self.read(self.ids_of(entities + ops.retract_entities), backward,
                      attributes=self._redefined(batch))
            return
        plain = not (len(backward) or ops.retract_attributes)
        plans, pulls = (steps(set(attributes)) if plain and len(datoms) < self._spark.split_datoms
                        else ((), None))
        if plans:  # the batch's values numbered once, for the read and the assumed delta
            events = batch_events(self.db.ids, schema, batch)
            columns = np.stack([events.e, events.a, events.v], axis=1).astype(np.int64)
            read = _distinct(events.entities.astype(np.int64), _NO_IDS,
                             columns[events.one, :2], columns[~events.one])
            self.db.load(self.db.ids, self._spark.read_and_step(read, events, plans, pulls))
            return
        one = np.array([schema[a].cardinality_one for a in attributes], bool)[of_datom]
        one[len(ops.adds):] = False  # a retraction reads its own datom only
        e, a, v = (lookup_column(self.db.ids, [datom[i] for datom in datoms]) for i in range(3))
        pairs = np.concatenate([np.stack([e[one], a[one]], axis=1),
                                self._keys(ops.retract_attributes, 2)])
        triples = np.stack([e[~one], a[~one], v[~one]], axis=1)
        self.read(self.ids_of(ops.retract_entities), backward, pairs=_known(pairs),
                  triples=_known(triples))

    def _read_resolving(self, batch: BatchOps, schema: Schema) -> None:
        """What a batch naming entities by tempid, lookup ref or unique value reads
        (:mod:`workers.db.resolve`): the datoms of the entities it names, those holding the
        unique values and lookup refs it names (their owners), and one hop on (the owners'
        datoms).  An entity it retracts is read with the refs pointing at it, and so are
        its components, found a level at a time (each read replaces the last)."""
        entities, values = named(batch.ops, schema)
        forward, backward = self.ids_of(entities), self.ids_of(values)
        self.read(forward, backward, hops=1, attributes=self._redefined(batch))
        retracted: set[Any] = set()
        while batch.ops.retract_entities and schema.ref_attributes():
            found = retracted | self._retracted(batch.ops.retract_entities, schema)
            if found == retracted:
                return
            retracted = found
            ids = self.ids_of(retracted)
            self.read(np.concatenate([forward, ids]), np.concatenate([backward, ids]), hops=1)

    def _redefined(self, batch: BatchOps) -> Ints:
        """The attributes whose schema ``batch`` changes: a change the data breaks is
        refused, so their datoms are read (:func:`~workers.db.normalise.normalise`)."""
        ops = batch.ops
        return self.ids_of({datom[0] for datom in ops.adds + ops.retracts
                            if datom[1] in SCHEMA_ATTRIBUTES})

    def _retracted(self, entities: list[Any], schema: Schema) -> set[Any]:
        """The entities retracting ``entities`` retracts, as far as the window holds them:
        themselves (a lookup ref's owner) and their components, recursively."""
        found: set[Any] = set()
        stack = [resolved for e in entities
                 if (resolved := self._entity(e)) is not None]
        while stack:
            e = stack.pop()
            if e not in found:
                found.add(e)
                stack += [v for a in schema.component_attributes() for v in self.db.values(e, a)]
        return found

    def _entity(self, e: Any) -> Any:
        """An op's entity as the window resolves it: a lookup ref's owner (None: unknown)."""
        if type(e) is LookupRef:
            return next((x for x, _, _ in self.db.referrers(e.value, e.attribute)), None)
        return None if type(e) is TempId else e

    def read_datoms(self, pairs: Ints, triples: Ints) -> None:
        """The datoms under the ``(e, a)`` rows of ``pairs`` (ids), and those of the
        ``(e, a, v)`` rows of ``triples`` that are present: what normalising columns reads."""
        self.read(_NO_IDS, _NO_IDS, pairs=pairs, triples=triples)

    def read(self, forward: Ints, backward: Ints, hops: int = 0, pairs: Ints = _NO_KEYS[2],
             triples: Ints = _NO_KEYS[3], attributes: Ints = _NO_IDS) -> None:
        """The datoms of the entity ids ``forward``, those whose value is one of
        ``backward``, and ``hops`` times more those of every id they hold; those under the
        ``(e, a)`` rows of ``pairs``; those of the ``(e, a, v)`` rows of ``triples`` that are
        present; every datom of the ``attributes`` — replacing what the window held."""
        if len(forward) or len(backward) or len(pairs) or len(triples) or len(attributes):
            self.db.load(self.db.ids, self._spark.fetch(
                *_distinct(forward, backward, pairs, triples), hops=hops,
                attributes=sorted_distinct(attributes) if len(attributes) else None))
        else:
            self.forget()

    def forget(self) -> None:
        """Empty the window (a tick is over: the next fetches its own), drop the pages of
        the dictionary's files it read and any step done ahead."""
        self.db.load(self.values, (_NONE, _NONE, _NONE))
        self.values.release()
        self._spark.forget_step()

    def applied(self, change: int, position: int, schema: Schema, complete: bool) -> None:
        """A tick changed the number of datoms by ``change``; the database is at the
        transaction numbered ``position`` and its schema is ``schema`` — once the tick is
        ``complete`` (a large one is applied in pieces)."""
        self.datoms += change
        self._version += 1
        self._position, self._schema, self._complete = position, schema, complete

    def numbering(self, values: TieredValueIds | FollowerIds) -> None:
        """The dictionary is ``values`` from now on (a follower took over writing, or a
        writer stepped down)."""
        self.values = self.db.ids = values

    def opened_anew(self, opened: StateFollower) -> None:
        """A follower opened its state anew at ``opened``'s version (it could not step
        there): the dictionary, size, position and schema are that version's."""
        self.numbering(opened.ids)
        self.datoms, self._position = opened.marks.datoms, opened.marks.position
        self._schema = decode_schema(opened.marks.schema)
        self._version += 1  # the statistics are read again
        self.forget()

    def moved(self, position: int) -> None:
        """A tick that changed nothing put the database at the transaction ``position``."""
        self._position, self._complete = position, True
        self._spark.state.moved()

    def marks(self) -> Marks:
        """What the state's version is stamped with, when it is shared."""
        return Marks(self._position, self.datoms, encode_schema(self._schema), self.db.ids.size,
                     self.refused, self._complete)

    def attribute_stats(self, a: Any) -> tuple[int, int]:
        """``(distinct entities, distinct values)`` of attribute ``a``, from one Spark job per
        version of the state that a plan asks about."""
        if self._statistics is None or self._statistics[0] != self._version:
            self._statistics = self._version, self._spark.statistics()
        key = self.db.ids.lookup(a)
        return (0, 0) if key is None else self._statistics[1].get(key, (0, 0))

    def columns(self) -> tuple[Ids, Ids, Ids]:
        """The whole database's int32 columns in EAV order (a snapshot), read from the
        state a range at a time into files they map (:meth:`StateStore.columns`)."""
        return self._spark.state.store.columns()

    def dictionary(self, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
                   objects: list[Any]) -> SpilledValueIds:
        """A snapshot's dictionary as this driver keeps it: written to files as it is read
        (:meth:`SpilledValueIds.from_entries`), never whole in memory."""
        return SpilledValueIds.from_entries(kinds, payloads, objects, self._memory_values)

    def restored(self, values: Numbering, columns: tuple[Ids, Ids, Ids], position: int,
                 schema: Schema) -> None:
        """A snapshot's whole database (at ``position``, of ``schema``) becomes the state,
        written from its EAV columns as they are (the driver builds no arrangement of it);
        its dictionary ``values`` is written in the state with it, and read there from
        then on."""
        self.datoms = len(columns[0])
        self._version += 1
        self._position, self._schema = position, schema
        self.db.ids = values  # before the reset, which writes it in the state
        self.numbering(StateDictionary(self._spark.state.reset(*columns), self._memory_values))
        self.forget()

    def ids_of(self, values: Iterable[Any]) -> Ints:
        """The ids of the values that have one (a value never numbered is in no datom)."""
        ids = lookup_column(self.db.ids, list(values)).astype(np.int64)
        return ids[ids >= 0]

    def _keys(self, keys: list[tuple[Any, ...]], width: int) -> Ints:
        """Rows of ids of the keys, -1 for a value with no id."""
        if not keys:
            return _NO_KEYS[width]
        return np.stack([lookup_column(self.db.ids, [key[i] for key in keys])
                         for i in range(width)], axis=1).astype(np.int64)


def _distinct(forward: Ints, backward: Ints, pairs: Ints, triples: Ints
              ) -> tuple[Ints, Ints, Ints, Ints]:
    """A read's ids and rows, each once."""
    return (sorted_distinct(forward), sorted_distinct(backward), np.unique(pairs, axis=0),
            np.unique(triples, axis=0))


def _known(rows: Ints) -> Ints:
    """The rows whose values all have an id (no datom holds the others)."""
    return rows[(rows >= 0).all(axis=1)]
