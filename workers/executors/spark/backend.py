"""Spark for one engine: when it starts, and what a failed Spark job does.

- ``required`` (``executor=spark``): Spark starts with the engine; an engine that cannot
  start it fails right there, and a failed job propagates (the worker restarts and resumes
  exactly once).  It never falls back silently.
- otherwise (``auto``): Spark starts on first need; if it cannot, the engine says why in the
  log once and stays local; a failed job is logged, the executor's state dropped (written
  again from the arrangements on next use) and ``None`` says "do it locally" — safe,
  because executors only read the arrangements.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from workers.arrangements import ArrangementRegistry
from workers.arrangements.delta import TickDelta
from workers.errors import ErrorCode, WorkersError
from workers.executors.spark.session import SparkSettings, spark_session

if TYPE_CHECKING:
    from workers.executors.spark.executor import SparkExecutor

T = TypeVar("T")
log = logging.getLogger("deltalog.dispatch")


class SparkBackend:
    """Starts the :class:`SparkExecutor` of one engine and runs its actions."""

    def __init__(self, settings: SparkSettings | None, db: ArrangementRegistry,
                 required: bool) -> None:
        self.settings = settings or SparkSettings()
        self.required = required
        self.executor: SparkExecutor | None = None
        self._db = db
        self._failed = False
        if required:
            self.executor = self._start()

    def ready(self) -> SparkExecutor | None:
        """The executor, started now if this is its first need (None: it cannot start)."""
        if self.executor is None and not self._failed:
            try:
                self.executor = self._start()
            except WorkersError as error:
                self._failed = True
                log.warning("executor=auto stays local: %s", error)
        return self.executor

    def attempt(self, action: Callable[[SparkExecutor], T]) -> T | None:
        """``action`` on the started executor; its failure as the module's docstring says.
        Spark fails with many exception types (Py4J, PySpark, Arrow), hence the broad catch."""
        executor = self.executor
        assert executor is not None, "attempt after ready"
        try:
            return action(executor)
        except Exception as error:
            if self.required:
                raise
            log.warning("executor=auto: Spark failed, this step runs locally: %s", error)
            executor.state.restored()
            return None

    def applied(self, delta: TickDelta) -> None:
        """The arrangements took the tick's ``delta``; Spark's state, once written, follows
        (under ``auto``: under ``spark`` the state is the database, which writes it)."""
        if self.executor is not None:
            self.attempt(lambda executor: executor.state.applied(delta.columns()))

    def restored(self) -> None:
        """The shared arrangements were replaced by a snapshot."""
        if self.executor is not None:
            self.executor.state.restored()

    def _start(self) -> SparkExecutor:
        from workers.executors.spark.executor import SparkExecutor
        from workers.executors.spark.shared import StateFollower, shared_state_at

        settings = self.settings
        if (settings.share or settings.follow) and (settings.state is None or not self.required):
            raise WorkersError("sharing or following a Spark state takes executor=spark and a "
                               "state location both engines reach (spark_state)",
                               code=ErrorCode.CONFIG)
        if settings.share and settings.follow:
            raise WorkersError("an engine shares its Spark state or follows another's, not both",
                               code=ErrorCode.CONFIG)
        session = spark_session(settings)
        opened = None  # a shared state to follow, or to write on where its last writer left it
        if settings.state is not None and (settings.follow or (
                settings.share and shared_state_at(settings.state))):
            opened = StateFollower.open(settings.state, settings.memory_values)
        return SparkExecutor(session, self._db, location=settings.state,
                             share=settings.share or settings.follow,  # a follower may lead
                             retain_seconds=settings.retain_seconds,
                             opened=opened, follows=settings.follow)
