"""Reading a trie back as its leaves, checking the arrangements' invariant on the way."""

from __future__ import annotations

from typing import Any

from workers.zset import ZSet
from workers.zset.row import Row


def leaves(trie: dict[Any, Any], depth: int) -> ZSet[Row]:
    """``{keys: weight}`` of a trie ``depth`` keys deep; fails on an empty dict at any depth
    or a zero weight, which would make a key look present with nothing under it."""
    if depth == 1:
        assert 0 not in trie.values(), f"a zero weight in {trie}"
        return {(key,): weight for key, weight in trie.items()}
    found: ZSet[Row] = {}
    for key, child in trie.items():
        assert child, f"an empty dict under {key!r}"
        found.update({(key, *rest): weight for rest, weight in leaves(child, depth - 1).items()})
    return found
