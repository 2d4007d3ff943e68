"""What a tick did and what the worker holds, as Prometheus metrics (:mod:`workers.metrics`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from workers import metrics
from workers.arrangements import ArrangementRegistry
from workers.arrangements.keys import INDEX_ORDERS
from workers.executors import Work

SIZES_EVERY_S = 30.0  # the index bytes walk the layer's dicts: now and then, not every tick
SIZES_BUDGET = 100  # ... and at most 1 % of the time
_CALLS = metrics.EXTENDER_WORK.labels("calls")
_ELEMENTS = metrics.EXTENDER_WORK.labels("elements")
_STEP_SECONDS: dict[str, Any] = {}  # query -> its child of STEP_SECONDS


def observe_steps(work: Mapping[str, Work]) -> None:
    """One piece of a tick: each query's step time, executor and join work (label children
    looked up once: ``labels()`` costs more than the observation)."""
    metrics.TICK_CHUNKS.inc()
    steps: Counter[str] = Counter()
    calls = elements = 0
    for query, done in work.items():
        step_seconds = _STEP_SECONDS.get(query)
        if step_seconds is None:
            step_seconds = _STEP_SECONDS[query] = metrics.STEP_SECONDS.labels(query)
        step_seconds.observe(done.seconds)
        steps[done.executor] += 1
        calls += done.calls
        elements += done.elements
        if done.executor == "spark":
            metrics.SPARK_JOB_SECONDS.observe(done.seconds)
    for executor, count in steps.items():
        metrics.STEPS.labels(executor).inc(count)
    _CALLS.inc(calls)
    _ELEMENTS.inc(elements)


def forget_query(query: str) -> None:
    """A query left this worker: its series go (labels stay bounded by the live queries)."""
    if _STEP_SECONDS.pop(query, None) is not None:
        metrics.STEP_SECONDS.remove(query)


class StateGauges:
    """The index sizes and the dictionary's: datoms and values every tick (counted as they
    are applied), the indexes' bytes every
    ``SIZES_EVERY_S`` — or less often on a database so large that the walk would take more
    than 1 % of the time."""

    def __init__(self) -> None:
        self._next = 0.0

    def observe(self, db: ArrangementRegistry, datoms: int) -> None:
        """``datoms``: the database's size (under ``executor=spark`` not ``db``'s: the
        driver's registry is a window on Spark's state, and its bytes the driver's)."""
        for order in INDEX_ORDERS:
            metrics.ARRANGEMENT_DATOMS.labels(order.name).set(datoms)
        metrics.DICTIONARY_VALUES.labels("memory").set(db.ids.resident)
        metrics.DICTIONARY_VALUES.labels("files").set(db.ids.size - db.ids.resident)
        started = time.monotonic()
        if started < self._next:
            return
        for order in INDEX_ORDERS:
            metrics.ARRANGEMENT_BYTES.labels(order.name).set(db.state.index_bytes(order))
        took = time.monotonic() - started
        self._next = started + max(SIZES_EVERY_S, SIZES_BUDGET * took)
