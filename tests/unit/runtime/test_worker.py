"""The worker's tick loop over the fakes of workers.testing: transactions and registrations
in, the committed changes, views, progress and dead letters out — no broker."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from random import Random
from types import SimpleNamespace
from typing import Any

import pytest

from tests.integration.pipeline import TRIANGLE, TWO_PATH, random_stream, reference_states
from workers.config import WorkerConfig
from workers.engine import Changes, Engine
from workers.executors.spark.shared import FollowerBehind
from workers.runtime.dead_letters import DEAD_LETTERS
from workers.runtime.engine_role import EngineRole
from workers.runtime.worker import Worker
from workers.testing import CollectingSink, FakeKafka, FakePorts, check_change_stream
from workers.zset.row import Row

NAMES = "[:find ?n :where [?e :name ?n]]"


@pytest.fixture
def kafka() -> FakeKafka:
    return FakeKafka(query_partitions=2)


def _worker(kafka: FakeKafka, tmp_path: Path, name: str = "w1", **settings: Any) -> Worker:
    config = WorkerConfig(worker_id=name, snapshot_dir=tmp_path / "snapshots",
                          snapshot_interval_s=3600.0, tick_max_wait_s=0.0)
    worker = Worker(replace(config, **settings), FakePorts(kafka, f"deltalog-worker-{name}"))
    worker.start()
    return worker


def _check(kafka: FakeKafka, stream: list[Any], *queries: tuple[str, str]) -> None:
    """Each query's committed change stream is its exact change, tick by tick, once."""
    states = reference_states(stream)
    for name, query in queries:
        check_change_stream(query, [SimpleNamespace(**c) for c in kafka.changes(name)],
                            states)


def _ticks(worker: Worker, most: int = 10) -> None:
    """Tick until there is nothing to do."""
    for _ in range(most):
        if not worker.tick():
            return
    raise AssertionError(f"still ticking after {most} ticks")


def test_a_new_query_emits_its_result_then_changes_with_views_and_progress(
        kafka: FakeKafka, tmp_path: Path) -> None:
    kafka.send('[[:db/add 1 :name "Ivan"]]')
    registration = kafka.register("names", NAMES)
    with _worker(kafka, tmp_path) as worker:
        _ticks(worker)
        kafka.send('[[:db/add 2 :name "Oleg"] [:db/retract 1 :name "Ivan"]]')
        _ticks(worker)
        assert worker.committed == 1
    changes = kafka.changes("names")
    assert sorted([(c["tx_last"], c["row"], c["weight"], c["tx_first"], c["snapshot"])
                   for c in changes], key=repr) == sorted([
        (-1, Row(()), 0, -1, True),  # registered before any transaction: an empty snapshot
        (0, Row(("Ivan",)), 1, 0, False),
        (1, Row(("Ivan",)), -1, 1, False),
        (1, Row(("Oleg",)), 1, 1, False),
    ], key=repr)
    assert kafka.result("names") == {Row(("Oleg",)): 1}
    view = kafka.view("names")
    assert (view.rows, view.registration, view.tx) == ({Row(("Oleg",)): 1}, registration, 1)
    assert kafka.progress()["names"] == {"query": "names", "registration": registration,
                                         "tx_last": 1, "worker": "deltalog-worker-w1"}
    assert kafka.progress()[DEAD_LETTERS]["tx_last"] == 1  # partition 0's owner writes D


def test_a_lost_transaction_is_sent_again_with_the_next_tick(kafka: FakeKafka,
                                                              tmp_path: Path) -> None:
    kafka.register("names", NAMES)
    with _worker(kafka, tmp_path) as worker:
        _ticks(worker)
        kafka.send('[[:db/add 1 :name "Ivan"]]')
        kafka.fail_commits = 1
        assert worker.tick()  # applied, lost
        assert kafka.result("names") == {}
        kafka.send('[[:db/add 2 :name "Oleg"]]')
        _ticks(worker)
    ticks = {(c["tx_first"], c["tx_last"]) for c in kafka.changes("names") if c["weight"]}
    # the lost tick's rows once: the query is owned anew after it (TickWriter._reown_all) and
    # caught up to tx 0 from what is committed, then tx 1 comes as a tick of its own
    assert ticks == {(0, 0), (1, 1)}
    assert kafka.result("names") == {Row(("Ivan",)): 1, Row(("Oleg",)): 1}
    assert kafka.progress()["names"]["tx_last"] == 1


