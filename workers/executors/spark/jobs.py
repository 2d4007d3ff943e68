"""Each executor action in its own Spark job group: progress while it runs, counts after.

A bootstrap over a large database can run for minutes; :class:`JobGroups` reports how many
of the group's tasks are done every ``interval_s`` (to the log by default), and records the
jobs and stages each action took (:class:`JobCount`) — what the lineage test compares and
what metrics export — and their running ``total`` (a tick is several actions: the read of
what it normalises against, then its steps).  Spark Connect has no status tracker: there,
actions run unreported.  An action's tasks also add up the work they did in
:meth:`JobGroups.counters` (accumulators, which Connect has not either).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING

from pyspark.accumulators import Accumulator, AccumulatorParam

if TYPE_CHECKING:
    from pyspark import SparkContext, StatusTracker
    from pyspark.sql import SparkSession

Progress = Callable[[str], None]
log = logging.getLogger("deltalog.spark")
PROGRESS_INTERVAL_S = 5.0
# Group names are unique per process, not per JobGroups: engines in one process share the
# SparkContext, and a name used twice would count the other engine's jobs too.
_GROUP_NUMBERS = count()


@dataclass(frozen=True, slots=True)
class JobCount:
    jobs: int = 0
    stages: int = 0


class JobGroups:
    """Runs actions in numbered job groups of one session."""

    def __init__(self, session: SparkSession, progress: Progress = log.info,
                 interval_s: float = PROGRESS_INTERVAL_S) -> None:
        connect = type(session).__module__.startswith("pyspark.sql.connect")
        self._context: SparkContext | None = None if connect else session.sparkContext
        self.progress, self.interval_s = progress, interval_s
        self.last = JobCount()
        self.total = JobCount()

    def counters(self, size: int) -> Accumulator[list[int]] | None:
        """``size`` counts that the tasks of the next action add to (their work, sent back
        with each task's result); None under Spark Connect."""
        return None if self._context is None else self._context.accumulator([0] * size,
                                                                            _Sums())

    @contextmanager
    def action(self, what: str) -> Iterator[None]:
        """Run the enclosed Spark work as one group; report it while it runs."""
        if self._context is None:
            yield
            return
        group = f"deltalog-{next(_GROUP_NUMBERS)}"
        self._context.setJobGroup(group, what)
        tracker = self._context.statusTracker()
        done = threading.Event()
        reporter = threading.Thread(target=self._report, args=(tracker, group, what, done),
                                    daemon=True)
        reporter.start()
        try:
            yield
        finally:
            done.set()
            reporter.join()
            # The tracker learns of jobs from Spark's listener bus, asynchronously: let it
            # drain first, or a group that ran jobs may still count none.
            self._context._jsc.sc().listenerBus().waitUntilEmpty()
            self.last = _count(tracker, group)
            self.total = JobCount(self.total.jobs + self.last.jobs,
                                  self.total.stages + self.last.stages)

    def _report(self, tracker: StatusTracker, group: str, what: str,
                done: threading.Event) -> None:
        while not done.wait(self.interval_s):
            finished = total = 0
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage in info.stageIds if info else ():
                    stage_info = tracker.getStageInfo(stage)
                    if stage_info is not None:
                        finished += stage_info.numCompletedTasks
                        total += stage_info.numTasks
            self.progress(f"{what}: {finished}/{total} Spark tasks done")


class _Sums(AccumulatorParam[list[int]]):
    """Lists of counts, added up place by place."""

    def zero(self, value: list[int]) -> list[int]:
        return [0] * len(value)

    def addInPlace(self, value1: list[int], value2: list[int]) -> list[int]:
        return [a + b for a, b in zip(value1, value2, strict=True)]


def _count(tracker: StatusTracker, group: str) -> JobCount:
    jobs = tracker.getJobIdsForGroup(group)
    infos = [tracker.getJobInfo(job) for job in jobs]
    return JobCount(len(jobs), sum(len(info.stageIds) for info in infos if info))
