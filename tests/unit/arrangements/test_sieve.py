"""A big batch's sieve: a key held always passes; most absent ones do not."""

from __future__ import annotations

import numpy as np

from workers.arrangements.sieve import BITS_PER_KEY, bits_of, maybe


def test_held_bands_pass_and_most_absent_ones_do_not() -> None:
    rng = np.random.default_rng(3)
    bands = np.unique((rng.integers(0, 5000, 200_000) << 32) + rng.integers(0, 10**6, 200_000))
    held, absent = bands[::2], bands[1::2]
    bits = bits_of(iter(np.array_split(held, 7)), len(held))
    assert len(bits) * 8 >= BITS_PER_KEY * len(held)
    assert maybe(bits, held).all()
    passed = maybe(bits, absent).mean()
    assert passed < 1.3 * (1 - np.exp(-1 / BITS_PER_KEY))  # ~22% at 4 bits a key
