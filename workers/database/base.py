"""The database seam: what the engine asks of the database it maintains queries over.

An :class:`~workers.engine.Engine` parses, normalises, routes and steps; where the datoms
live is its :class:`Database`'s.  Two backends, as quix-streams splits its state stores
(``state/memory``, ``state/rocksdb``) from the tasks using them:

- :class:`~workers.database.memory.MemoryDatabase` (``executor=local`` and ``auto``): the
  shared arrangements hold every datom; every read is local and every method beyond the
  arrangements' is a no-op;
- :class:`~workers.database.spark.SparkDatabase` (``executor=spark``): Spark's state files
  are the database; the arrangements are a *window* the driver fills before it reads
  (:mod:`~workers.executors.spark.window`), and a tick's write appends to the files.

The protocol of one tick, as the engine drives it (``workers.engine``'s numbered steps):

1. before normalising, :meth:`Database.read_transactions` (or :attr:`Database.fetch`, for
   columns) brings in what normalisation reads;
2. the queries step over :attr:`Database.arrangements` (the state *before* the tick);
3. :meth:`Database.apply` writes the tick's delta: the only write;
4. :meth:`Database.read_pulled` brings in what pulled maps read after the tick;
5. :meth:`Database.forget`: the tick is over (a window empties; the next tick fetches its
   own).  A tick that changed nothing calls :meth:`Database.moved` instead of 3-5.

Replication (a database written by one engine, followed by others) is the database's
:attr:`Database.replication` (:mod:`workers.database.replication`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from workers.arrangements import ArrangementRegistry
from workers.arrangements.batch import Ids, Ints
from workers.arrangements.delta import IdDelta, TickDelta
from workers.arrangements.values import Numbering, ValueIds
from workers.database.replication import Replication
from workers.db import Schema
from workers.db.tx import BatchOps
from workers.plan.ir import Plan
from workers.pull import Pulling
from workers.pull.maintain import PullReads
from workers.zset.row import Row

# The plans a tick changing these attributes steps remotely, and what their queries' pulls
# read after it (None: not known ahead): a backend may step them with its read.
Ahead = Callable[[set[Any]], tuple[tuple[Plan, ...], PullReads | None]]
# A pulling query's pull and its rows whose maps a read must cover.
Pulled = tuple[Pulling, Mapping[Row, int]]


class Database(Protocol):
    """The datoms the engine's queries read, where they live (see the module's docstring)."""

    @property
    def arrangements(self) -> ArrangementRegistry:
        """What the engine and the executors read: the whole database, or its window."""

    @property
    def replication(self) -> Replication:
        """Alone, writing a shared database or following one."""

    @property
    def opened(self) -> tuple[Schema, int] | None:
        """The schema and position of a database found when it opened (a shared state)."""

    @property
    def datoms(self) -> int:
        """How many datoms the database holds."""

    @property
    def fetch(self) -> Callable[[Ints, Ints], None] | None:
        """What normalising columns calls with the ``(e, a)`` pairs and ``(e, a, v)``
        triples it reads (None: everything is here already)."""

    def read_transactions(self, batch: BatchOps, schema: Schema, ahead: Ahead) -> None:
        """Bring in the datoms normalising ``batch`` against ``schema`` reads."""

    def read_pulled(self, pulled: Iterable[Pulled], delta: IdDelta | None) -> None:
        """Bring in what the pulls read of the rows (after ``delta``, when a tick's)."""

    def apply(self, delta: IdDelta, tick: TickDelta, position: int, schema: Schema,
              complete: bool) -> None:
        """``database += delta`` (``tick``: the same delta, as the executors arranged it):
        the database is at transaction ``position`` of ``schema`` — once ``complete`` (a big
        tick is applied in pieces)."""

    def moved(self, position: int) -> None:
        """A tick that changed nothing put the database at transaction ``position``."""

    def forget(self) -> None:
        """The tick (or evaluation) is over: what was read for it may go."""

    def idle(self) -> None:
        """Nothing to step now: time for background maintenance (compaction)."""

    def compact_for_scan(self) -> None:
        """A full scan comes next (a plan's evaluation): merge batches first when worth it."""

    def attribute_stats(self, a: Any) -> tuple[int, int]:
        """``(distinct entities, distinct values)`` of attribute ``a`` (the planner's)."""

    def columns(self) -> tuple[Ids, Ids, Ids]:
        """Every datom as int32 id columns in EAV order (a snapshot's)."""

    def dictionary(self, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
                   objects: list[Any]) -> ValueIds:
        """A snapshot's dictionary entries as this database keeps a dictionary."""

    def restore(self, values: Numbering, columns: tuple[Ids, Ids, Ids], position: int,
                schema: Schema) -> None:
        """A snapshot's whole database (at ``position``, of ``schema``) becomes this one."""
