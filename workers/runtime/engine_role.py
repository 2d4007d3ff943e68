"""The worker's engine, and its role in a Spark state a fleet shares (``spark_sharing=fleet``).

Alone (the default), a worker's engine is its own: made with the worker, it writes its own
database, which the worker's snapshots keep.  In a fleet sharing one Spark state, the state
is the fleet's database and its engine writes it or follows it, as the worker owns the
queries topic's partition 0 or not — known only once in the group, so the engine is made
then.  The role, in numbered steps:

1. the group's first assignment: owning partition 0, the engine writes the state (it takes
   it up where its last writer stopped, or starts it); else it follows it, once a writer
   has started it (:meth:`EngineRole.make`);
2. a writer stamps the state's next versions with the refusals whose dead letters are not
   committed yet (:meth:`EngineRole.stamp`), so that a writer taking over writes them;
3. a follower steps its writer's versions each tick (:meth:`EngineRole.follow`) — or,
   further behind than its writer keeps versions, opens the state anew at the newest and
   its worker owns its queries anew, caught up from their committed views; given
   partition 0, it writes the dead letters of the refusals its writer stamped
   (:meth:`EngineRole.stamped`), and writes the state itself as soon as it is at its
   writer's newest version (:meth:`EngineRole.lead`);
4. partition 0 revoked, a writer steps down and follows (:meth:`EngineRole.hand_over`).

This module is the only one that calls the engine's replication API (``lead``,
``step_down``, ``follow``, ``follow_anew``, ``following``, ``stamp_refusals``,
``stamped_refusals``).
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from workers.config import WorkerConfig
from workers.engine import Changes, Engine
from workers.errors import ErrorCode, WorkersError
from workers.runtime.dead_letters import DeadLetters

if TYPE_CHECKING:
    from workers.executors.spark import SparkSettings

log = logging.getLogger("workers.runtime.worker")  # the worker's log, whichever part writes
POLL_S = 0.2  # one wait for a writer to start the shared state
MakeEngine = Callable[["SparkSettings | None"], Engine]


class Role(enum.Enum):
    ALONE = "alone"  # the engine's database is its own
    UNASSIGNED = "unassigned"  # sharing, before the group's first assignment: no engine yet
    SHARING = "sharing"  # writing or following the shared state (the engine knows which)


class EngineRole:
    """The engine of the moment, made when its role is known (:attr:`role`)."""

    def __init__(self, config: WorkerConfig, make: MakeEngine | None = None) -> None:
        self._config = config
        self._make = make or self._new_engine
        self.shared = config.spark_sharing == "fleet"
        self._spark = (None if config.executor == "local" and not self.shared
                       else config.spark())
        self._engine: Engine | None = None if self.shared else self._make(self._spark)
        self.role = Role.UNASSIGNED if self.shared else Role.ALONE

    def _new_engine(self, spark: SparkSettings | None) -> Engine:
        config = self._config
        return Engine(strategy=config.strategy, executor=config.executor, spark=spark,
                      auto=config.auto(), threads=config.step_threads)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise WorkersError("a worker sharing a Spark state has no engine before the "
                               "group's first assignment", code=ErrorCode.CONFIG)
        return self._engine

    @property
    def made(self) -> bool:
        return self.role is not Role.UNASSIGNED

    @property
    def following(self) -> bool:
        """Following the shared state: the engine's transactions are its writer's."""
        return self.role is Role.SHARING and self.engine.following

    def make(self, writing: bool) -> Engine:
        """Step 1: the engine of a worker of a fleet sharing a Spark state: its writer (it
        takes up the state where its last writer stopped, or starts it), or a follower —
        which waits for the writer to start the state."""
        from workers.executors.spark.shared import shared_state_at  # PySpark only when asked

        assert self.role is Role.UNASSIGNED
        assert self._spark is not None and self._spark.state is not None
        deadline = time.monotonic() + 2 * self._config.session_timeout_ms / 1000 + 60
        while not (started := shared_state_at(self._spark.state)) and not writing:
            if time.monotonic() > deadline:
                raise WorkersError(f"no writer started the shared Spark state at "
                                   f"{self._spark.state!r}: the worker owning the queries "
                                   "topic's partition 0 writes it", code=ErrorCode.SPARK)
            time.sleep(POLL_S)
        engine = self._engine = self._make(replace(self._spark, share=writing,
                                                   follow=not writing))
        self.role = Role.SHARING
        if not started:  # a new state: before the log's first transaction
            engine.seek(-1)
        log.info("%s the shared Spark state from tx %d", "writing" if writing else "following",
                 engine.tx)
        return engine

    def stamp(self, dead_letters: DeadLetters) -> None:
        """Step 2: the state's next versions carry the refusals kept (a writer taking over)."""
        if self.role is Role.SHARING:
            self.engine.stamp_refusals(dead_letters.refusals())

    def follow(self, dead_letters: DeadLetters) -> Changes | None:
        """Step 3: a follower's tick, its writer's versions since its own — None when it
        could not step (its writer no longer keeps the versions between, or replaced the
        state) and opened the state anew at the newest: its queries' changes since are
        known only from their committed views (the worker owns them anew).  Writing the
        dead letters (it is about to write the state), it writes those of the refusals its
        writer stamped and did not write."""
        from workers.executors.spark.shared import FollowerBehind  # PySpark only when asked

        engine = self.engine
        changes: Changes | None
        try:
            changes = engine.follow()
        except FollowerBehind as behind:
            log.warning("%s: following anew from the newest version", behind)
            engine.follow_anew()
            log.info("following the shared Spark state anew from tx %d", engine.tx)
            changes = None
        if dead_letters.writing:
            self.stamped(dead_letters)
        return changes

    def stamped(self, dead_letters: DeadLetters) -> None:
        """Step 3: the refusals the shared state's version is stamped with, for the dead
        letters this worker now writes: its last writer met them and did not write them."""
        if self.role is Role.SHARING:
            dead_letters.stamped(self.engine.stamped_refusals())

    def lead(self, position: int) -> bool:
        """Step 3: a follower owning the queries topic's partition 0 writes the shared state
        from here on (at its writer's newest version; else it follows on and tries again
        after the next tick).  Whether it now writes: it reads the log after ``position``."""
        if not self.engine.lead():
            return False
        log.info("writing the shared Spark state from tx %d", position)
        return True

    def hand_over(self) -> None:
        """Step 4: partition 0 revoked: another worker writes the shared state now."""
        if self.role is Role.SHARING and not self.engine.following:
            self.engine.step_down()
            log.info("following the shared Spark state from tx %d", self.engine.tx)
