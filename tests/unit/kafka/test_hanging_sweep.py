"""A sweep (``hanging.abort_on``, ``ResultSink.sweep``) ends what hangs on every partition the
workers write, and fails when it did not write its record to one: a partition it missed may
still hold records of this transactional id, and the next commit there would end them as
committed while the sweep aborted them elsewhere (after a broker restart
``tests/integration/test_postgres_sink.py::test_sink_survives_a_broker_restart``'s table had
one tick's rows twice: docs/pipeline.md, "PostgreSQL").  Crafted producers, no broker."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from workers.kafka.hanging import abort_on
from workers.kafka.sink import ResultSink, TransactionFailed
from workers.kafka.topics import Topics


class _Message:
    def __init__(self, topic: str, partition: int) -> None:
        self._topic, self._partition = topic, partition

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition


class _Topic:
    def __init__(self, partitions: int) -> None:
        self.partitions = dict.fromkeys(range(partitions))
        self.error = None


class FakeProducer:
    """Delivers each record unless its topic is in ``fails`` (an error) or ``lost`` (never
    acknowledged: flush leaves it); records every call."""

    def __init__(self, topics: dict[str, int], fails: frozenset[str] = frozenset(),
                 lost: frozenset[str] = frozenset()) -> None:
        self.topics, self.fails, self.lost = topics, fails, lost
        self.calls: list[str] = []
        self._reports: list[Any] = []

    def list_topics(self, timeout: float) -> Any:
        self.calls.append("list_topics")
        return type("Metadata", (), {"topics": {t: _Topic(n) for t, n in self.topics.items()}})

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def produce(self, topic: str, value: Any, key: Any, partition: int,
                on_delivery: Any = None) -> None:
        self.calls.append(f"produce {topic}[{partition}]")
        if topic in self.fails:
            self._reports.append((on_delivery, KafkaError(KafkaError._PURGE_QUEUE),
                                  _Message(topic, partition)))
        elif topic not in self.lost:
            self._reports.append((on_delivery, None, _Message(topic, partition)))

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        for callback, error, message in self._reports:
            if callback is not None:
                callback(error, message)
        return sum(1 for c in self.calls if c.startswith("produce")) - len(self._reports)

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")


PARTITIONS = [TopicPartition("t.progress", 0), TopicPartition("t.results.q", 0),
              TopicPartition("t.views.q", 0)]


def test_a_sweep_that_wrote_every_record_returns() -> None:
    producer = FakeProducer({})
    abort_on(producer, PARTITIONS)  # type: ignore[arg-type]
    assert producer.calls == ["begin", "produce t.progress[0]", "produce t.results.q[0]",
                              "produce t.views.q[0]", "flush", "abort"]


@pytest.mark.parametrize("how", ["fails", "lost"])
def test_a_sweep_that_missed_a_partition_aborts_then_raises(how: str) -> None:
    producer = FakeProducer({}, **{how: frozenset({"t.results.q"})})
    with pytest.raises(KafkaException, match="wrote 2 of its records") as raised:
        abort_on(producer, PARTITIONS)  # type: ignore[arg-type]
    assert raised.value.args[0].retriable()
    assert producer.calls[-1] == "abort"  # the transaction ended all the same


def test_a_fatal_error_pending_while_a_record_is_reported_is_raised_as_itself() -> None:
    """confluent_kafka calls the delivery report with a fatal error (fenced) pending, and the
    report's return then raises SystemError from it: the sweep raises the Kafka error, as
    before the reports were counted (the worker then takes a new producer)."""
    fenced = KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))

    class Fenced(FakeProducer):
        def flush(self, timeout: float) -> int:
            raise SystemError("report returned a result with an exception set") from fenced

    producer = Fenced({})
    with pytest.raises(KafkaException) as raised:
        abort_on(producer, PARTITIONS)  # type: ignore[arg-type]
    assert raised.value is fenced
    assert "abort" not in producer.calls


def _sink(producer: FakeProducer) -> ResultSink:
    sink = ResultSink.__new__(ResultSink)  # no broker: only the producer is used
    sink._producer = producer  # type: ignore[assignment]
    sink._topics = Topics("t")
    return sink


def test_the_worker_sweep_fails_when_a_record_was_not_written() -> None:
    producer = FakeProducer({"t.progress": 1, "t.results.q": 1, "t.views.q": 1},
                            fails=frozenset({"t.views.q"}))
    with pytest.raises(TransactionFailed, match="sweep again") as failed:
        _sink(producer).sweep({"t.progress", "t.results.q", "t.views.q"})
    assert failed.value.retriable


def test_the_worker_sweep_never_skips_a_topic_the_metadata_lacks() -> None:
    producer = FakeProducer({"t.progress": 1, "t.views.q": 1})
    with pytest.raises(TransactionFailed, match=r"t\.results\.q"):
        _sink(producer).sweep({"t.progress", "t.results.q", "t.views.q"})
    assert "begin" not in producer.calls


def test_the_worker_sweep_covers_every_topic_the_workers_write() -> None:
    """Not only the topics asked for: a tick seen committed whose markers the broker skipped
    hangs on every partition it wrote, and each must end the same way (aborted)."""
    producer = FakeProducer({"t.progress": 1, "t.results.q": 2, "t.views.q": 1,
                             "t.results.other": 1, "t.unrelated": 1})
    _sink(producer).sweep({"t.progress"})
    assert [c for c in producer.calls if c.startswith("produce")] == [
        "produce t.progress[0]", "produce t.results.other[0]", "produce t.results.q[0]",
        "produce t.results.q[1]", "produce t.views.q[0]"]
