"""A big batch's sieve: two hashed bits per ``(node, key)`` of a level, which say "absent"
for most keys a node does not hold, with a few NumPy calls a candidate instead of a binary
search's steps.

A tick's lookups on a power-law graph mostly miss: of the ~113,000 candidates a tick of
1,000 changed edges asks the loaded batch of the triangle over a tenth of LiveJournal, ~860
are there, each found by ~11 halving steps in a hub's adjacency.  The sieve is a Bloom
filter per node: a node of ``n`` keys owns ``BITS_PER_KEY · n`` bits, where its keys are
found (the node's bits start at ``BITS_PER_KEY`` times its first key's position), and each
key sets the bit of each of ``MULTIPLIERS`` among them — so about
``(1 - e^(-2/BITS_PER_KEY))^2`` of absent candidates pass (4.9%; one hash at 4 bits a key let
22% through, and halving those survivors cost more than the sieve).  A frame's candidates
come by row, so one row's reads are in one node's bits, a few cache lines: hashed over the
whole level, the reads missed the caches (1.3 ms a tick at the tenth, 0.2 for the same
reads repeated).  A candidate is checked against the second bit only when the first is set.
A key held always has its bits: the search decides, so reads stay exact.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Ids = npt.NDArray[np.int32]
Offsets = npt.NDArray[np.int32] | npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Bits = npt.NDArray[np.uint8]

BITS_PER_KEY = 8  # a byte a key: at LiveJournal's size what 4 bits rounded up to 2^29 took
# Fibonacci hashing's multiplier and xxHash's second prime: odd, so each product's top 32
# bits mix all of a key's; one bit a multiplier.
MULTIPLIERS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _slots(starts: Ints, sizes: Ints, keys: Ids | Ints, multiplier: np.uint64) -> Ints:
    """Each key's bit in its node's: the top 32 bits of its product with ``multiplier``
    scaled to the node's bits (a multiply and a shift, Lemire's range reduction).  In place
    on one array: a tick's ~160,000 candidates at LiveJournal's size are 1.3 MB a
    temporary, past the core's cache."""
    hashed = keys.astype(np.uint64)
    hashed *= multiplier
    hashed >>= np.uint64(32)
    hashed *= (sizes * BITS_PER_KEY).view(np.uint64)  # sizes are not negative
    hashed >>= np.uint64(32)
    slots = hashed.view(np.int64)
    slots += starts * BITS_PER_KEY
    return slots


def key_nodes(bounds: Offsets) -> tuple[Ints, Ints]:
    """For every key of the nodes ``bounds`` spans: its node's first position and size."""
    sizes = np.diff(bounds).astype(np.int64)
    return np.repeat(bounds[:-1].astype(np.int64), sizes), np.repeat(sizes, sizes)


def sieve_of(bounds: Offsets, keys: Ids, chunk: int) -> Bits:
    """The sieve of a level (its node ``bounds`` and ``keys``), made about ``chunk`` keys
    at a time (no temporary of the sieve's size: at LiveJournal's size a byte a slot would
    be 550 MB): each chunk's slots sorted and or-ed into their bytes."""
    bits = np.zeros(max(1, -(-int(bounds[-1]) * BITS_PER_KEY // 8)), np.uint8)
    cuts = np.searchsorted(bounds, np.arange(0, int(bounds[-1]), chunk)).tolist()
    for first, end in pairwise([*cuts, len(bounds) - 1]):
        starts, sizes = key_nodes(bounds[first:end + 1])
        held = keys[bounds[first]:bounds[end]]
        for multiplier in MULTIPLIERS:
            slots = np.sort(_slots(starts, sizes, held, multiplier))
            byte = slots >> 3
            at = np.flatnonzero(np.diff(byte, prepend=-1))
            bits[byte[at]] |= np.bitwise_or.reduceat(
                np.left_shift(1, slots & 7).astype(np.uint8), at)
    return bits


def maybe(bits: Bits, starts: Ints, sizes: Ints, keys: Ids | Ints) -> Mask:
    """Whether each key may be in its node (False: it is not), the node given by its first
    position and size: its first bit, then the second for those whose first is set."""
    passed = _set(bits, _slots(starts, sizes, keys, MULTIPLIERS[0]))
    first = np.flatnonzero(passed)
    passed[first] = _set(bits, _slots(starts[first], sizes[first], keys[first],
                                      MULTIPLIERS[1]))
    return passed


BIT = np.left_shift(1, np.arange(8)).astype(np.uint8)  # a byte's bit ``i`` alone


def _set(bits: Bits, slots: Ints) -> Mask:
    """Whether each of ``slots`` (made by :func:`_slots`, consumed) is set in ``bits``."""
    masks = BIT[slots & 7]
    slots >>= 3
    masks &= bits[slots]
    return masks != 0
