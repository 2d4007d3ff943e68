"""A big batch's sieve: two hashed bits per ``(node, key)`` of a level, which say "absent"
for most keys a node does not hold, with a few NumPy calls a candidate instead of a binary
search's steps.

A tick's lookups on a power-law graph mostly miss: of the ~113,000 candidates a tick of
1,000 changed edges asks the loaded batch of the triangle over a tenth of LiveJournal, ~860
are there, each found by ~11 halving steps in a hub's adjacency.  The sieve is a Bloom
filter of the level's bands (``node start · 2^32 + key``, as :meth:`Batch.bands`):
``BITS_PER_KEY`` bits a key, and each key sets the bit of each of ``MULTIPLIERS`` — so
about ``(1 - e^(-2/BITS_PER_KEY))^2`` of absent candidates pass (4.9%; one hash at 4 bits a
key let 22% through, and halving those survivors cost more than the sieve).  A candidate
is checked against the second bit only when the first is set.  A key held always has its
bits: the search decides, so reads stay exact.
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

BITS_PER_KEY = 8  # a byte a key: at LiveJournal's size what 4 bits rounded up to 2^29 took
# Fibonacci hashing's multiplier and xxHash's second prime: odd, so each product's top bits
# mix all of a band's; one bit a multiplier.
MULTIPLIERS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _slots(bands: Ints, size: int, multiplier: np.uint64) -> Ints:
    """Each band's bit among ``size``: the top bits of its product with ``multiplier``
    scaled to ``size`` (a multiply and a shift, Lemire's range reduction: no power of two
    to round the sieve up to)."""
    width = size.bit_length()
    hashed = bands.view(np.uint64) * multiplier >> np.uint64(width)
    return (hashed * np.uint64(size) >> np.uint64(64 - width)).view(np.int64)


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
    size a byte a slot would be 550 MB)."""
    bits = np.zeros(max(1, -(-keys * BITS_PER_KEY // 8)), np.uint8)
    for bands in chunks:
        for multiplier in MULTIPLIERS:
            slots = np.sort(_slots(bands, 8 * len(bits), multiplier))
            byte = slots >> 3
            first = np.flatnonzero(np.diff(byte, prepend=-1))
            bits[byte[first]] |= np.bitwise_or.reduceat(
                np.left_shift(1, slots & 7).astype(np.uint8), first)
    return bits


def maybe(bits: Bits, bands: Ints) -> Mask:
    """Whether each band may be in the level (False: it is not): its first bit, then the
    second for those whose first is set."""
    passed = _set(bits, _slots(bands, 8 * len(bits), MULTIPLIERS[0]))
    first = np.flatnonzero(passed)
    passed[first] = _set(bits, _slots(bands[first], 8 * len(bits), MULTIPLIERS[1]))
    return passed


def _set(bits: Bits, slots: Ints) -> Mask:
    """Whether each of ``slots`` is set in ``bits``."""
    return (bits[slots >> 3] >> (slots & 7).astype(np.uint8) & 1).astype(bool)
