"""Loops compiled with numba, where a NumPy formulation pays a call per step.

A batch read searches, for each of thousands of rows, one key in that row's own sorted
range of a level (a *segmented* binary search).  NumPy has no such search: halving every
row together costs a handful of array operations per halving, each a pass over all rows
with a random gather.  Compiled, each row is one loop over its own range — measured 4.8×
faster on 10^4 searches in a 10^6-key level (346 → 72 µs).

numba is imported and the loop compiled on first use, not at import (importing numba
costs ~0.4 s, which every CLI call would pay); the compiled code is cached beside the
module (``cache=True``), and ``nogil`` lets another thread run meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int32]
Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


def segment_search(keys: Ids, lo: Ints, hi: Ints, targets: Ints) -> tuple[Ints, Mask]:
    """``bisect_left(keys, target, lo, hi)`` for every row, and whether it found the key."""
    result: tuple[Ints, Mask] = _compiled(segment_search_loop)(
        keys, lo.astype(np.int64), hi.astype(np.int64), targets.astype(np.int64))
    return result


def segment_search_loop(keys: Ids, lo: Ints, hi: Ints, targets: Ints) -> tuple[Ints, Mask]:
    """:func:`segment_search` as the loop numba compiles (plain Python: slow, exact)."""
    n = len(lo)
    at = np.empty(n, np.int64)
    found = np.zeros(n, np.bool_)
    for i in range(n):
        first, end, target = lo[i], hi[i], targets[i]
        while first < end:
            middle = (first + end) >> 1
            if keys[middle] < target:
                first = middle + 1
            else:
                end = middle
        at[i] = first
        found[i] = first < hi[i] and keys[first] == target
    return at, found


@cache
def _compiled(loop: Callable[..., tuple[Ints, Mask]]) -> Callable[..., tuple[Ints, Mask]]:
    from numba import njit  # imported on first use: see the module docstring

    compiled: Callable[..., tuple[Ints, Mask]] = njit(cache=True, nogil=True)(loop)
    return compiled
