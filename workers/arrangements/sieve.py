"""A big batch's sieve: one hashed bit per ``(node, key)`` of a level, which says "absent"
for most keys a node does not hold, with a few NumPy calls a candidate instead of a binary
search's steps.

A tick's lookups on a power-law graph mostly miss: of the ~110,000 candidates a tick of
1,000 changed edges asks the loaded batch of the triangle over a tenth of LiveJournal, ~860
are there, each found by ~11 halving steps in a hub's adjacency.  The sieve sets, for every
key of the level, the bit its band (``node start · 2^32 + key``, as :meth:`Batch.bands`)
hashes to — ``BITS_PER_KEY`` bits a key, so about ``1 - e^(-1/BITS_PER_KEY)`` of absent
candidates pass (22%) — and only the candidates whose bit is set are searched.  A key held
always has its bit: the search decides, so reads stay exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Ids = npt.NDArray[np.int32]
Offsets = npt.NDArray[np.int32] | npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Bits = npt.NDArray[np.uint8]

BITS_PER_KEY = 4  # half a byte a key: a fifth of a graph's loaded batch (~13.7 B/datom)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the product's top bits mix all


def _slots(bands: Ints, width: int) -> Ints:
    """Each band's bit: the top ``width`` bits of its product with ``GOLDEN``."""
    return (bands.view(np.uint64) * GOLDEN >> np.uint64(64 - width)).view(np.int64)


def width_for(keys: int) -> int:
    """The sieve's bits as a power of two: at least ``BITS_PER_KEY`` a key."""
    return max(3, (keys * BITS_PER_KEY - 1).bit_length())


def bands_of(bounds: Offsets, keys: Ids) -> Ints:
    """The keys of the nodes ``bounds`` spans (``len(bounds) - 1`` of them, the level's
    node bounds or a slice of them) as ``node start · 2^32 + key``, sorted: one array of 8
    bytes a key allocated, not three."""
    table = np.repeat(bounds[:-1].astype(np.int64) << 32, np.diff(bounds))
    table += keys[bounds[0]:bounds[-1]]
    return table


def sieve_of(bounds: Offsets, keys: Ids, chunk: int) -> Bits:
    """The sieve of a level (its node ``bounds`` and ``keys``), its bands made about
    ``chunk`` keys at a time."""
    cuts = np.searchsorted(bounds, np.arange(0, int(bounds[-1]), chunk)).tolist()
    return bits_of((bands_of(bounds[first:end + 1], keys)
                    for first, end in pairwise([*cuts, len(bounds) - 1])), int(bounds[-1]))


def bits_of(chunks: Iterator[Ints], keys: int) -> Bits:
    """The bits of a level's ``keys`` bands, given a chunk at a time: each chunk's slots
    sorted and or-ed into their bytes (no temporary of the sieve's size: at LiveJournal's
    size a byte a slot would be 256 MB)."""
    width = width_for(keys)
    bits = np.zeros(1 << (width - 3), np.uint8)
    for bands in chunks:
        slots = np.sort(_slots(bands, width))
        byte = slots >> 3
        first = np.flatnonzero(np.diff(byte, prepend=-1))
        bits[byte[first]] |= np.bitwise_or.reduceat(
            np.left_shift(1, slots & 7).astype(np.uint8), first)
    return bits


def maybe(bits: Bits, bands: Ints) -> Mask:
    """Whether each band may be in the level (False: it is not)."""
    slots = _slots(bands, (len(bits) * 8).bit_length() - 1)
    return (bits[slots >> 3] >> (slots & 7).astype(np.uint8) & 1).astype(bool)
