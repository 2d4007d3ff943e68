"""The four index orders of the datom trie: which datom position sits at each trie depth."""

from __future__ import annotations

from enum import Enum

E, A, V = 0, 1, 2


class IndexOrder(Enum):
    """A permutation of ``(e, a, v)``; ``positions[d]`` is the datom position at depth ``d``."""

    EAV = (E, A, V)
    AEV = (A, E, V)
    AVE = (A, V, E)
    VAE = (V, A, E)

    # Members are singletons compared by identity: hash them so too, in C (Enum's __hash__
    # is Python code, and the spine looks its indexes up by order on every read).
    __hash__ = object.__hash__

    @property
    def positions(self) -> tuple[int, int, int]:
        return self.value  # type: ignore[no-any-return]


INDEX_ORDERS: tuple[IndexOrder, ...] = tuple(IndexOrder)
