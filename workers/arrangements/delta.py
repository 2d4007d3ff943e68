"""A tick's effective delta (value ids), arranged only in the forms its readers ask for.

The delta comes as a dict of id datoms (a transaction, a batch normalised one by one) or as
columns (a batch normalised at once, :mod:`workers.db.bulk`).  The row-at-a-time extenders
and the rules executor read its dict tries (their executor's :class:`DeltaInput`, fed from
the :class:`TickDelta` a step is given); the vectorised executor reads it as a spine of one
batch; Spark ships its columns; a tick no query reads needs none.  So each form is built on
first use, once per tick.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import Ids, Ints, sorted_distinct
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
    """One tick's delta, built into each form on first use (once per tick, whichever
    executor asks first): its datoms as a dict, as columns, as a spine of one batch."""

    __slots__ = ("_columns", "_datoms", "_spine")

    def __init__(self, delta: IdDelta | None = None) -> None:
        self._datoms: ZSet[IdDatom] | None = {} if delta is None else None
        self._columns: DatomColumns | None = None
        if isinstance(delta, DatomColumns):
            self._columns = delta
        elif delta is not None:
            self._datoms = delta
        self._spine: SpineArrangement | None = None

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


class DeltaInput:
    """The dict tries a row-at-a-time executor's prepared plans read as the tick's delta:
    bound once when a plan is prepared (never replaced: filled in place), fed by each step
    from the delta it is given, and empty for an evaluation (``new`` reads as ``old``)."""

    __slots__ = ("_arranged", "_fed", "arrangement")

    def __init__(self) -> None:
        self.arrangement = MemoryArrangement()
        self._fed: TickDelta | None = None  # the delta the tries are for (None: nothing)
        self._arranged = False  # whether the tries hold it

    def feed(self, delta: TickDelta | None) -> MemoryArrangement:
        """The tries holding ``delta`` (None: nothing), filled now unless they hold it: once
        per tick, however many queries step."""
        if delta is not self._fed:
            if self._arranged:
                self.arrangement.reset({})
            self._fed, self._arranged = delta, False
        if not self._arranged and delta is not None and len(delta):
            self.arrangement.update(delta.datoms())
            self._arranged = True
        return self.arrangement


def summed_weight(delta: IdDelta) -> int:
    """A delta's weights summed: the change in the number of datoms it makes."""
    return int(delta.w.sum()) if isinstance(delta, DatomColumns) else sum(delta.values())


def attribute_ids(delta: IdDelta) -> set[int] | list[int]:
    """The ids of the attributes a delta's datoms hold, each once."""
    if isinstance(delta, DatomColumns):
        return sorted_distinct(delta.a).tolist()  # type: ignore[no-any-return]
    return {datom[1] for datom in delta}


def pieces(delta: IdDelta, size: int) -> Iterator[IdDelta]:
    """A delta's datoms ``size`` at a time, in the form it came in."""
    if isinstance(delta, DatomColumns):
        yield from (delta.piece(i, i + size) for i in range(0, len(delta), size))
        return
    datoms = list(delta.items())
    yield from (dict(datoms[i:i + size]) for i in range(0, len(datoms), size))