def test_a_refused_transaction_is_dead_lettered_once(kafka: FakeKafka,
                                                      tmp_path: Path) -> None:
    kafka.register("names", NAMES)
    kafka.send_raw(b"not avro")
    kafka.send('[[:db/add 1 :name "Ivan"]]')
    with _worker(kafka, tmp_path) as worker:
        _ticks(worker)
        kafka.send('[[:db/add 2 :name "Oleg"]]')
        _ticks(worker)
    letters = [r.value for r in kafka.records(kafka.topics.dlq)]
    assert [(letter["topic"], letter["offset"], letter["payload"]) for letter in letters
            if letter is not None] == [(kafka.topics.tx, 0, b"not avro")]
    assert kafka.result("names") == {Row(("Ivan",)): 1, Row(("Oleg",)): 1}


def test_a_refused_registration_is_dead_lettered_once(kafka: FakeKafka,
                                                      tmp_path: Path) -> None:
    offset = kafka.register("bad", "[:find ?x :where [?e :name ?n]]")  # ?x unbound
    with _worker(kafka, tmp_path) as worker:
        _ticks(worker)
        kafka.send('[[:db/add 1 :name "Ivan"]]')
        _ticks(worker)
    letters = [r.value for r in kafka.records(kafka.topics.dlq) if r.value is not None]
    assert [(letter["topic"], letter["offset"]) for letter in letters] == [
        (kafka.topics.queries, offset)]
    assert kafka.progress()["bad"]["registration"] == offset  # committed: never again


def test_a_query_moving_to_a_worker_behind_waits_for_its_progress(kafka: FakeKafka,
                                                                  tmp_path: Path) -> None:
    kafka.register("names", NAMES, partition=1)
    kafka.send('[[:db/add 1 :name "Ivan"]]')
    with _worker(kafka, tmp_path / "w1", "w1") as first:
        _ticks(first)
        assert kafka.progress()["names"]["tx_last"] == 0
    # w1 left the group (closed); w2 was behind: it had applied nothing of the log yet
    kafka.send('[[:db/add 2 :name "Oleg"]]')
    assert kafka.owners == {}
    with _worker(kafka, tmp_path / "w2", "w2") as second:
        _ticks(second)
        assert second.readiness() == (True, "caught up (lag 0), 1 queries")
    assert kafka.result("names") == {Row(("Ivan",)): 1, Row(("Oleg",)): 1}
    assert kafka.view("names").rows == {Row(("Ivan",)): 1, Row(("Oleg",)): 1}
    assert kafka.progress()["names"] == {"query": "names", "registration": 0, "tx_last": 1,
                                         "worker": "deltalog-worker-w2"}
    assert kafka.epochs["deltalog-worker-w1"] == 2  # its init, then w2's fence: gone


def test_a_query_moving_to_a_worker_ahead_catches_up_from_its_committed_view(
        kafka: FakeKafka, tmp_path: Path) -> None:
    kafka.register("names", NAMES, partition=1)
    kafka.send('[[:db/add 1 :name "Ivan"]]')
    with _worker(kafka, tmp_path / "w1", "w1") as first, \
            _worker(kafka, tmp_path / "w2", "w2") as second:  # owns no partition
        _ticks(first)
        kafka.send('[[:db/add 2 :name "Oleg"] [:db/retract 1 :name "Ivan"]]')
        _ticks(second)  # at tx 1; first is still at 0
        kafka.assign({1: "deltalog-worker-w2"})
        _ticks(second)
        assert first.tick()  # drops it: nothing to write but its own progress
        assert "names" not in first.engine.queries
    caught_up = [c for c in kafka.changes("names") if c["tx_last"] == 1]
    assert {(c["row"], c["weight"], c["tx_first"]) for c in caught_up} == {
        (Row(("Ivan",)), -1, 1), (Row(("Oleg",)), 1, 1)}  # one tick 1..1 from its view
    assert kafka.view("names").rows == {Row(("Oleg",)): 1}
    assert kafka.progress()["names"]["worker"] == "deltalog-worker-w2"
    assert kafka.epochs["deltalog-worker-w1"] == 1  # a member of the group: never fenced


