"""A big batch's sieve: a key held always passes; most absent ones do not."""

from __future__ import annotations

import numpy as np
import pytest

from workers.arrangements import batch as batch_module
from workers.arrangements.batch import Batch
from workers.arrangements.sieve import BITS_PER_KEY, MULTIPLIERS, bits_of, maybe


def test_held_bands_pass_and_most_absent_ones_do_not() -> None:
    rng = np.random.default_rng(3)
    bands = np.unique((rng.integers(0, 5000, 200_000) << 32) + rng.integers(0, 10**6, 200_000))
    held, absent = bands[::2], bands[1::2]
    bits = bits_of(iter(np.array_split(held, 7)), len(held))
    assert len(bits) * 8 >= BITS_PER_KEY * len(held)
    assert maybe(bits, held).all()
    passed = maybe(bits, absent).mean()
    hashes = len(MULTIPLIERS)
    assert passed < 1.3 * (1 - np.exp(-hashes / BITS_PER_KEY)) ** hashes  # ~4.9%


def test_fewer_than_one_in_sixteen_absent_keys_pass() -> None:
    """Two bits a key at a byte a key: a tick's survivors, each halved ~11 times, were a
    fifth of the candidates with one bit at half a byte."""
    rng = np.random.default_rng(5)
    bands = np.unique((rng.integers(0, 300, 100_000) << 32) + rng.integers(0, 10**6, 100_000))
    held, absent = bands[::2], bands[1::2]
    bits = bits_of(iter([held]), len(held))
    assert len(bits) <= len(held)  # a byte a key at most: no power of two rounded up to
    assert maybe(bits, held).all()
    assert maybe(bits, absent).mean() < 1 / 16


def test_a_batch_s_sieve_passes_every_key_of_its_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made a few nodes at a time (a node longer than a chunk too), at both levels."""
    monkeypatch.setattr(batch_module, "SUMMED_ROWS", 64)
    rng = np.random.default_rng(4)
    triples = sorted({(int(e), int(a), int(v)) for e, a, v in zip(
        np.concatenate([rng.integers(0, 300, 3000), np.zeros(500, np.int64)]),
        rng.integers(0, 3, 3500), rng.integers(0, 10**5, 3500), strict=True)})
    c0, c1, c2 = (np.array([t[i] for t in triples], np.int32) for i in range(3))
    batch = Batch(c0, c1, c2, None)
    for depth in (1, 2):
        assert maybe(batch.sieve(depth), batch.bands(depth)).all()
