"""Executor choice and honest failures: an engine asked for Spark that cannot start it says
why and how to fix it; only ``auto`` may stay local, and it says so in the log."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from workers.arrangements.batch import Ids
from workers.arrangements.delta import DatomColumns
from workers.arrangements.values import ValueIds
from workers.edn import keyword
from workers.engine import Engine
from workers.errors import ErrorCode, WorkersError
from workers.executors.dispatch import AutoPolicy
from workers.executors.spark import SparkSettings
from workers.executors.spark.backend import SparkBackend
from workers.executors.spark.dictionary import DriverValues
from workers.executors.spark.state import Manifest, Marks, StateStore


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")


def test_unknown_executor_is_refused_with_the_choices() -> None:
    with pytest.raises(WorkersError, match="unknown executor 'gpu'; one of local, spark, auto"):
        Engine(executor="gpu")


@pytest.mark.usefixtures("no_java")
def test_spark_without_java_fails_at_start_and_says_how_to_fix_it() -> None:
    with pytest.raises(WorkersError, match=r"Java runtime \(17 or newer\).*JAVA_HOME") as error:
        Engine(executor="spark")
    assert error.value.code is ErrorCode.SPARK


@pytest.mark.usefixtures("no_java")
def test_auto_without_java_stays_local_and_logs_why(caplog: pytest.LogCaptureFixture) -> None:
    engine = Engine(executor="auto", auto=AutoPolicy(tick_datoms=1, bootstrap_datoms=1))
    engine.register("q", "[:find ?a :where [?a :g/to ?b]]")
    with caplog.at_level(logging.WARNING, "deltalog.dispatch"):
        assert engine.transact("[[:db/add 1 :g/to 2]]") == {"q": {(1,): 1}}
        engine.transact("[[:db/add 2 :g/to 3]]")
    assert engine.dispatch.last == "local"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "executor=auto stays local" in warnings[0]


def test_local_engine_never_starts_spark() -> None:
    engine = Engine(executor="local")
    engine.transact("[[:db/add 1 :g/to 2]]")
    assert engine.dispatch.spark is None


@pytest.mark.parametrize(("master", "cores"), [("local", 1), ("local[3]", 3), ("local[2,4]", 2),
                                                ("spark://host:7077", 2)])
def test_cores_of_a_master(master: str, cores: int) -> None:
    assert SparkSettings(master=master).cores() == cores


class FailingState:
    """The versions of a state of its own (not shared) whose appends all fail."""

    opened = follower = marks = None

    def __init__(self) -> None:
        self.restored_count = 0
        self.store = StateStore(values=DriverValues(lambda: ValueIds()), shared=False)

    def applied(self, delta: object) -> None:
        raise RuntimeError("Py4JJavaError: Job aborted")

    def restored(self) -> None:
        self.restored_count += 1

    def moved(self) -> None:
        """A tick that changed nothing: a state of its own stamps nothing."""

    def hold_dictionary(self) -> None:
        """The state holds the driver's dictionary from the start (``store.values``)."""

    def manifest(self) -> Manifest:
        """Under ``executor=spark`` the state is written at the start, with its dictionary
        (the driver reads it there): both empty."""
        if self.store.manifest is None:
            return self.store.reset(DatomColumns.of({}), Marks(0, 0, [], 0))
        return self.store.manifest


class FailingSpark:
    """A Spark executor whose jobs all fail (a lost cluster, an out-of-memory executor)."""

    def __init__(self) -> None:
        self.state = FailingState()
        self.split_datoms = 10_000

    def prepare(self, plan: object) -> object:
        return plan

    def evaluate(self, prepared: object) -> dict[object, int]:
        raise RuntimeError("Py4JJavaError: Job aborted")

    def steps(self, prepared: object, delta: object) -> list[dict[object, int]]:
        raise RuntimeError("Py4JJavaError: Job aborted")

    def fetch(self, forward: object, backward: object, pairs: object, triples: object,
              hops: int = 0) -> tuple[Ids, Ids, Ids]:
        """The datoms a tick normalises against: none (the database is empty), so that the
        step is the job that fails."""
        none = np.zeros(0, np.int32)
        return none, none, none

    def read_and_step(self, read: object, events: object, plans: object,
                      pulls: object = None) -> tuple[Ids, Ids, Ids]:
        """A small tick's read and step in one job: the job that fails."""
        raise RuntimeError("Py4JJavaError: Job aborted")

    def statistics(self) -> dict[int, tuple[int, int]]:
        return {}


def _engine_on(mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Engine, FailingSpark]:
    spark = FailingSpark()
    monkeypatch.setattr(SparkBackend, "_start", lambda self: spark)
    return Engine(executor=mode, auto=AutoPolicy(tick_datoms=1, bootstrap_datoms=0)), spark


def test_auto_redoes_a_failed_spark_step_locally(monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    engine, spark = _engine_on("auto", monkeypatch)
    with caplog.at_level(logging.WARNING, "deltalog.dispatch"):
        assert engine.register("q", "[:find ?a :where [?a :g/to ?b]]") == {}
        assert engine.transact("[[:db/add 1 :g/to 2]]") == {"q": {(1,): 1}}
    assert engine.dispatch.last == "local"
    assert spark.state.restored_count >= 2  # the state is dropped, to be written again
    assert any("Spark failed, this step runs locally" in r.getMessage() for r in caplog.records)


def test_spark_mode_lets_a_failed_step_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    engine, _ = _engine_on("spark", monkeypatch)
    engine.register("q", "[:find ?a :where [?a :g/to ?b]]", bootstrap=False)
    with pytest.raises(RuntimeError, match="Job aborted"):
        engine.transact("[[:db/add 1 :g/to 2]]")


def test_a_bootstrap_reads_the_database_merged_into_one_batch() -> None:
    """A full evaluation reads every batch at every level: the spine is merged first (and
    waited for) when its newer batches are worth it, then evaluated."""
    engine = Engine()
    engine.db.state.compact_from = 10
    edges = np.arange(1000)
    engine.transact_columns(edges[:900], keyword("g/to"), edges[:900] + 1)
    engine.transact_columns(edges[900:], keyword("g/to"), edges[900:] + 1)
    assert len(engine.db.state.batches) == 2
    rows = engine.register("q", "[:find ?a ?c :where [?a :g/to ?b] [?b :g/to ?c]]")
    assert len(rows) == 999 and len(engine.db.state.batches) == 1