def test_a_revoked_partition_drops_its_queries(kafka: FakeKafka, tmp_path: Path) -> None:
    kafka.register("names", NAMES, partition=1)
    with _worker(kafka, tmp_path) as worker:
        _ticks(worker)
        kafka.assign({1: "someone else"})
        kafka.send('[[:db/add 1 :name "Ivan"]]')
        _ticks(worker)
        assert worker.engine.queries == ()
    assert kafka.result("names") == {}


def test_a_take_up_commits_at_the_position_before_what_was_sent_meanwhile(
        kafka: FakeKafka, tmp_path: Path) -> None:
    """As test_fleet's broker test: the tick taking a query up applies no transaction."""
    stream = random_stream(seed=17, count=40)
    kafka.register("tri", TRIANGLE)
    for tx in stream[:20]:
        kafka.send(tx)
    with _worker(kafka, tmp_path, tick_max_tx=1) as worker:
        _ticks(worker, 30)
        for tx in stream[20:]:
            kafka.send(tx)
        kafka.register("two", TWO_PATH)
        assert worker.tick() and worker.committed == 19  # taken up at the position
        _ticks(worker, 30)
    assert kafka.changes("two")[0]["tx_last"] == 19 and kafka.changes("two")[0]["snapshot"]
    _check(kafka, stream, ("tri", TRIANGLE), ("two", TWO_PATH))


