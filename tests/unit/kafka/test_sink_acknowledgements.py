"""``ResultSink.commit`` commits only a transaction whose every record was acknowledged with
an offset: librdkafka 2.16 acknowledges a record the broker called a duplicate without one,
and with Kafka 4.3.1 such records on a just-created topic were not in the log (the chaos
run's missing snapshot row, docs/pipeline.md "Acknowledged, not written")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from workers.kafka.row_records import RowRecords
from workers.kafka.sink import ResultSink, TransactionFailed


@dataclass
class Acknowledgement:
    """What librdkafka hands the delivery callback about one record."""

    error: KafkaError | None
    at: int | None  # the record's offset; None: not known

    def topic(self) -> str:
        return "deltalog.results.q"

    def partition(self) -> int:
        return 0

    def offset(self) -> int | None:
        return self.at


class FakeProducer:
    """Acknowledges the transaction's records when flushed, as librdkafka does."""

    def __init__(self, acknowledgements: list[Acknowledgement]) -> None:
        self.acknowledgements = acknowledgements
        self.on_delivery: Any = None
        self.calls: list[str] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin_transaction")

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        for each in self.acknowledgements:
            self.on_delivery(each.error, each)
        self.acknowledgements = []
        return 0

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit_transaction")


def _sink(*acknowledgements: Acknowledgement) -> tuple[ResultSink, FakeProducer]:
    producer = FakeProducer(list(acknowledgements))
    sink = ResultSink.__new__(ResultSink)  # no broker: only the producer is used
    sink._producer = producer  # type: ignore[assignment]
    sink._rows = RowRecords()
    producer.on_delivery = sink._delivered  # the callback ResultSink configures
    sink.begin()
    return sink, producer


def test_a_transaction_whose_records_have_offsets_commits() -> None:
    sink, producer = _sink(Acknowledgement(None, 0), Acknowledgement(None, 1))
    sink.commit()
    assert producer.calls == ["begin_transaction", "flush", "commit_transaction"]


def test_a_record_acknowledged_without_an_offset_gives_the_transaction_up() -> None:
    sink, producer = _sink(Acknowledgement(None, None), Acknowledgement(None, 7))
    with pytest.raises(TransactionFailed, match=r"1 of its records .*results.q\[0\]: no offset"
                       ) as failed:
        sink.commit()
    assert "commit_transaction" not in producer.calls
    assert not failed.value.retriable  # the tick is lost: a new producer sends it again


def test_a_failed_record_gives_the_transaction_up() -> None:
    error = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Message size too large")
    sink, producer = _sink(Acknowledgement(error, None))
    with pytest.raises(TransactionFailed, match="Message size too large"):
        sink.commit()
    assert "commit_transaction" not in producer.calls


def test_the_next_transaction_starts_with_none_unconfirmed() -> None:
    sink, producer = _sink(Acknowledgement(None, None))
    with pytest.raises(TransactionFailed):
        sink.commit()
    sink.begin()
    sink.commit()
    assert producer.calls[-1] == "commit_transaction"


class FencedProducer(FakeProducer):
    """librdkafka serving an acknowledgement while a fatal error pends: the callback's first
    call into the client fails, and the flush raises ``SystemError`` caused by that error."""

    def flush(self, timeout: float) -> int:
        fenced = KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance",
                                           fatal=True))
        try:
            raise fenced
        except KafkaException as error:
            raise SystemError("<method 'topic'> returned a result with an exception set"
                              ) from error


class BrokenProducer(FakeProducer):
    """The other form the chaos run met: the flush fails with no Kafka error to say why."""

    def flush(self, timeout: float) -> int:
        raise SystemError("<built-in method flush> returned NULL without setting an exception")


@pytest.mark.parametrize(("producer", "reason"), [
    (FencedProducer([]), "fenced by a newer instance"),
    (BrokenProducer([]), "failed in a callback"),
])
def test_an_acknowledgement_met_by_a_fatal_error_fails_the_transaction(
        producer: FakeProducer, reason: str) -> None:
    sink = ResultSink.__new__(ResultSink)
    sink._producer = producer  # type: ignore[assignment]
    sink._rows = RowRecords()
    sink.begin()
    with pytest.raises(TransactionFailed, match=reason) as failed:
        sink.commit()
    assert not failed.value.retriable  # the producer is replaced: the tick is lost
    assert "commit_transaction" not in producer.calls
