"""Which executor runs a step: policy only (DESIGN §5).

- ``local``: every step in-process (lowest latency; the default).
- ``spark``: every step on Spark (the scale-out mode); Spark starts with the engine, and an
  engine that cannot start it fails right there — it never falls back silently.
- ``auto``: ticks of at least ``tick_datoms`` datoms (replay, catch-up, bulk loads) and
  evaluations over at least ``bootstrap_datoms`` datoms (a new query's bootstrap) go to
  Spark, the rest run locally.  Spark starts on first need; if it cannot, the engine says so
  in the log once and stays local; a Spark job that fails is logged and its step redone
  locally.  The thresholds come from ``bench/crossover.py`` and
  ``bench/bootstrap.py`` (``docs/spark.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from workers.arrangements import ArrangementRegistry
from workers.arrangements.delta import TickDelta
from workers.errors import ErrorCode, WorkersError
from workers.executors.local import LocalExecutor, PreparedPlan
from workers.executors.rules import PreparedRules
from workers.executors.vectorised import VectorExecutor, VectorPlan
from workers.executors.work import Work
from workers.plan.ir import Body, Plan, RulesPlan

if TYPE_CHECKING:
    from workers.executors.spark import SparkExecutor, SparkSettings

Row = tuple[Any, ...]
T = TypeVar("T")
EXECUTORS = ("local", "spark", "auto")
# Measured on 2 cores (docs/spark.md): Spark never beat the local executor, per tick up to
# 100,000 edges (4.8x slower there, the gap shrinking ~3.5x per decade) nor per bootstrap up
# to 10^6 datoms (4.8x slower).  The defaults sit where the trends cross; a cluster with
# more cores moves them down (DELTALOG_SPARK_TICK_DATOMS, DELTALOG_SPARK_BOOTSTRAP_DATOMS).
# A tick of this many datoms or more steps a query a frame at a time when the vectorised
# executor takes its plan: where the two paths cost the same on the triangle over 10^6
# bounded-degree edges (`python -m bench vector`: 8.1 vs 8.2 ms at 64, 1.5x at 128, 3.6x at
# 1,024 in the vectorised executor's favour; 3x against it at 16).
VECTOR_DATOMS = 64
SPARK_TICK_DATOMS = 2_000_000
SPARK_BOOTSTRAP_DATOMS = 10_000_000
log = logging.getLogger("deltalog.dispatch")


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
    """Holds the executors of one engine and picks one for each step and evaluation."""

    def __init__(self, mode: str, old: ArrangementRegistry, delta: TickDelta,
                 spark: SparkSettings | None = None, auto: AutoPolicy = DEFAULT_AUTO) -> None:
        if mode not in EXECUTORS:
            raise WorkersError(f"unknown executor {mode!r}; one of {', '.join(EXECUTORS)}",
                               code=ErrorCode.CONFIG)
        self.mode, self.auto = mode, auto
        self.local = LocalExecutor()
        self.vector = VectorExecutor(old, delta)
        self.vector_datoms = VECTOR_DATOMS
        self.last = "local"  # the executor of the latest step or evaluation
        self._old, self._tick, self._settings = old, delta, spark
        self._delta = delta.arrangement  # what the row-at-a-time executors and Spark read
        self._spark: SparkExecutor | None = None
        self._spark_failed = False
        if mode == "spark":
            self._spark = self._start_spark()

    def prepare(self, plan: Body) -> Prepared:
        if isinstance(plan, RulesPlan):
            if self.mode == "spark":
                return Prepared(plan, self._spark_rules(plan))
            return Prepared(plan, self.local.prepare(plan, self._old, self._delta))
        return Prepared(plan, self.local.prepare(plan, self._old, self._delta),
                        self.vector.prepare(plan))

    def _spark_rules(self, plan: RulesPlan) -> PreparedRules:
        """Derived relations whose join programs run on Spark (``executor=spark``; under
        ``auto`` a query's derived relations are kept locally: its ticks are small)."""
        from workers.executors.spark.rules import SparkJoins

        spark = self._spark
        assert spark is not None
        return PreparedRules(plan, self._old.ids, self._delta,
                             lambda relations: SparkJoins(spark, self._old, self._delta,
                                                          relations))

    def step(self, prepared: Prepared, delta_datoms: int, work: Work) -> dict[Row, int]:
        """The tick's set changes of one query, on the executor the tick's size calls for
        (a query with derived relations: where its prepared joins run)."""
        spark = self._spark_for(delta_datoms >= self.auto.tick_datoms, prepared)
        if spark is not None:
            self._tick.arranged()
            rows = self._on_spark(
                lambda: spark.step(spark.prepare(_plain(prepared), self._old, self._delta), work))
            if rows is not None:
                work.executor = "spark"
                return rows
        if prepared.vector is not None and delta_datoms >= self.vector_datoms:
            return self.vector.step(prepared.vector, work)
        self._tick.arranged()
        return self.local.step(prepared.local, work)

    def evaluate(self, prepared: Prepared, work: Work) -> dict[Row, int]:
        """The full result over the current state (a bootstrap when a query registers)."""
        large = self.mode == "auto" and len(self._old) >= self.auto.bootstrap_datoms
        spark = self._spark_for(large, prepared)
        if spark is not None:
            rows = self._on_spark(
                lambda: spark.evaluate(spark.prepare(_plain(prepared), self._old, self._delta),
                                       work))
            if rows is not None:
                return rows
        full = None if prepared.vector is None else prepared.vector.full
        if full is not None and len(self._old) >= self.vector_datoms:
            return self.vector.evaluate(full, work)
        return self.local.evaluate(prepared.local, work)

    def applied(self) -> None:
        """The shared arrangements took the tick's delta; Spark's mirror follows."""
        spark = self._spark
        if spark is not None:
            self._on_spark(lambda: spark.applied(self._tick.datoms()))

    def restored(self) -> None:
        if self._spark is not None:
            self._spark.restored()

    @property
    def spark(self) -> SparkExecutor | None:
        """The Spark executor, once started."""
        return self._spark

    def _on_spark(self, action: Callable[[], T]) -> T | None:
        """Run ``action`` on Spark.  Under ``spark`` a failure propagates; under ``auto`` it is
        logged, the mirror is dropped (rebuilt from the spine on next use) and None says
        "do it locally" — safe because executors only read the arrangements.  Spark fails
        with many exception types (Py4J, PySpark, Arrow), hence the broad catch."""
        try:
            return action()
        except Exception as error:
            if self.mode != "auto" or self._spark is None:
                raise
            log.warning("executor=auto: Spark failed, this step runs locally: %s", error)
            self._spark.restored()
            self.last = "local"
            return None

    def _spark_for(self, large: bool, prepared: Prepared) -> SparkExecutor | None:
        """The Spark executor if this step goes there (then ``prepared.plan`` is a Plan)."""
        if prepared.local_only:  # its derived relations say where its joins run
            self.last = "spark" if self.mode == "spark" else "local"
            return None
        if self.mode == "local" or (self.mode == "auto" and not large):
            self.last = "local"
            return None
        if self._spark is None and not self._spark_failed:
            try:
                self._spark = self._start_spark()
            except WorkersError as error:
                self._spark_failed = True
                log.warning("executor=auto stays local: %s", error)
        self.last = "local" if self._spark is None else "spark"
        return self._spark

    def _start_spark(self) -> SparkExecutor:
        from workers.executors.spark import SparkExecutor, SparkSettings, spark_session

        session = spark_session(self._settings or SparkSettings())
        return SparkExecutor(session, self._old)