def test_a_tick_refused_at_a_rebalance_is_sent_again_exactly_once(
        kafka: FakeKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As test_fleet's broker test: the group's generation changes between a tick's offsets
    and its commit; a new producer sends it again with the next tick."""
    stream = random_stream(seed=19, count=30)
    kafka.register("tri", TRIANGLE)
    send_offsets = CollectingSink.send_offsets

    def rebalanced_once(sink: CollectingSink, offsets: list[Any], metadata: Any) -> None:
        send_offsets(sink, offsets, metadata)
        if len(kafka.changes("tri")) > 1 and not sink.swept:  # once, mid-stream
            kafka.assign({})

    monkeypatch.setattr(CollectingSink, "send_offsets", rebalanced_once)
    with _worker(kafka, tmp_path, tick_max_tx=3) as worker:
        for tx in stream:
            kafka.send(tx)
            worker.tick()
        _ticks(worker, 30)
    assert kafka.epochs["deltalog-worker-w1"] >= 2  # a new producer after the loss
    _check(kafka, stream, ("tri", TRIANGLE))


def test_a_worker_is_not_ready_while_it_takes_queries_up(kafka: FakeKafka,
                                                         tmp_path: Path) -> None:
    """As test_fleet's broker test: asked while the views are read, then after the tick."""
    kafka.register("tri", TRIANGLE)
    for tx in random_stream(seed=5, count=10):
        kafka.send(tx)
    ports = FakePorts(kafka)
    asked: list[tuple[bool, str]] = []
    views = ports.views

    def views_asking(*args: Any, **kwargs: Any) -> Any:
        asked.append(worker.readiness())
        return views(*args, **kwargs)

    ports.views = views_asking  # type: ignore[method-assign]
    with Worker(WorkerConfig(snapshot_dir=tmp_path, tick_max_wait_s=0.0), ports) as worker:
        worker.start()
        assert worker.readiness()[0] is False  # taken up in start(), not committed yet
        _ticks(worker)
        assert worker.readiness() == (True, "caught up (lag 0), 1 queries")
    assert asked == [(False, "taking queries up: their progress, views, first tick")]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lost_transactions_at_random_leave_every_change_stream_exact(
        kafka: FakeKafka, tmp_path: Path, seed: int) -> None:
    """A third of the commits lost, ticks in pieces (queries with pieces written owned anew
    and caught up from their views): each committed change stream is still its query's
    exact change, once (the from-scratch oracle)."""
    rng = Random(seed)
    stream = random_stream(seed=seed, count=120)
    kafka.register("tri", TRIANGLE)
    kafka.register("two", TWO_PATH)
    with _worker(kafka, tmp_path, tick_max_tx=7, tick_max_datoms=4) as worker:
        sent = 0
        while sent < len(stream):
            for tx in stream[sent:sent + rng.randint(1, 8)]:
                sent += 1
                kafka.send(tx)
            kafka.fail_commits = int(rng.random() < 1 / 3)
            worker.tick()
        kafka.fail_commits = 0
        _ticks(worker, 30)
        assert worker.committed == len(stream) - 1
    assert kafka.epochs["deltalog-worker-w1"] > 3  # transactions were lost (init + each)
    _check(kafka, stream, ("tri", TRIANGLE), ("two", TWO_PATH))


class LogFollower(Engine):
    """A follower of a shared state over the fakes: its writer's versions are the
    transactions of ``stream`` up to ``published``, those before ``kept_from`` no longer
    kept (a local engine that applies them itself)."""

    def __init__(self, stream: list[Any]) -> None:
        super().__init__()
        self.tx, self.published, self.kept_from = -1, -1, 0
        self.stream, self.opened_anew, self._stepping = stream, 0, False

    @property
    def following(self) -> bool:
        return not self._stepping

    def follow(self) -> Changes:
        if self.tx + 1 < self.kept_from:
            raise FollowerBehind(f"version {self.tx + 1} is gone")
        return self._step()

    def follow_anew(self) -> None:
        self._step()  # its changes are not known: the state is read at the newest
        self.opened_anew += 1

    def _step(self) -> Changes:
        self._stepping = True
        try:
            return self.transact_many((self.stream[i], i)
                                      for i in range(self.tx + 1, self.published + 1))[0]
        finally:
            self._stepping = False


def test_a_follower_behind_what_its_writer_keeps_owns_its_queries_anew(
        kafka: FakeKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A follower held back while its writer publishes 10 versions and drops the first 5 of
    them: it follows anew from the newest, and its queries catch up from their committed
    views in one tick 10..19 — every change stream still its query's exact change, once."""
    stream = random_stream(seed=4, count=30)
    follower = LogFollower(stream)
    monkeypatch.setattr("workers.executors.spark.shared.shared_state_at", lambda _: True)
    monkeypatch.setattr(EngineRole, "_new_engine", lambda role, spark: follower)
    kafka.assign({0: "deltalog-worker-writer"})  # the writer's partition: w2 follows
    kafka.register("tri", TRIANGLE, partition=1)
    kafka.register("two", TWO_PATH, partition=1)
    with _worker(kafka, tmp_path, "w2", executor="spark", spark_sharing="fleet",
                 spark_state=str(tmp_path / "state")) as worker:
        for end, kept_from in ((10, 0), (20, 15), (30, 15)):
            for tx in stream[len(kafka.tx):end]:
                kafka.send(tx)
            follower.published, follower.kept_from = end - 1, kept_from
            _ticks(worker)
            assert worker.committed == end - 1
        assert follower.opened_anew == 1 and worker.readiness()[0]
    for query in ("tri", "two"):
        assert {c["tx_first"] for c in kafka.changes(query) if c["tx_last"] == 19} == {10}
        assert kafka.progress()[query]["tx_last"] == 29
    _check(kafka, stream, ("tri", TRIANGLE), ("two", TWO_PATH))
