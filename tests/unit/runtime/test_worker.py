"""The worker's tick loop over the fakes of workers.testing: transactions and registrations
in, the committed changes, views, progress and dead letters out — no broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.config import WorkerConfig
from workers.runtime.dead_letters import DEAD_LETTERS
from workers.runtime.worker import Worker
from workers.testing import FakeKafka, FakePorts
from workers.zset.row import Row

NAMES = "[:find ?n :where [?e :name ?n]]"


@pytest.fixture
def kafka() -> FakeKafka:
    return FakeKafka(query_partitions=2)


def _worker(kafka: FakeKafka, tmp_path: Path, name: str = "w1") -> Worker:
    config = WorkerConfig(worker_id=name, snapshot_dir=tmp_path / "snapshots",
                          snapshot_interval_s=3600.0, tick_max_wait_s=0.0)
    worker = Worker(config, FakePorts(kafka, f"deltalog-worker-{name}"))
    worker.start()
    return worker


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
    assert ticks == {(0, 1)}  # the lost tick's rows, with the next one's, once
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
    # w1 left the group; w2 was behind: it had applied nothing of the log yet
    kafka.send('[[:db/add 2 :name "Oleg"]]')
    kafka.owners.clear()
    with _worker(kafka, tmp_path / "w2", "w2") as second:
        _ticks(second)
        assert second.readiness() == (True, "caught up (lag 0), 1 queries")
    assert kafka.result("names") == {Row(("Ivan",)): 1, Row(("Oleg",)): 1}
    assert kafka.view("names").rows == {Row(("Ivan",)): 1, Row(("Oleg",)): 1}
    assert kafka.progress()["names"] == {"query": "names", "registration": 0, "tx_last": 1,
                                         "worker": "deltalog-worker-w2"}


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


def test_a_revoked_partition_drops_its_queries(kafka: FakeKafka, tmp_path: Path) -> None:
    kafka.register("names", NAMES, partition=1)
    with _worker(kafka, tmp_path) as worker:
        _ticks(worker)
        kafka.assign({1: "someone else"})
        kafka.send('[[:db/add 1 :name "Ivan"]]')
        _ticks(worker)
        assert worker.engine.queries == ()
    assert kafka.result("names") == {}
