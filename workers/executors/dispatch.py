"""Which executor runs a step: policy only (DESIGN §5).

- ``local``: every step in-process (lowest latency; the default).
- ``spark``: every step on Spark (the scale-out mode).
- ``auto``: ticks of at least ``tick_datoms`` datoms (replay, catch-up, bulk loads) and
  evaluations over at least ``bootstrap_datoms`` datoms (a new query's bootstrap) go to
  Spark, the rest run locally.

When Spark starts and what a failed Spark job does (fail, or redo the step locally) is
:class:`~workers.executors.spark.backend.SparkBackend`'s.  The thresholds come from
``bench/crossover.py`` and ``bench/bootstrap.py`` (``docs/spark.md``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from workers.arrangements import ArrangementRegistry
from workers.arrangements.delta import TickDelta
from workers.errors import ErrorCode, WorkersError
from workers.executors.local import LocalExecutor, PreparedPlan
from workers.executors.rows import Stepped
from workers.executors.rules import PreparedRules
from workers.executors.vectorised import VectorExecutor, VectorPlan
from workers.plan.ir import Body, Plan, RulesPlan

if TYPE_CHECKING:
    from workers.executors.spark import SparkExecutor, SparkSettings
    from workers.executors.spark.backend import SparkBackend

T = TypeVar("T")
EXECUTORS = ("local", "spark", "auto")
# Measured on 2 cores (docs/spark.md, "`auto` re-measured"): Spark's tasks run the local
# executor's own code, so on one machine they can beat it only by the cores they add, minus
# a job's floor and each task's opening of the state.  A bootstrap on `local[2]` loses at
# 10^6 and 3x10^6 datoms (0.70 s against 0.37 s, 1.41 against 1.22 s) and wins at 10^7
# (4.3-4.5 s against 5.4-6.3 s): the bootstrap threshold is that crossing.  A tick loses up
# to 10^6 edges (1.14x slower at 3x10^5, 1.22x at 10^6: two jobs and a shuffle, where the
# local executor steps a big tick on two threads): the tick threshold stays above that.  A
# cluster with more cores moves both down (DELTALOG_SPARK_TICK_DATOMS,
# DELTALOG_SPARK_BOOTSTRAP_DATOMS).
# A tick of this many datoms or more steps a query a frame at a time when the vectorised
# executor takes its plan: where the two paths cost the same on the triangle over 10^6
# bounded-degree edges (`python -m bench vector`: 8.1 vs 8.2 ms at 64, 1.5x at 128, 3.6x at
# 1,024 in the vectorised executor's favour; 3x against it at 16).
VECTOR_DATOMS = 64
SPARK_TICK_DATOMS = 2_000_000
SPARK_BOOTSTRAP_DATOMS = 10_000_000


@dataclass(frozen=True, slots=True)
class AutoPolicy:
    """Where ``auto`` sends work to Spark: ticks and bootstraps at least this large."""

    tick_datoms: int = SPARK_TICK_DATOMS
    bootstrap_datoms: int = SPARK_BOOTSTRAP_DATOMS


DEFAULT_AUTO = AutoPolicy()


@dataclass(frozen=True, slots=True)
class Prepared:
    """A plan bound to the local arrangements, row at a time and (when the vectorised
    executor takes it) a frame at a time; Spark binds it on demand (costs nothing)."""

    plan: Body
    local: PreparedPlan | PreparedRules
    vector: VectorPlan | None = None

    @property
    def local_only(self) -> bool:
        """A query with derived relations keeps them in process (``local`` holds them, and
        the joins they run, on Spark or not, were chosen when it was prepared)."""
        return self.plan.keeps_relations

def _plain(prepared: Prepared) -> Plan:
    assert isinstance(prepared.plan, Plan), "derived relations run locally"
    return prepared.plan


class Dispatch:
    """Holds the executors of one engine and picks one for each step and evaluation; Spark's
    start and failures are :class:`~workers.executors.spark.backend.SparkBackend`'s."""

    def __init__(self, mode: str, old: ArrangementRegistry, spark: SparkSettings | None = None,
                 auto: AutoPolicy = DEFAULT_AUTO) -> None:
        if mode not in EXECUTORS:
            raise WorkersError(f"unknown executor {mode!r}; one of {', '.join(EXECUTORS)}",
                               code=ErrorCode.CONFIG)
        self.mode, self.auto = mode, auto
        self.local = LocalExecutor(old)
        self.vector = VectorExecutor(old)
        self.vector_datoms = VECTOR_DATOMS
        self.last = "local"  # the executor of the latest step or evaluation
        self._old = old
        self.backend: SparkBackend | None = None
        if mode != "local":
            from workers.executors.spark.backend import SparkBackend

            self.backend = SparkBackend(spark, old, required=mode == "spark")

    def prepare(self, plan: Body) -> Prepared:
        if isinstance(plan, RulesPlan):
            if self.mode == "spark":
                return Prepared(plan, self._spark_rules(plan))
            return Prepared(plan, self.local.prepare(plan))
        return Prepared(plan, self.local.prepare(plan),
                        self.vector.prepare(plan) if self.vector.takes(plan) else None)

    def _spark_rules(self, plan: RulesPlan) -> PreparedRules:
        """Derived relations whose join programs run on Spark (``executor=spark``; under
        ``auto`` a query's derived relations are kept locally: its ticks are small); the
        rules read the tick's delta from the local executor's tries, as its own do."""
        from workers.executors.spark.rules import SparkJoins

        spark, delta = self.spark, self.local.input.arrangement
        assert spark is not None
        return PreparedRules(plan, self._old.ids, delta,
                             lambda relations: SparkJoins(spark, self._old, delta, relations))

    def steps(self, queries: Mapping[str, Prepared], delta: TickDelta) -> dict[str, Stepped]:
        """The tick's set changes of each query by ``delta`` and the work they took, on the
        executor the tick's size calls for (a query with derived relations: where its
        prepared joins run) — those going to Spark in one job.  Each query's ``seconds``
        are its step's; a Spark job's are shared equally among its queries."""
        large = len(delta) >= self.auto.tick_datoms
        on_spark = [name for name, prepared in queries.items() if self._on_spark(large, prepared)]
        stepped: dict[str, Stepped] = {}
        if on_spark:
            started = time.perf_counter()
            plans = [_plain(queries[name]) for name in on_spark]
            done = self._attempt(lambda spark: spark.steps(
                [spark.prepare(plan) for plan in plans], delta))
            if done is not None:
                seconds = (time.perf_counter() - started) / len(on_spark)
                for name, (changes, work) in zip(on_spark, done, strict=True):
                    work.executor = "spark"
                    work.seconds += seconds  # and a share of a job done before
                    stepped[name] = changes, work
        for name, prepared in queries.items():
            if name not in stepped:
                started = time.perf_counter()
                here = self._step_here(prepared, delta)
                here[1].seconds = time.perf_counter() - started
                stepped[name] = here
        return stepped

    def remote_plans(self, queries: Iterable[Prepared]) -> tuple[Plan, ...]:
        """The plans of ``queries`` that :meth:`steps` sends to Spark under ``spark``."""
        return tuple(_plain(prepared) for prepared in queries if not prepared.local_only)

    def _step_here(self, prepared: Prepared, delta: TickDelta) -> Stepped:
        """One query's step in this process: a frame at a time from ``vector_datoms``."""
        if prepared.vector is not None and len(delta) >= self.vector_datoms:
            return self.vector.step(prepared.vector, delta)
        return self.local.step(prepared.local, delta)

    def evaluate(self, prepared: Prepared) -> Stepped:
        """The full result over the current state (a bootstrap when a query registers)."""
        large = self.mode == "auto" and len(self._old) >= self.auto.bootstrap_datoms
        if self._on_spark(large, prepared):
            plan = _plain(prepared)
            done = self._attempt(lambda spark: spark.evaluate(spark.prepare(plan)))
            if done is not None:
                return done
        self._old.state.compact_for_scan()
        vector = prepared.vector
        if vector is not None and vector.full is not None and len(self._old) >= self.vector_datoms:
            return self.vector.evaluate(vector)
        return self.local.evaluate(prepared.local)

    def applied(self, delta: TickDelta) -> None:
        """The database took the tick's ``delta``; under ``auto`` Spark's copy of it follows
        (under ``spark`` Spark's state is the database, which wrote it)."""
        if self.backend is not None and self.mode == "auto":
            self.backend.applied(delta)

    def restored(self) -> None:
        """The database was replaced by a snapshot's; under ``auto`` Spark's copy of it is
        written again on next use."""
        if self.backend is not None and self.mode == "auto":
            self.backend.restored()

    def idle(self) -> None:
        """Nothing to step: under ``auto`` Spark's copy compacts (under ``spark`` the
        database does)."""
        if self.mode == "auto" and self.spark is not None:
            self.spark.state.idle()

    @property
    def spark(self) -> SparkExecutor | None:
        """The Spark executor, once started."""
        return None if self.backend is None else self.backend.executor

    @property
    def memory_values(self) -> int:
        """The values of a dictionary in files kept in memory (``SparkSettings``)."""
        assert self.backend is not None
        return self.backend.settings.memory_values

    def _attempt(self, action: Callable[[SparkExecutor], T]) -> T | None:
        assert self.backend is not None
        result = self.backend.attempt(action)
        if result is None:
            self.last = "local"
        return result

    def _on_spark(self, large: bool, prepared: Prepared) -> bool:
        """Whether this step goes to Spark (then ``prepared.plan`` is a Plan)."""
        if prepared.local_only:  # its derived relations say where its joins run
            self.last = "spark" if self.mode == "spark" else "local"
            return False
        if self.backend is None or (self.mode == "auto" and not large):
            self.last = "local"
            return False
        self.last = "local" if self.backend.ready() is None else "spark"
        return self.last == "spark"
