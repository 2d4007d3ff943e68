"""A big batch's sieve: a key held always passes; most absent ones do not."""

from __future__ import annotations

import numpy as np
import pytest

from workers.arrangements import batch as batch_module
from workers.arrangements.batch import Batch, Ids, Ints
from workers.arrangements.sieve import BITS_PER_KEY, MULTIPLIERS, key_nodes, maybe, sieve_of


def _level(rng: np.random.Generator, nodes: int, keys: int) -> tuple[Ints, Ids, Ids]:
    """Node bounds, each node's keys (sorted, distinct) and as many keys absent from it."""
    node = np.sort(rng.integers(0, nodes, keys))
    pairs = np.unique((node << 32) + rng.integers(0, 10**6, keys))
    owner, key = pairs >> 32, (pairs & 0xFFFFFFFF).astype(np.int32)
    held = np.ones(len(key), bool)
    held[1::2] = False  # every other key is absent from its node: asked, not sieved
    bounds = np.searchsorted(owner[held], np.arange(nodes + 1))
    return bounds, key[held], key[~held]


def test_held_keys_pass_and_most_absent_ones_do_not() -> None:
    rng = np.random.default_rng(3)
    bounds, held, absent = _level(rng, 5000, 400_000)
    bits = sieve_of(bounds, held, 30_000)
    assert len(bits) * 8 >= BITS_PER_KEY * len(held)
    starts, sizes = key_nodes(bounds)
    assert maybe(bits, starts, sizes, held).all()
    n = min(len(held), len(absent))  # each absent key asked in the node of the i-th held
    passed = maybe(bits, starts[:n], sizes[:n], absent[:n]).mean()
    hashes = len(MULTIPLIERS)
    assert passed < 1.3 * (1 - np.exp(-hashes / BITS_PER_KEY)) ** hashes  # ~4.9%


def test_fewer_than_one_in_sixteen_absent_keys_pass() -> None:
    """Two bits a key at a byte a key: a tick's survivors, each halved ~11 times, were a
    fifth of the candidates with one bit at half a byte."""
    rng = np.random.default_rng(5)
    bounds, held, absent = _level(rng, 300, 200_000)
    bits = sieve_of(bounds, held, len(held))
    assert len(bits) <= len(held)  # a byte a key at most: no power of two rounded up to
    starts, sizes = key_nodes(bounds)
    assert maybe(bits, starts, sizes, held).all()
    n = min(len(held), len(absent))
    assert maybe(bits, starts[:n], sizes[:n], absent[:n]).mean() < 1 / 16


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
        keys = (batch.keys0, batch.keys1, batch.keys2)[depth]
        assert maybe(batch.sieve(depth), *key_nodes(batch._bounds(depth)), keys).all()
