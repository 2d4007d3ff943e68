"""``ResultSink.send_offsets`` bounds ``send_offsets_to_transaction``, which librdkafka 2.16
can leave blocked for ever after a broker restart (#5456, #5511): past the bound the
transaction is given up (the worker's lost-tick path replaces the producer), instead of the
watchdog ending the worker."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from workers.kafka import sink as sink_module
from workers.kafka.sink import ResultSink, TransactionFailed


class Answer:
    """A record's acknowledgement as librdkafka hands it to the delivery callback."""

    def offset(self) -> int:
        return 7


class FakeProducer:
    """Holds ``pending`` records of the transaction; a poll answers one of them (to
    ``answered``)."""

    def __init__(self, hang: bool = False, fail: KafkaError | None = None,
                 pending: int = 0) -> None:
        self.hang, self.fail, self.pending = hang, fail, pending
        self.released = threading.Event()
        self.sent: list[tuple[Any, ...]] = []
        self.calls: list[str] = []
        self.answered: Any = None

    def poll(self, timeout: float) -> int:
        self.calls.append("poll")
        if not self.pending:
            return 0
        self.pending -= 1
        self.answered(None, Answer())
        return 1

    def send_offsets_to_transaction(self, *args: Any) -> None:
        self.calls.append("send_offsets_to_transaction")
        self.sent.append(args)
        if self.hang:
            self.released.wait(30)
        if self.fail is not None:
            raise KafkaException(self.fail)


def _sink(producer: FakeProducer) -> ResultSink:
    sink = ResultSink.__new__(ResultSink)  # no broker: only the producer is used
    sink._producer = producer  # type: ignore[assignment]
    sink._unconfirmed, sink._produced, sink._answered = [], producer.pending, 0
    producer.answered = sink._delivered
    return sink


@pytest.fixture(autouse=True)
def short_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sink_module, "SEND_OFFSETS_BOUND_S", 0.6)


def test_a_call_that_returns_is_waited_for() -> None:
    producer = FakeProducer()
    _sink(producer).send_offsets(["offsets"], "group")
    assert producer.sent == [(["offsets"], "group", sink_module.TRANSACTION_TIMEOUT_S)]


def test_no_offsets_no_call() -> None:
    producer = FakeProducer()
    _sink(producer).send_offsets([], "group")
    assert producer.sent == []


def test_its_kafka_error_fails_the_transaction() -> None:
    producer = FakeProducer(fail=KafkaError(KafkaError.NOT_COORDINATOR, "Not coordinator",
                                            retriable=True))
    with pytest.raises(TransactionFailed, match="Not coordinator") as failed:
        _sink(producer).send_offsets(["offsets"], "group")
    assert failed.value.retriable


def test_a_hung_call_is_given_up() -> None:
    producer = FakeProducer(hang=True)
    started = time.monotonic()
    with pytest.raises(TransactionFailed, match="given up") as failed:
        _sink(producer).send_offsets(["offsets"], "group")
    assert 0.5 < time.monotonic() - started < 5.0
    assert not failed.value.retriable  # the producer is replaced, not asked again
    producer.released.set()  # the abandoned call's thread ends whenever it returns


def test_one_of_the_ticks_records_is_answered_before_the_offsets_are_sent() -> None:
    """AddOffsetsToTxn then finds the coordinator's ongoing transaction, not the last one's
    markers still being written (CONCURRENT_TRANSACTIONS, retried after 100 ms); the other
    records are not waited for (``commit`` does)."""
    producer = FakeProducer(pending=3)
    _sink(producer).send_offsets([TopicPartition("q", 0, 1)], object())
    assert producer.calls == ["poll", "send_offsets_to_transaction"]
    assert producer.pending == 2


def test_records_answered_already_are_not_waited_for() -> None:
    producer = FakeProducer(pending=1)
    sink = _sink(producer)
    producer.poll(0)  # a record answered while the tick was written
    sink.send_offsets([TopicPartition("q", 0, 1)], object())
    assert producer.calls == ["poll", "send_offsets_to_transaction"]


def test_a_transaction_without_records_sends_its_offsets_at_once() -> None:
    producer = FakeProducer()
    _sink(producer).send_offsets([TopicPartition("q", 0, 1)], object())
    assert producer.calls == ["send_offsets_to_transaction"]
