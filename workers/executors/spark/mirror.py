"""The database as Spark sees it: a compacted base DataFrame plus the changes since.

The local arrangements stay the source of truth (transactions are normalised against
them); the mirror follows them so Spark jobs read the same state, in the same value ids.  Design:

- ``base``: the state at the last compaction — datom ids ``(e, a, v, w=1)``,
  hash-partitioned by entity, cached and cut from its lineage (``localCheckpoint``);
- ``pending``: a driver-side Z-set of every datom change applied since then.

Both are sets of datoms, so ``pending`` is ``+1`` exactly on datoms the base lacks and
``-1`` exactly on datoms it has: ``old = (base ▷ removed) ∪ added`` (an anti-join with the
small side broadcast) is the state as a set — every weight 1, no aggregation.  Its lineage
is the same few nodes whatever the number of ticks; :meth:`compact` folds ``pending`` into
a new base when it grows past ``compact_datoms`` or every ``compact_ticks`` ticks (one
pass over the state, amortised).  The base is built from the spine on first use, so an
``auto`` engine that never needs Spark never copies its state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from workers.arrangements import ArrangementRegistry, MemoryArrangement
from workers.executors.spark.frames import DATOM_COLUMNS, id_frame, id_source
from workers.executors.spark.sql import WEIGHT, Source, Sql, free
from workers.zset import add_into

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Datom = tuple[int, int, int]  # value ids
COMPACT_TICKS = 100
COMPACT_DATOMS = 50_000


class SparkMirror:
    """The Spark copy of the shared arrangements, kept in step by :meth:`apply`."""

    def __init__(self, session: SparkSession, db: ArrangementRegistry,
                 compact_ticks: int = COMPACT_TICKS,
                 compact_datoms: int = COMPACT_DATOMS) -> None:
        self.session, self.db = session, db
        self.compact_ticks, self.compact_datoms = compact_ticks, compact_datoms
        self.compactions = 0
        self._base: DataFrame | None = None
        self._pending: dict[Datom, int] = {}
        self._pending_source: Source | None = None  # ``_pending`` as a table, once per change
        self._delta_source: tuple[int, Source] | None = None  # (arrangement version, table)
        self._ticks = 0

    def old(self, sql: Sql) -> str:
        """The state before the current tick, as a set (every weight 1)."""
        if self._base is None:
            rows = self.db.state.datoms()
            self._base = self._checkpoint(id_frame(self.session, rows, DATOM_COLUMNS))
        base = sql.frame(self._base)
        if not self._pending:
            return base
        if self._pending_source is None:
            self._pending_source = self._source(self._pending)
        return patched(sql, base, sql.source(self._pending_source))

    def delta(self, sql: Sql, arrangement: MemoryArrangement) -> str:
        """The tick's delta arrangement as a table, encoded once for all the tick's queries."""
        if self._delta_source is None or self._delta_source[0] != arrangement.version:
            self._delta_source = (arrangement.version,
                                  self._source(dict(arrangement.datoms())))
        return sql.source(self._delta_source[1])

    def apply(self, delta: Mapping[Datom, int]) -> None:
        """Follow the spine: remember ``delta``; compact when the schedule says so."""
        if self._base is None:
            return  # the base will be read from the spine, which already holds ``delta``
        add_into(self._pending, delta)
        self._pending_source = None
        self._ticks += 1
        if self._ticks >= self.compact_ticks or len(self._pending) >= self.compact_datoms:
            self.compact()

    def compact(self) -> None:
        """Fold ``pending`` into a new base and cut the lineage."""
        self._ticks = 0
        if self._base is None or not self._pending:
            return
        sql = Sql(self.session)
        previous, self._base = self._base, self._checkpoint(sql.run(self.old(sql)))
        free(previous)
        self._pending.clear()
        self._pending_source = None
        self.compactions += 1

    def reset(self) -> None:
        """Forget everything (the state was replaced by a snapshot); rebuilt on next use."""
        if self._base is not None:
            free(self._base)
        self._base = None
        self._pending.clear()
        self._pending_source = self._delta_source = None
        self._ticks = 0

    def _source(self, datoms: Mapping[Datom, int]) -> Source:
        return id_source(self.session, datoms, DATOM_COLUMNS)

    def _checkpoint(self, frame: DataFrame) -> DataFrame:
        partitions = int(self.session.conf.get("spark.sql.shuffle.partitions") or 1)
        return frame.repartition(partitions, "e").localCheckpoint(eager=True)


def patched(sql: Sql, state: str, delta: str) -> str:
    """``state + delta`` for a set ``state`` and a delta that keeps it a set: drop the
    retracted datoms (anti-join, delta side broadcast), add the asserted ones."""
    same = " AND ".join(f"s.{c} = r.{c}" for c in DATOM_COLUMNS)
    columns = ", ".join(f"s.{c}" for c in (*DATOM_COLUMNS, WEIGHT))
    return sql.add(f"SELECT /*+ BROADCAST(r) */ {columns} FROM {state} s LEFT ANTI JOIN "
                   f"(SELECT * FROM {delta} WHERE {WEIGHT} < 0) r ON {same} "
                   f"UNION ALL SELECT * FROM {delta} WHERE {WEIGHT} > 0")
