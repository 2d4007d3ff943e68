"""EngineRole: the engine alone, or writing or following a shared Spark state — the one
caller of the engine's replication API (a stub engine records the calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workers.config import WorkerConfig
from workers.errors import WorkersError
from workers.executors.spark.shared import FollowerBehind
from workers.runtime.dead_letters import DeadLetters, Refused
from workers.runtime.engine_role import EngineRole, Role
from workers.testing import FakeKafka, FakeTxSource


class StubEngine:
    """The replication API of an engine, as calls recorded."""

    def __init__(self, spark: Any, following: bool = False) -> None:
        self.spark = spark
        self.following = following
        self.tx = 7
        self.calls: list[tuple[Any, ...]] = []
        self.at_newest = True
        self.behind = False  # its writer no longer keeps the versions it needs

    def seek(self, tx: int) -> None:
        self.tx = tx

    def stamp_refusals(self, refused: list[tuple[int, str, str]]) -> None:
        self.calls.append(("stamp", tuple(refused)))

    def stamped_refusals(self) -> tuple[tuple[int, str, str], ...]:
        return ((8, "E", "stamped"),)

    def follow(self) -> dict[str, dict[Any, int]]:
        if self.behind:
            raise FollowerBehind("version 3 is gone")
        return {"q": {("row",): 1}}

    def follow_anew(self) -> None:
        self.calls.append(("follow_anew",))
        self.behind = False

    def lead(self) -> bool:
        if self.at_newest:
            self.following = False
        return self.at_newest

    def step_down(self) -> None:
        self.calls.append(("step_down",))
        self.following = True


def _dead_letters() -> DeadLetters:
    kafka = FakeKafka()
    return DeadLetters(WorkerConfig(), kafka.topics.tx, lambda at: FakeTxSource(kafka, at))


def _shared(tmp_path: Path) -> EngineRole:
    config = WorkerConfig(executor="spark", spark_sharing="fleet", spark_state=str(tmp_path))
    return EngineRole(config, lambda spark: StubEngine(spark, following=spark.follow))


def test_a_worker_alone_has_its_engine_at_once_and_no_replication() -> None:
    role = EngineRole(WorkerConfig(), StubEngine)
    assert role.role is Role.ALONE and role.made and not role.following
    engine = role.engine
    assert isinstance(engine, StubEngine) and engine.spark is None  # executor=local
    role.stamp(_dead_letters())
    role.hand_over()
    assert engine.calls == []


def test_a_shared_state_has_no_engine_before_the_group_assigns(tmp_path: Path) -> None:
    role = _shared(tmp_path)
    assert role.role is Role.UNASSIGNED and not role.made
    with pytest.raises(WorkersError, match="no engine before the group's first assignment"):
        role.engine  # noqa: B018


def test_the_owner_of_partition_0_writes_a_new_state_from_before_the_log(tmp_path: Path) -> None:
    role = _shared(tmp_path)
    engine = role.make(writing=True)
    assert role.role is Role.SHARING and not role.following
    assert engine.tx == -1  # no state there yet: it starts one
    dead_letters = _dead_letters()
    dead_letters.refused([Refused(3, "E", "bad")])
    role.stamp(dead_letters)
    assert engine.calls == [("stamp", ((3, "E", "bad"),))]
    role.hand_over()  # partition 0 revoked: it follows
    assert role.following and engine.calls[-1] == ("step_down",)


def test_a_follower_given_partition_0_writes_the_stamped_refusals_then_leads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("workers.executors.spark.shared.shared_state_at", lambda _: True)
    role = _shared(tmp_path)
    engine = role.make(writing=False)
    assert role.following and engine.tx == 7  # where its writer is
    dead_letters = _dead_letters()
    assert role.follow(dead_letters) == {"q": {("row",): 1}}
    assert dead_letters.refusals() == []  # not writing them: another worker does
    dead_letters.take({}, position=5)
    role.follow(dead_letters)
    assert dead_letters.refusals() == [(8, "E", "stamped")]
    engine.at_newest = False
    assert not role.lead(7) and role.following
    engine.at_newest = True
    assert role.lead(7) and not role.following


def test_a_follower_too_far_behind_follows_anew_without_exiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its step says None (its queries' changes since are not known: the worker owns them
    anew), and the next steps are as before."""
    monkeypatch.setattr("workers.executors.spark.shared.shared_state_at", lambda _: True)
    role = _shared(tmp_path)
    engine = role.make(writing=False)
    assert isinstance(engine, StubEngine)
    engine.behind = True
    dead_letters = _dead_letters()
    assert role.follow(dead_letters) is None and engine.calls == [("follow_anew",)]
    assert role.following and role.follow(dead_letters) == {"q": {("row",): 1}}
