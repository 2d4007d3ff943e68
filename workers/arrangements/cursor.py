"""Reading one node of a spine (differential dataflow's *Cursor*): the part of a source
under a prefix, either a batch's key range ``(batch, lo, hi)`` or a node of the layer's dict
tries (a dict of keys, or a weight under a whole datom).

A spine reads a prefix in each source holding it and adds the answers
(:mod:`workers.arrangements.prefix_reads`); these functions answer for one node.  The pair
orders (AEV, AVE) are read through the entity- and value-major ones (``MAJOR``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workers.arrangements.batch import Batch, Ints
from workers.arrangements.keys import IndexOrder
from workers.zset import add_into

EAV, AEV, AVE, VAE = IndexOrder.EAV, IndexOrder.AEV, IndexOrder.AVE, IndexOrder.VAE
Node = tuple[Batch, int, int] | dict[int, Any] | int  # a batch's key range, or a layer node

# AEV's node under (a, e) holds the leaves EAV's holds under (e, a), in the same order (and
# AVE's under (a, v), VAE's under (v, a)): read those from the entity- or value-major order,
# whose level 0 is dense in a large batch (two array reads, not a binary search over a).
MAJOR = {AEV: EAV, AVE: VAE}


def major_prefixes(order: IndexOrder, prefixes: Ints) -> tuple[IndexOrder, Ints]:
    """:data:`MAJOR` for a batch of prefixes."""
    if prefixes.shape[1] < 2 or order not in MAJOR:
        return order, prefixes
    return MAJOR[order], prefixes[:, [1, 0, *range(2, prefixes.shape[1])]]


def node_sums(node: Node, depth: int) -> dict[int, int]:
    if isinstance(node, tuple):
        return node[0].sums(depth, node[1], node[2])
    assert isinstance(node, dict)
    if depth == 2:
        return dict(node)
    return {key: node_weight(sub, depth + 1) for key, sub in node.items()}


def node_keys(node: Node, depth: int) -> Ints:
    """The node's keys as an array."""
    if isinstance(node, tuple):
        batch, lo, hi = node
        return (batch.keys2[lo:hi] if depth == 2 else batch.level(depth, lo, hi)[0]).astype(
            np.int64)
    assert isinstance(node, dict)
    return np.fromiter(node, np.int64, len(node))


def node_size(node: Node) -> int:
    """How many keys the node holds."""
    if isinstance(node, tuple):
        return node[2] - node[1]
    assert isinstance(node, dict)
    return len(node)


def node_weight(node: Node, depth: int) -> int:
    if isinstance(node, tuple):
        return node[0].weight(depth, node[1], node[2])
    if depth == 3:
        return node  # type: ignore[return-value]
    assert isinstance(node, dict)
    return sum(node_weight(sub, depth + 1) for sub in node.values())


def node_below(node: Node, depth: int, key: int) -> int | None:
    if isinstance(node, tuple):
        return node[0].below(depth, node[1], node[2], key)
    assert isinstance(node, dict)
    sub = node.get(key)
    return None if sub is None else node_weight(sub, depth + 1)


def node_leaves(nodes: list[Node], depth: int) -> dict[tuple[int, ...], int]:
    """The nodes' datoms added up (suffixes from ``depth``), zeros dropped."""
    out: dict[tuple[int, ...], int] = {}
    for node in nodes:
        if isinstance(node, tuple):
            _, suffix, weights = node[0].expand(depth, np.array([node[1]]), np.array([node[2]]))
            keys = (list(zip(*(c.tolist() for c in suffix), strict=True)) if suffix else
                    [()] * len(weights))
            add_into(out, dict(zip(keys, weights.tolist(), strict=True)))
        else:
            add_into(out, _dict_leaves(node, depth))
    return out


def _dict_leaves(node: Node, depth: int) -> dict[tuple[int, ...], int]:
    if depth == 3:
        return {(): node}  # type: ignore[dict-item]
    assert isinstance(node, dict)
    return {(key, *rest): w for key, sub in node.items()
            for rest, w in _dict_leaves(sub, depth + 1).items()}


def grouped(leaves: dict[tuple[int, ...], int]) -> dict[int, int]:
    """Leaves summed by their first key."""
    out: dict[int, int] = {}
    for suffix, w in leaves.items():
        out[suffix[0]] = out.get(suffix[0], 0) + w
    return out
