"""Hand-written incremental maintainer for the directed triangle query, the baseline to beat.

    {:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}

Rows are a set: (a, b, c) is in the result iff edges a->b, a->c and b->c are all present.
`python -m bench handwritten` checks the maintainer against brute force on random graphs.
"""

from __future__ import annotations

import argparse
import random
from collections import defaultdict
from collections.abc import Sequence
from itertools import product

from bench.data import Edge

Row = tuple[int, int, int]
Changes = dict[Row, int]


class TriangleMaintainer:
    """Dict-of-sets adjacency plus per-edge triangle enumeration by set intersection."""

    def __init__(self) -> None:
        self.out: defaultdict[int, set[int]] = defaultdict(set)
        self.inc: defaultdict[int, set[int]] = defaultdict(set)

    def has_edge(self, u: int, v: int) -> bool:
        """Whether edge u->v is present."""
        return v in self.out.get(u, ())

    def triangles_with(self, u: int, v: int) -> set[Row]:
        """All result rows using edge u->v in any role; u->v must currently be present."""
        out, inc = self.out, self.inc
        rows = {(u, v, c) for c in out[u] & out[v]}  # u->v as a->b
        rows.update((u, b, v) for b in out[u] & inc[v])  # u->v as a->c
        rows.update((a, u, v) for a in inc[u] & inc[v])  # u->v as b->c
        return rows

    def apply(self, adds: list[Edge], removes: list[Edge]) -> Changes:
        """Apply one tick (removes first, then adds) and return the net change of the result.

        Edges are applied one at a time and their row changes summed, so edges of the same
        tick that meet in a triangle are counted once; no-op edges contribute nothing.
        """
        changes: Changes = {}
        for u, v in removes:
            if self.has_edge(u, v):
                accumulate(changes, self.triangles_with(u, v), -1)
                self.out[u].discard(v)
                self.inc[v].discard(u)
        for u, v in adds:
            if not self.has_edge(u, v):
                self.out[u].add(v)
                self.inc[v].add(u)
                accumulate(changes, self.triangles_with(u, v), +1)
        return changes


def accumulate(changes: Changes, rows: set[Row], weight: int) -> None:
    """Add `weight` to each row's change in place, dropping rows whose change cancels to 0."""
    for row in rows:
        total = changes.get(row, 0) + weight
        if total:
            changes[row] = total
        else:
            del changes[row]


def brute_force(edges: set[Edge]) -> set[Row]:
    """The triangle result by exhaustive search over pairs of edges."""
    return {(a, b, c) for (a, b), (a2, c) in product(edges, edges) if a == a2 and (b, c) in edges}


def self_check(nodes: int = 7, ticks: int = 300, seed: int = 1) -> None:
    """Compare the maintainer with brute force on random multi-edge ticks (self-loops too)."""
    rng = random.Random(seed)
    universe = [(u, v) for u in range(nodes) for v in range(nodes)]
    maintainer = TriangleMaintainer()
    edges: set[Edge] = set()
    for tick in range(ticks):
        adds = rng.sample(universe, rng.randint(0, 6))
        removes = [e for e in rng.sample(universe, rng.randint(0, 6)) if e not in adds]
        before = brute_force(edges)
        edges = (edges - set(removes)) | set(adds)
        after = brute_force(edges)
        expected = {row: 1 for row in after - before} | {row: -1 for row in before - after}
        got = maintainer.apply(adds, removes)
        if got != expected:
            raise AssertionError(f"tick {tick}: got {got}, expected {expected}")


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """No flags: the check is small and seeded."""
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Run the self-check and say so."""
    self_check()
    print("handwritten triangle maintainer agrees with brute force")
