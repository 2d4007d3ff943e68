"""Background compaction of a spine: its batches merged into one on another thread.

Geometric merging (``spine.py``) leaves O(log n) batches, and a batch read searches each.
When the spine is large (``compact_from`` datoms) and the newer batches hold a share of the
oldest (an eighth after a write, a 64th when the owner is idle), all of them are merged into
one on the compaction thread; until then, when the batches after the oldest are many, those
are merged into one (a *minor* compaction, :func:`_minor`), which rewrites the recent ticks'
datoms and not the oldest batch.  The merge is a sum, so the Z-set is the same before and
after; NumPy's sorts and copies release the GIL, so it runs beside the ticks on another
core.  Its batch is *adopted* — put in place of the batches it merged, which newer batches
never merge into meanwhile — by the first write or read after it is done, except while
several threads read (:meth:`Compaction.shared_reads`).  The merged batch comes with the
sieves the first of them had made (:func:`merged_and_sieved`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from workers.arrangements.datom_batch import DatomBatch
from workers.arrangements.keys import INDEX_ORDERS
from workers.arrangements.spine_state import SpineState

COMPACTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spine-compaction")
# The batches after the oldest are merged into one (a *minor* compaction) when they are
# this many or more, hold this many datoms, and those after the second hold this share of
# it: between two merges of everything, a tick's reads meet one batch of the recent ticks
# and a few small ones, not O(log n) of every size (each searched for the frame's rows:
# ticks of 1,000 over a tenth of LiveJournal, 900 of them in a row: p50 16.5 -> 15.4 ms,
# p99 35 -> 25.5 ms, the process's CPU the same; docs/benchmarks.md).
MINOR_BATCHES = 3
MINOR_FROM = 1 << 16
MINOR_SHARE = 8


class Compaction(SpineState):
    """A spine's background merges: when to start one, and adopting its batch."""

    __slots__ = ()

    def compact_idle(self) -> None:
        """The owner has nothing else to do: start merging every batch into one when the
        newer ones hold a 64th of the oldest (not the eighth a write waits for), so the
        ticks after the idle time search one batch (ticks of 1,000 on 10^6 edges, thread
        CPU: 11.5 ms on batches of 900,000 + 100,000, 8.9 ms on one).  Not for less: a
        merge rewrites the oldest batch, so the newer ones must pay for it."""
        self._adopt()
        self._compact_in_background(share=64)

    def compact_for_scan(self) -> None:
        """A full evaluation is about to read the whole spine: merge the batches first, and
        wait, when the idle trigger would (the newer batches hold a 64th of the oldest).  A
        bootstrap reads every batch at every level, and beside a running merge it shares
        the cores with it: the triangle over 10^7 edges took 32.5 s right after a load
        (five batches, a merge running), 9.3 s on one batch, which the merge made in 1.3 s."""
        self.settle()  # a merge running started from older batches: the rest after it
        self.compact_idle()
        self.settle()

    def _compact_in_background(self, share: int = 8) -> None:
        """Merge every batch into one on the compaction thread, when the spine is large and
        the newer batches hold a ``share``-th of the oldest: a batch read then searches one
        batch, not O(log n) (ticks of 1,000 on 10^7 datoms: ~35% less); else the newer
        batches into one, when :func:`_minor` says they are many."""
        batches = self.batches
        if (self.compact_from is None or self._compaction is not None or len(batches) < 2
                or sum(map(len, batches)) < self.compact_from):
            return
        if share * sum(map(len, batches[1:])) >= len(batches[0]):
            first = 0
        elif _minor(batches):
            first = 1
        else:
            return
        self._compaction = (first, len(batches), self._compactor.submit(
            merged_and_sieved, batches[first:]))

    def _adopt(self, wait: bool = False) -> None:
        """Put a finished (``wait``: the running) compaction's batch in place of the batches
        it merged (newer batches never merge into them meanwhile).  Writes and reads adopt
        it as soon as it is done, so the old batches are not kept alive beside it (a read
        that found nodes in them before still holds them, and they sum to the same)."""
        if self._compaction is None or not (wait or self._compaction[2].done()):
            return
        first, end, future = self._compaction
        self._compaction = None
        merged = future.result()
        self.batches[first:end] = [] if merged is None else [merged]
        self._forget()
        self._reindex(first)

    @contextmanager
    def shared_reads(self) -> Iterator[None]:
        """Batch reads from several threads at once: the layer frozen into its batch first,
        and no finished compaction adopted until the block ends (it would replace the
        batches and holders' bits a read in another thread is going through).  No write
        may happen meanwhile."""
        self._adopt()
        for order in INDEX_ORDERS:
            self._indexes(order)
        self._readers += 1
        try:
            yield
        finally:
            self._readers -= 1

    def settle(self) -> None:
        """Wait for a running background compaction and adopt its batch (tests, snapshots)."""
        self._adopt(wait=True)


def _minor(batches: Sequence[DatomBatch]) -> bool:
    """Whether to merge the batches after the oldest into one: they are ``MINOR_BATCHES``
    or more, of ``MINOR_FROM`` datoms or more, and those after the biggest of them (the
    second) hold a ``MINOR_SHARE``-th of it."""
    newer = [len(batch) for batch in batches[1:]]
    return (len(newer) >= MINOR_BATCHES and sum(newer) >= MINOR_FROM
            and MINOR_SHARE * sum(newer[1:]) >= newer[0])


def merged_and_sieved(batches: Sequence[DatomBatch]) -> DatomBatch | None:
    """:meth:`DatomBatch.merged`, with the levels' sieves the first (oldest) batch had made
    (the ones the queries' lookups ask, :mod:`workers.arrangements.sieve`) made here, on the
    compaction thread: else the first tick to read the merged batch makes them, ~0.1 s an
    order at a tenth of LiveJournal's size and ten times that at its size."""
    merged = DatomBatch.merged(batches)
    if merged is not None:
        for order, batch in batches[0].orders.items():
            for depth in batch.sieves():
                if merged.orders[order].sieved(depth):
                    merged.orders[order].sieve(depth)
    return merged
