"""What the parts of a spine share: its state, and the methods one part calls on another.

:class:`~workers.arrangements.spine.SpineArrangement` is put together from parts, one
concept each — its writes and merge policy (``spine.py``), background compaction
(``compaction.py``), reads of one prefix (``prefix_reads.py``) and of a batch of prefixes
(``batch_reads.py``).  Every part derives from :class:`SpineState`, which declares the slots
they read and write and, as stubs, the methods one part calls on another (the part that
defines each is named); the spine, deriving from all of them, has the real ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor, Future

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import Batch, Ids, Ints
from workers.arrangements.cursor import Node
from workers.arrangements.datom_batch import DatomBatch
from workers.arrangements.keys import IndexOrder
from workers.arrangements.memory import MemoryArrangement


class SpineState:
    """The state of a spine (set by ``SpineArrangement.__init__``)."""

    __slots__ = ("_by_order", "_compaction", "_compactor", "_holder_views", "_holders",
                 "_layer_batch", "_layer_negative", "_layer_rows", "_read", "_readers",
                 "_summed", "_summed_keys", "batches", "compact_from", "layer", "layer_limit",
                 "nonnegative", "small_node")

    # the Z-set: Σ batches + layer
    batches: list[DatomBatch]  # largest (oldest) first
    _by_order: dict[IndexOrder, list[Batch]]  # each batch's index of an order
    _holders: dict[IndexOrder, npt.NDArray[np.uint16]]  # holders.py, per major order
    _holder_views: dict[IndexOrder, memoryview]  # the same read as Python ints
    layer: MemoryArrangement
    layer_limit: int
    _layer_rows: int  # datoms written to the layer since it was last frozen (a bound)
    _layer_negative: bool  # whether a negative weight was written since then
    _layer_batch: tuple[int, DatomBatch | None]  # (layer version, the layer as a batch)
    nonnegative: bool
    small_node: int
    # background compaction (compaction.py)
    compact_from: int | None
    _compactor: Executor
    # (first, end) of the batches merged, and the merge
    _compaction: tuple[int, int, Future[DatomBatch | None]] | None
    _readers: int  # threads reading at once (shared_reads): nothing adopted meanwhile
    # the memos of one-prefix reads (prefix_reads.py), until the next write
    _read: dict[tuple[IndexOrder, Sequence[int]], list[Node]]
    _summed: dict[tuple[IndexOrder, Sequence[int]], dict[int, int]]
    _summed_keys: int

    def _adopt(self, wait: bool = False) -> None:  # compaction.py
        raise NotImplementedError

    def _forget(self) -> None:  # prefix_reads.py
        raise NotImplementedError

    def _indexes(self, order: IndexOrder) -> list[Batch]:  # batch_reads.py
        raise NotImplementedError

    def _reindex(self, first: int) -> None:  # spine.py
        raise NotImplementedError

    def _layer_columns(self) -> tuple[Ids, Ids, Ids, Ints]:  # spine.py
        raise NotImplementedError
