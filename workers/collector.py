"""The cyclic garbage collector kept off the bulk work.

Normalising a batch makes a Python object or two per datom — the parsed ops' tuples, the
decoded forms — none of them part of a cycle, yet every 700 of them start a collection,
and each full one walks every object the process holds (a worker's ~58,000 at its start:
14–50 ms a time).  Loading 10^6 datoms in transactions of 10^4 spent ~0.7 s of ~2.3 s in
full collections (``docs/benchmarks.md``, "The collector during bulk loads").  Two remedies:

- the parsed ops (in a worker's tick, the decoded forms too) are made and freed while the
  collector is paused, so no collection ever sees them (reference counting frees them as
  always);
- a worker's process, once started, freezes what it has made so far — modules, clients, the
  engine — out of the collector's sight for good: they live as long as the process.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cycle collection inside the block (as it was after it: a caller that disabled the
    collector keeps it disabled)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def freeze_long_lived() -> None:
    """Every object made so far is left out of future collections (``gc.freeze``): for a
    process that has finished starting and keeps what it made until it exits.  Cycles among
    them are never collected — so not for a process that starts workers again and again."""
    gc.freeze()
