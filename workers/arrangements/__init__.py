"""Arrangements: the datom Z-set indexed as EAV, AEV, AVE and VAE tries, shared by all queries.

The registry holds the database state once per worker; a tick's delta is arranged the same
way (a small :class:`MemoryArrangement`); the ``new`` state is the two read together.
"""

from workers.arrangements.keys import INDEX_ORDERS, IndexOrder
from workers.arrangements.memory import Datom, MemoryArrangement, Trie
from workers.arrangements.pending import PendingReader
from workers.arrangements.registry import ArrangementRegistry

__all__ = [
    "INDEX_ORDERS",
    "ArrangementRegistry",
    "Datom",
    "IndexOrder",
    "MemoryArrangement",
    "PendingReader",
    "Trie",
]
