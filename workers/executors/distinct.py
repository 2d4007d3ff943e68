"""Incremental ``distinct`` without per-query state: derivation-count changes → set changes.

For a row whose derivation count changes by ``d`` this tick, the set change is
``distinct(before + d) - distinct(before)`` where ``before`` is its count in the old state.
Instead of keeping every query's counts (memory per query), ``before`` is recounted from the
shared arrangements with the find variables bound — and only as far as needed:

- ``d > 0``: the row enters iff ``before == 0``: stop at the first derivation;
- ``d < 0``: the row leaves iff ``before == -d``: stop after ``-d + 1`` derivations.

So the work stays bounded by the change, and no state grows with the number of queries.
"""

from __future__ import annotations

from collections.abc import Mapping

from workers.executors.generic_join import CompiledProgram, count_support
from workers.executors.work import Work
from workers.zset import ZSet, distinct_change
from workers.zset.row import Row


def set_changes(support: CompiledProgram, derivations: Mapping[Row, int],
                work: Work) -> ZSet[Row]:
    out: ZSet[Row] = {}
    for row, delta in derivations.items():
        cap = 1 if delta > 0 else 1 - delta
        before = count_support(support, row, cap, work)
        change = distinct_change(before, delta)
        if change:
            out[row] = change
    return out
