"""A tick's effective delta (value ids), arranged only in the forms its readers ask for.

The delta comes as a dict of id datoms (a transaction, a batch normalised one by one) or as
columns (a batch normalised at once, :mod:`workers.db.bulk`).  The row-at-a-time extenders,
the rules executor and Spark read its dict tries; the vectorised executor reads it as a
spine of one batch; a tick no query reads needs neither.  So each form is built on first
use, once per tick.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import Ids, Ints
from workers.arrangements.datom_batch import DatomBatch, IdDatom
from workers.arrangements.memory import MemoryArrangement
from workers.arrangements.spine import SpineArrangement
from workers.zset import ZSet


@dataclass(frozen=True, slots=True)
class DatomColumns:
    """A Z-set of id datoms as columns (each datom once)."""

    e: Ids
    a: Ids
    v: Ids
    w: Ints

    @classmethod
    def of(cls, datoms: Mapping[IdDatom, int]) -> DatomColumns:
        e, a, v = (np.fromiter((d[i] for d in datoms), np.int32, len(datoms))
                   for i in range(3))
        return cls(e, a, v, np.fromiter(datoms.values(), np.int64, len(datoms)))

    def __len__(self) -> int:
        return len(self.e)

    def piece(self, start: int, stop: int) -> DatomColumns:
        return DatomColumns(self.e[start:stop], self.a[start:stop], self.v[start:stop],
                            self.w[start:stop])

    def take(self, rows: Ints | npt.NDArray[np.bool_]) -> DatomColumns:
        """The datoms at ``rows`` (positions or a mask)."""
        return DatomColumns(self.e[rows], self.a[rows], self.v[rows], self.w[rows])

    @staticmethod
    def concatenate(parts: list[DatomColumns]) -> DatomColumns:
        """The (one or more) parts' datoms one after another (not consolidated)."""
        if len(parts) == 1:
            return parts[0]
        e, a, v, w = (np.concatenate([getattr(p, n) for p in parts]) for n in ("e", "a", "v", "w"))
        return DatomColumns(e, a, v, w)

    def as_dict(self) -> ZSet[IdDatom]:
        return dict(zip(zip(self.e.tolist(), self.a.tolist(), self.v.tolist(), strict=True),
                        self.w.tolist(), strict=True))


IdDelta = ZSet[IdDatom] | DatomColumns


class TickDelta:
    """The current tick's delta; empty between ticks.  ``arrangement`` is the dict tries
    readers were bound to (kept as one object, filled in place by :meth:`arranged`)."""

    __slots__ = ("_arranged", "_columns", "_datoms", "_spine", "arrangement")

    def __init__(self) -> None:
        self.arrangement = MemoryArrangement()
        self._datoms: ZSet[IdDatom] | None = {}
        self._columns: DatomColumns | None = None
        self._arranged = True
        self._spine: SpineArrangement | None = None

    def reset(self, delta: IdDelta) -> None:
        """The next tick's delta (nothing is arranged yet; the tries are emptied only when
        the last delta filled them)."""
        if self._arranged and len(self):
            self.arrangement.reset({})
        self._datoms, self._columns = (None, delta) if isinstance(delta, DatomColumns) else (
            delta, None)
        self._arranged = not delta
        self._spine = None

    def __len__(self) -> int:
        return len(self._columns if self._datoms is None else self._datoms)  # type: ignore[arg-type]

    def datoms(self) -> ZSet[IdDatom]:
        if self._datoms is None:
            assert self._columns is not None
            self._datoms = self._columns.as_dict()
        return self._datoms

    def columns(self) -> DatomColumns:
        if self._columns is None:
            self._columns = DatomColumns.of(self.datoms())
        return self._columns

    def arranged(self) -> MemoryArrangement:
        """The dict tries, filled now if this tick's readers have not needed them yet."""
        if not self._arranged:
            self.arrangement.update(self.datoms())
            self._arranged = True
        return self.arrangement

    def batch(self) -> DatomBatch | None:
        """The delta's batch, if a reader had it built (the database's spine can take it)."""
        return self._spine.batches[0] if self._spine is not None and self._spine.batches else (
            None)

    def spine(self) -> SpineArrangement:
        """The delta as a spine of one batch."""
        if self._spine is None:
            self._spine = SpineArrangement()
            if len(self):
                columns = self.columns()
                self._spine.update_columns(columns.e, columns.a, columns.v, columns.w)
        return self._spine
