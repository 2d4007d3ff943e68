"""A big vectorised step on several cores: its rows cut into shares, one thread each.

A big step spends its time in NumPy's searches, sorts and gathers, which release the GIL,
so the shares of one step (the same :class:`~workers.executors.share.Share` cut that
Spark's tasks use) run side by side in threads of one process: a tick of 2,000 changes on
the skewed graph's 4-cycle took 1.35x less wall time on 2 cores (``docs/benchmarks.md``).
The shares only read: the state's spine adopts no finished compaction while they run
(:meth:`~workers.arrangements.spine.SpineArrangement.shared_reads`), the tick's delta is
arranged before they start, and each share counts its work apart.  Their outputs are
consolidated rows, so the step's result does not depend on how many threads ran it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

from workers.errors import ErrorCode, WorkersError
from workers.executors.share import WHOLE, Share
from workers.executors.work import Work

T = TypeVar("T")
MAX_THREADS = 4  # a worker shares its machine with its fleet and Kafka: not every core


def default_threads() -> int:
    """The cores of this machine, at most :data:`MAX_THREADS`."""
    return max(1, min(MAX_THREADS, os.cpu_count() or 1))


class Threads:
    """A pool of ``count`` threads (started at first use) running one step's shares."""

    def __init__(self, count: int = 1) -> None:
        if count < 1:
            raise WorkersError(f"a step's threads (step_threads) must be at least 1, not "
                               f"{count}", code=ErrorCode.CONFIG)
        self.count = count
        self._pool: ThreadPoolExecutor | None = None

    def map(self, task: Callable[[Share, Work], T], work: Work) -> list[T]:
        """``task`` for every share, each counting into its own Work, added to ``work``
        (one thread: the whole, in the caller's thread).  Returns when every share has
        ended; a share's exception is raised then."""
        if self.count == 1:
            return [task(WHOLE, work)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.count, thread_name_prefix="deltalog-step")
        works = [Work() for _ in range(self.count)]
        futures = [self._pool.submit(task, Share(i, self.count), works[i])
                   for i in range(self.count)]
        wait(futures)  # all ended, even when one failed: none reads past the step
        for counted in works:
            work.add(counted)
        return [future.result() for future in futures]
