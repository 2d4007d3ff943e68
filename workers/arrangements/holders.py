"""The holders' bits of a spine: per level-0 key of an entity- or value-major order (an id),
which batches hold it, so that a read visits only those (2 bytes per id and order)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import Batch

MAX_BATCHES = 16  # a bit each in a uint16; geometric sizes reach it at 2^15 × layer_limit


def holder_bits(mask: npt.NDArray[np.uint16], indexes: list[Batch],
                first: int) -> npt.NDArray[np.uint16]:
    """Per level-0 key of an entity- or value-major order (an id), bit ``i`` set when batch
    ``i`` holds it: a one-prefix read visits those batches only, not a binary search in
    each (2 bytes per id and order).  Bits from ``first`` on are redone from ``indexes``."""
    keys = [index.level0() for index in indexes[first:]]
    size = max([len(mask), *(int(k.max()) + 1 for k in keys if len(k))])
    if size > len(mask):
        mask = np.concatenate([mask, np.zeros(size - len(mask), np.uint16)])
    mask &= np.uint16((1 << first) - 1)
    for i, present in enumerate(keys, first):
        mask[present] |= np.uint16(1 << i)
    return mask
