"""Each executor action in its own Spark job group: progress while it runs, counts after.

A bootstrap over a large database can run for minutes; :class:`JobGroups` reports how many
of the group's tasks are done every ``interval_s`` (to the log by default), and records the
jobs and stages each action took (:class:`JobCount`) — what the lineage test compares and
what metrics export — and their running ``total`` (a tick may be several actions: the read
of what it normalises against, then its steps, when they are not one).  Spark Connect has
no status tracker: there, actions run unreported.  An action's tasks also add up the work
they did in :meth:`JobGroups.counters` (accumulators, which Connect has not either).
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

from workers.executors.work import Work

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


@dataclass(frozen=True, slots=True)
class WorkCounts:
    """The work the tasks of one action did for each of its ``plans`` (calls and elements),
    sent back with each task's result; ``sums`` is None under Spark Connect (nothing is
    counted: no accumulators there)."""

    plans: int
    sums: Accumulator[list[int]] | None

    def add(self, plan: int, work: Work) -> None:
        """A task's ``work`` for plan number ``plan``."""
        if self.sums is not None:
            counts = [0] * (2 * self.plans)
            counts[2 * plan:2 * plan + 2] = work.calls, work.elements
            self.sums.add(counts)

    def of(self, plan: int) -> Work | None:
        """The tasks' work for plan number ``plan`` (on the driver, after the action); None
        when nothing is counted."""
        if self.sums is None:
            return None
        calls, elements = self.sums.value[2 * plan:2 * plan + 2]
        return Work(calls, elements)


class JobGroups:
    """Runs actions in numbered job groups of one session."""

    def __init__(self, session: SparkSession, progress: Progress = log.info,
                 interval_s: float = PROGRESS_INTERVAL_S) -> None:
        connect = type(session).__module__.startswith("pyspark.sql.connect")
        self._context: SparkContext | None = None if connect else session.sparkContext
        self.progress, self.interval_s = progress, interval_s
        self.last = JobCount()
        self.total = JobCount()

    def counters(self, plans: int) -> WorkCounts:
        """What the tasks of the next action add their work to, for each of its ``plans``."""
        return WorkCounts(plans, None if self._context is None else
                          self._context.accumulator([0] * (2 * plans), _Sums()))

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
