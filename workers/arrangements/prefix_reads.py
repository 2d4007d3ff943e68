"""A spine's reads of one prefix: GenericJoin's verbs (``count``, ``estimate``, ``propose``,
``small``, ``intersect``, ``weight``, ``enumerate``) as the dict tries answer them.

A prefix's node is read in each source holding it (:mod:`workers.arrangements.cursor`; the
holders' bits name the batches): one source (the common case: data loaded long ago, or new)
answers from its structure, a slice.  Several sources answer together by adding their keys
when all of them are *positive* (no negative weight: a key present in one is present in the
sum).  Otherwise a retraction may empty a key: a spine declared ``nonnegative`` adds each
key's sums and drops the zeros — a key's summed weight is then 0 exactly when nothing is
under it — and any other consolidates the leaves under the prefix.

Two memos, both dropped by every write (``_forget``): the nodes found under a prefix
(``_read``, at most ``READ_MEMO`` prefixes) and a prefix's proposals (``_summed``, at most
``SUMMED_MEMO`` keys) — GenericJoin reads one prefix several times in a tick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from workers.arrangements.batch import sorted_distinct
from workers.arrangements.cursor import (
    MAJOR,
    Node,
    grouped,
    node_below,
    node_keys,
    node_leaves,
    node_size,
    node_sums,
    node_weight,
)
from workers.arrangements.keys import IndexOrder
from workers.arrangements.spine_state import SpineState
from workers.zset import add_into

# Read once: an Enum member read through its class costs ~90 ns on the one-prefix path.
EAV, AEV, AVE, VAE = IndexOrder.EAV, IndexOrder.AEV, IndexOrder.AVE, IndexOrder.VAE
READ_MEMO = 4096  # prefixes whose nodes a spine remembers until its next write
SUMMED_MEMO = 1 << 12  # keys of the proposals a spine remembers until its next write


class PrefixReads(SpineState):
    """The one-prefix verbs and their memos."""

    __slots__ = ()

    def count(self, order: IndexOrder, prefix: Sequence[int]) -> int:
        """How many keys follow ``prefix`` (``len(trie[k0]...)``), ``len(prefix) <= 2``."""
        sums = self._summed.get((order, prefix))
        if sums is not None or (sums := self.small(order, prefix)) is not None:
            return len(sums)
        nodes, depth = self._nodes(order, prefix), len(prefix)
        if len(nodes) == 1:
            node = nodes[0]
            return node[0].count(depth, node[1], node[2]) if isinstance(node, tuple) else len(
                node)  # type: ignore[arg-type]
        if self._positive(nodes):  # the keys' union, as arrays: a node may hold millions
            return len(sorted_distinct(np.concatenate([node_keys(node, depth) for node in nodes])))
        return len(self._propose(nodes, depth))

    def estimate(self, order: IndexOrder, prefix: Sequence[int]) -> int:
        """:meth:`count` or more: the sources' counts added (a key in several is counted in
        each, a retracted one still counted), without reading a large node whole — what
        GenericJoin needs to pick a proposer.  A small node is read whole (exact)."""
        sums = self._summed.get((order, prefix))
        if sums is not None or (sums := self.small(order, prefix)) is not None:
            return len(sums)
        depth, total = len(prefix), 0
        for node in self._nodes(order, prefix):
            total += node[0].count(depth, node[1], node[2]) if isinstance(node, tuple) else len(
                node)  # type: ignore[arg-type]
        return total

    def propose(self, order: IndexOrder, prefix: Sequence[int]) -> dict[int, int]:
        """Each key following ``prefix`` with the summed weight of the datoms under it —
        read-only: remembered until the next write, since one prefix is read whole many
        times in a tick (a delete's support checks read a hub's successors once per
        candidate, ~120 keys each time on the power-law closure)."""
        key = (order, prefix)
        sums = self._summed.get(key)
        if sums is None:
            sums = self._remember(key, self._propose(self._nodes(order, prefix), len(prefix)))
        return sums

    def small(self, order: IndexOrder, prefix: Sequence[int]) -> dict[int, int] | None:
        """:meth:`propose` when it is remembered or the node is small (read whole now: at
        most ``small_node`` keys in all its sources), else None.  Every verb on a small
        node then reads one dict, as the dict tries did: its size is the count, its keys
        intersect in C, a whole datom's weight is its entry under its two-key prefix
        (a single-edge tick reads ~5 prefixes ~15 times); GenericJoin asks it first
        (``SpineExtender.small``).  Read-only, like :meth:`propose`'s."""
        key = (order, prefix)
        sums = self._summed.get(key)
        if sums is not None:
            return sums
        if self._compaction is not None and not self._readers:
            self._adopt()
        if len(prefix) == 2 and (sums := self._small_pair(order, prefix)) is not None:
            return self._remember(key, sums)
        nodes = self._read.get(key) or self._find_nodes(order, prefix)
        if len(nodes) == 1 and type(nodes[0]) is tuple:  # one batch holds it: most prefixes
            batch, lo, hi = nodes[0]
            if hi - lo <= self.small_node:
                return self._remember(key, batch.sums(len(prefix), lo, hi))
        elif sum(map(node_size, nodes)) <= self.small_node:
            return self._remember(key, self._propose(nodes, len(prefix)))
        self._keep(key, nodes)
        return None

    def _small_pair(self, order: IndexOrder, prefix: Sequence[int]) -> dict[int, int] | None:
        """:meth:`small` of a two-key prefix in the common case, read in one step: the
        holders' bits name one batch at most, the node is small (else None: the general
        path).  Its keys are leaves, so the layer's leaves under it (a tick's retraction
        of a datom loaded long ago) add to the batch's, zeros dropped, exactly on any
        spine.  A single-edge tick's first reads are such (``_find_nodes``' list of
        sources and its layer walk cost more)."""
        if order is AEV or order is AVE:
            order, prefix = MAJOR[order], (prefix[1], prefix[0])
        k0, k1 = prefix
        layer = self.layer.tries[order].get(k0) if self._layer_rows else None
        written = None if layer is None else layer.get(k1)
        size = 0 if written is None else len(written)
        holders = self._holder_views[order]
        bits = holders[k0] if 0 <= k0 < len(holders) else 0
        if bits & (bits - 1) or size > self.small_node:  # several batches, or a large node
            return None
        if not bits:
            return {} if written is None else dict(written)
        batch = self._by_order[order][bits.bit_length() - 1]
        lo, hi = batch.node(prefix)
        if hi - lo + size > self.small_node:
            return None
        sums = batch.sums(2, lo, hi)
        return sums if written is None else add_into(sums, written)

    def _remember(self, key: tuple[IndexOrder, Sequence[int]],
                  sums: dict[int, int]) -> dict[int, int]:
        """Keep a prefix's proposals until the next write (at most ``SUMMED_MEMO`` keys)."""
        if len(sums) <= SUMMED_MEMO:
            if self._summed_keys + len(sums) > SUMMED_MEMO:
                self._summed.clear()
                self._summed_keys = 0
            self._summed[key] = sums
            self._summed_keys += len(sums)
        return sums

    def _propose(self, nodes: list[Node], depth: int) -> dict[int, int]:
        if len(nodes) <= 1:
            return node_sums(nodes[0], depth) if nodes else {}
        if self.nonnegative or self._positive(nodes):
            out: dict[int, int] = {}
            for node in nodes:
                add_into(out, node_sums(node, depth))
            return out  # add_into drops zeros
        return grouped(node_leaves(nodes, depth))

    def intersect(self, order: IndexOrder, prefix: Sequence[int],
                  candidates: Mapping[int, int]) -> dict[int, int]:
        """The candidates following ``prefix``, each weight times the summed weight under it."""
        sums = self._summed.get((order, prefix))
        if sums is None and (sums := self.small(order, prefix)) is None:
            nodes, depth = self._nodes(order, prefix), len(prefix)
            if sum(map(node_size, nodes)) <= 8 * len(candidates) or (  # reading whole costs less
                    len(nodes) > 1 and not self._positive(nodes) and not self.nonnegative):
                sums = self.propose(order, prefix)
            else:
                return self._search(nodes, depth, candidates)
        # the keys' intersection in C, then a product for each key both hold
        return {x: candidates[x] * sums[x] for x in candidates.keys() & sums.keys()}

    def _search(self, nodes: list[Node], depth: int,
                candidates: Mapping[int, int]) -> dict[int, int]:
        """:meth:`intersect` over large nodes: a binary search per candidate in each."""
        out: dict[int, int] = {}
        for x, w in candidates.items():
            found = [s for node in nodes if (s := node_below(node, depth, x)) is not None]
            if found:
                total = sum(found)
                if total or not self.nonnegative:  # nonnegative: 0 = retractions emptied it
                    out[x] = w * total
        return out

    def weight(self, order: IndexOrder, prefix: Sequence[int]) -> int:
        """The summed weight of the datoms under ``prefix`` (a whole datom: its weight, read
        from its two-key prefix's proposals when that node is small)."""
        if len(prefix) == 3:
            if order is AEV or order is AVE:
                order, prefix = MAJOR[order], (prefix[1], prefix[0], prefix[2])
            pair = (order, prefix[:2])
            sums = self._summed.get(pair)
            if sums is not None or (sums := self.small(*pair)) is not None:
                return sums.get(prefix[2], 0)
        return sum(node_weight(node, len(prefix)) for node in self._nodes(order, prefix))

    def enumerate(self, order: IndexOrder, prefix: Sequence[int]) -> dict[tuple[int, ...], int]:
        """Every datom under ``prefix``, as its suffix in ``order``, with its weight."""
        return node_leaves(self._nodes(order, prefix), len(prefix))

    def _forget(self) -> None:
        """Drop what reads remembered: a write changes the nodes and their sums."""
        self._read.clear()
        self._summed.clear()
        self._summed_keys = 0

    def _nodes(self, order: IndexOrder, prefix: Sequence[int]) -> list[Node]:
        """The sources' non-empty nodes under ``prefix``, remembered until the next write:
        GenericJoin reads a prefix several times in a tick (``estimate`` to rank the
        extenders, then ``propose`` or ``intersect``; one delta term after another)."""
        if self._compaction is not None and not self._readers:
            self._adopt()
        key = (order, prefix)
        nodes = self._read.get(key)
        if nodes is None:
            nodes = self._keep(key, self._find_nodes(order, prefix))
        return nodes

    def _keep(self, key: tuple[IndexOrder, Sequence[int]], nodes: list[Node]) -> list[Node]:
        if len(self._read) >= READ_MEMO:
            self._read.clear()
        self._read[key] = nodes
        return nodes

    def _find_nodes(self, order: IndexOrder, prefix: Sequence[int]) -> list[Node]:
        if (order is AEV or order is AVE) and len(prefix) >= 2:
            order, prefix = MAJOR[order], (prefix[1], prefix[0], *prefix[2:])
        nodes: list[Node] = []
        indexes = self._by_order[order]
        if prefix and (order is EAV or order is VAE):  # the batches the holders' bits name
            holders, key = self._holder_views[order], prefix[0]
            bits = holders[key] if 0 <= key < len(holders) else 0
            if bits & (bits - 1) == 0:  # one batch at most: most keys
                indexes = [indexes[bits.bit_length() - 1]] if bits else []
            else:
                indexes = [index for i, index in enumerate(indexes) if bits >> i & 1]
        for index in indexes:
            lo, hi = index.node(prefix)
            if lo < hi:
                nodes.append((index, lo, hi))
        if self._layer_rows:
            node: Any = self.layer.tries[order]
            for key in prefix:
                node = node.get(key)
                if node is None:
                    return nodes
            if node:
                nodes.append(node)
        return nodes

    def _positive(self, nodes: list[Node]) -> bool:
        return all(node[0].positive if isinstance(node, tuple) else not self._layer_negative
                   for node in nodes)
