"""The memory database: the shared arrangements hold every datom (``executor=local`` and
``auto``; under ``auto`` Spark mirrors them, :mod:`~workers.executors.spark.backend`).

Every read is already here, so the reads of the tick's protocol (:mod:`.base`) do nothing;
:meth:`MemoryDatabase.apply` is :meth:`ArrangementRegistry.apply`, taking the batch the
vectorised executor built of the tick's delta when it built one (no second sort).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from workers.arrangements import ArrangementRegistry
from workers.arrangements.batch import Ids, Ints
from workers.arrangements.delta import DatomColumns, IdDelta, TickDelta, summed_weight
from workers.arrangements.values import Numbering, ValueIds
from workers.database.base import Ahead, Pulled
from workers.database.replication import Alone
from workers.db import Schema
from workers.db.tx import BatchOps


class MemoryDatabase:
    """A :class:`~workers.database.base.Database` held whole in the arrangements."""

    def __init__(self, arrangements: ArrangementRegistry | None = None) -> None:
        self._arrangements = ArrangementRegistry() if arrangements is None else arrangements
        self._alone = Alone()

    @property
    def arrangements(self) -> ArrangementRegistry:
        return self._arrangements

    @property
    def replication(self) -> Alone:
        return self._alone

    @property
    def opened(self) -> tuple[Schema, int] | None:
        return None

    @property
    def datoms(self) -> int:
        return len(self._arrangements)

    @property
    def fetch(self) -> Callable[[Ints, Ints], None] | None:
        return None

    def read_transactions(self, batch: BatchOps, schema: Schema, ahead: Ahead) -> None:
        pass

    def read_pulled(self, pulled: Iterable[Pulled], delta: IdDelta | None) -> None:
        pass

    def apply(self, delta: IdDelta, tick: TickDelta, position: int, schema: Schema,
              complete: bool) -> None:
        apply(self._arrangements, delta, tick)

    def moved(self, position: int) -> None:
        pass

    def forget(self) -> None:
        pass

    def idle(self) -> None:
        self._arrangements.state.compact_idle()

    def compact_for_scan(self) -> None:
        self._arrangements.state.compact_for_scan()

    def attribute_stats(self, a: Any) -> tuple[int, int]:
        return self._arrangements.attribute_stats(a)

    def columns(self) -> tuple[Ids, Ids, Ids]:
        return self._arrangements.columns()

    def dictionary(self, kinds: npt.NDArray[np.int8], payloads: npt.NDArray[np.int64],
                   objects: list[Any]) -> ValueIds:
        return ValueIds.from_entries(kinds, payloads, objects)

    def restore(self, values: Numbering, columns: tuple[Ids, Ids, Ids], position: int,
                schema: Schema) -> None:
        self._arrangements.load(values, columns)


def apply(arrangements: ArrangementRegistry, delta: IdDelta, tick: TickDelta) -> None:
    """``arrangements += delta``: the batch a reader built of ``tick`` when there is one
    (the vectorised executor read the delta as a batch: that one), else the delta in the
    form it came in."""
    built = tick.batch()
    if built is not None:
        change = summed_weight(delta)
        arrangements.apply_batch(built, change)
    elif isinstance(delta, DatomColumns):
        arrangements.apply_columns(delta)
    else:
        arrangements.apply(delta)
