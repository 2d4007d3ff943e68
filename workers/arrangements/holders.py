"""The holders' bits of a spine: per level-0 key of an entity- or value-major order (an id),
which batches hold it, so that a read visits only those (2 bytes per id and order)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from workers.arrangements.batch import Batch

MAX_BATCHES = 16  # a bit each in a uint16; geometric sizes reach it at 2^15 × layer_limit
Bits = npt.NDArray[np.uint16]


def holder_bits(mask: Bits, indexes: list[Batch], first: int, dropped: list[Batch]) -> Bits:
    """Per level-0 key of an entity- or value-major order (an id), bit ``i`` set when batch
    ``i`` holds it: a one-prefix read visits those batches only, not a binary search in
    each (2 bytes per id and order).  Bits from ``first`` on are redone from ``indexes``:
    cleared at the keys of ``dropped`` (the batches that were at ``first`` on) and set at
    the new ones' — a tick's few keys, not a pass over every id (at LiveJournal's size two
    passes of 9.7 MB an order, ~2 ms of a tick of 1,000 edges).

    A spine of one batch (a tick's delta) gets no array: every key reads as "maybe in batch
    0" (a view of one value), which its reads then search (a new array of every id touched
    by a tick's keys cost ~1 ms of page faults)."""
    size = max([len(mask), *(_end(index) for index in indexes[first:])])
    if len(indexes) == 1:
        return np.broadcast_to(np.ones(1, np.uint16), (size,))
    if not mask.flags.writeable:  # the one batch's view: the bits made from none
        mask, first, dropped = np.zeros(0, np.uint16), 0, []
    if size > len(mask):  # grown with room: a tick's new ids do not copy it every time
        grown = np.zeros(size + size // 8, np.uint16)
        grown[:len(mask)] = mask
        mask = grown
    kept = np.uint16((1 << first) - 1)
    if any(index.keys0 is None for index in dropped):  # a dense level: every id, one pass
        mask &= kept
    else:
        for index in dropped:
            mask[index.keys0] &= kept
    for i, index in enumerate(indexes[first:], first):
        if index.keys0 is None:  # dense: its non-empty rows, in one pass (a loaded batch's
            # ids listed and scattered took ~20 ms an order at LiveJournal's size)
            held = (index.bounds0[1:] > index.bounds0[:-1]).astype(np.uint16)
            held <<= np.uint16(i)
            mask[:len(held)] |= held
        else:
            mask[index.keys0] |= np.uint16(1 << i)
    return mask


def _end(index: Batch) -> int:
    """One past the largest level-0 key ``index`` may hold (a dense level: its rows)."""
    if index.keys0 is None:
        return len(index.bounds0) - 1
    return int(index.keys0[-1]) + 1 if len(index.keys0) else 0
