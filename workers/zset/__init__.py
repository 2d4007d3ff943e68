"""Z-sets (DBSP): dicts from elements to non-zero weights, and the stream operators over them.

A transaction's effective delta, a tick's query change and a database state are all Z-sets.
"""

from workers.zset.ops import differentiate, distinct_change, integrate, is_set
from workers.zset.zset import ZSet, add, add_into, consolidate, neg, scale, signed

__all__ = [
    "ZSet",
    "add",
    "add_into",
    "consolidate",
    "differentiate",
    "distinct_change",
    "integrate",
    "is_set",
    "neg",
    "scale",
    "signed",
]
