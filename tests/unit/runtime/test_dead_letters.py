"""DeadLetters: the log's refusals and reports written once by partition 0's owner, from its
committed ``D`` (no Kafka: a CollectingSink and a FakeTxSource)."""

from __future__ import annotations

from workers.config import WorkerConfig
from workers.runtime.dead_letters import DEAD_LETTERS, DeadLetters, Refused, snapshot_bound
from workers.testing import CollectingSink, FakeKafka, FakeTxSource


def _dead_letters(kafka: FakeKafka) -> DeadLetters:
    return DeadLetters(WorkerConfig(), kafka.topics.tx, lambda at: FakeTxSource(kafka, at))


def _sink(kafka: FakeKafka) -> CollectingSink:
    sink = CollectingSink(kafka, "me")
    sink.init()
    sink.begin()
    return sink


def test_a_worker_not_owning_partition_0_writes_none_and_forgets_what_others_commit() -> None:
    kafka = FakeKafka()
    letters = _dead_letters(kafka)
    letters.refused([Refused(3, "E", "bad"), Refused(7, "E", "worse")])
    letters.reported({3: {"a": 1}, 8: {"b": 2}})
    assert not letters.writing and letters.due([]) == []
    letters.read({DEAD_LETTERS: {"tx_last": 5}})  # another worker wrote up to 5
    assert letters.refusals() == [(7, "E", "worse")]
    sink = _sink(kafka)
    assert letters.write(sink, [], 9) is None
    sink.commit()
    assert kafka.committed == []


def test_the_owner_writes_the_refusals_after_d_rereading_those_before_the_batch() -> None:
    kafka = FakeKafka()
    for value in (b"zero", b"one", b"two"):
        kafka.send_raw(value)
    letters = _dead_letters(kafka)
    letters.refused([Refused(0, "E", "old"), Refused(1, "E", "handed over")])
    letters.reported({1: {"t": 10}, 2: {"u": 11}})
    letters.take({DEAD_LETTERS: {"tx_last": 0}}, position=2)
    assert letters.done == 0
    batch = [kafka.tx[2]]
    due = letters.due(batch)
    assert due == [(Refused(1, "E", "handed over"), b"one")]  # read again from the log
    sink = _sink(kafka)
    assert letters.write(sink, due, 2) == 2
    sink.commit()
    letters.committed(2)
    assert [(r.topic, r.key) for r in kafka.committed] == [
        (kafka.topics.dlq, None), (kafka.topics.reports, 1), (kafka.topics.reports, 2),
        (kafka.topics.progress, DEAD_LETTERS)]
    assert letters.due(batch) == [] and letters.refusals() == []


def test_a_new_owner_without_committed_d_starts_at_its_position() -> None:
    letters = _dead_letters(FakeKafka())
    letters.take({}, position=41)
    assert letters.done == 41
    letters.hand_over()
    assert not letters.writing


def test_stamped_refusals_after_d_are_added_once_in_order() -> None:
    letters = _dead_letters(FakeKafka())
    letters.refused([Refused(9, "E", "mine")])
    letters.take({DEAD_LETTERS: {"tx_last": 4}}, position=9)
    letters.stamped([(2, "E", "committed"), (6, "E", "stamped"), (9, "E", "mine")])
    assert letters.refusals() == [(6, "E", "stamped"), (9, "E", "mine")]


def test_snapshots_are_bounded_by_the_progress_and_the_committed_dead_letters() -> None:
    assert snapshot_bound({}) == -1
    assert snapshot_bound({"q": {"tx_last": 9}, "r": {"tx_last": 4}}) == 9
    assert snapshot_bound({"q": {"tx_last": 9}, DEAD_LETTERS: {"tx_last": 6}}) == 6
