"""What a tick did and what the worker holds, as Prometheus metrics (:mod:`workers.metrics`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping

from workers import metrics
from workers.arrangements import MemoryArrangement
from workers.arrangements.keys import INDEX_ORDERS
from workers.executors import Work

SIZES_EVERY_S = 30.0  # the index sizes walk the tries: now and then, not every tick


def observe_steps(work: Mapping[str, Work]) -> None:
    """One piece of a tick: each query's step time, executor and join work."""
    metrics.TICK_CHUNKS.inc()
    for query, done in work.items():
        metrics.STEP_SECONDS.labels(query).observe(done.seconds)
        metrics.STEPS.labels(done.executor).inc()
        metrics.EXTENDER_WORK.labels("calls").inc(done.calls)
        metrics.EXTENDER_WORK.labels("elements").inc(done.elements)
        if done.executor == "spark":
            metrics.SPARK_JOB_SECONDS.observe(done.seconds)


def forget_query(query: str) -> None:
    """A query left this worker: its series go (labels stay bounded by the live queries)."""
    with contextlib.suppress(KeyError):
        metrics.STEP_SECONDS.remove(query)


class StateGauges:
    """The index sizes, refreshed at most every ``SIZES_EVERY_S``."""

    def __init__(self) -> None:
        self._sized_at = -SIZES_EVERY_S

    def observe(self, state: MemoryArrangement) -> None:
        if time.monotonic() - self._sized_at < SIZES_EVERY_S:
            return
        self._sized_at = time.monotonic()
        datoms = len(state)
        for order in INDEX_ORDERS:
            metrics.ARRANGEMENT_DATOMS.labels(order.name).set(datoms)
            metrics.ARRANGEMENT_BYTES.labels(order.name).set(state.index_bytes(order))
