"""Hanging transactions: records a producer wrote in a transaction on a partition its
transaction coordinator does not know is part of that transaction.

The coordinator ends a transaction (commit, abort, timeout, a newer ``init_transactions``) by
writing a marker to each partition it knows the transaction wrote.  A partition left out
never gets one: its last stable offset stays before those records for ever, and every
``read_committed`` reader of it — a worker reading the progress at a takeover, a view's
reader — waits there.  Kafka 4.3.1 with librdkafka 2.16 left one when the broker shut down
while a tick was adding partitions to its transaction: the coordinator's record of the
addition failed (``NOT_COORDINATOR``), the records on those partitions had been written
(CI, 2026-11-24, docs/fleet.md "Hanging transactions"; KAFKA-12671 describes the same
state).

The way out is a marker from the same producer id: a transaction of the same transactional
id that writes one record to each such partition and aborts.  The coordinator then knows
the partitions and writes its abort marker there, which ends the hanging records too (a
marker from a newer epoch of the producer closes what an older one left open).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from workers.config import WorkerConfig
from workers.kafka.callbacks import pending_error

TIMEOUT_S = 30.0
# A transaction the coordinator knows ends within its timeout, plus the interval of the
# coordinator's check for timed-out transactions (transaction.abort.timed.out.transaction.
# cleanup.interval.ms, 10 s by default), plus a margin: a last stable offset that stood
# still longer than that while records lay beyond it is held by a hanging transaction.
COORDINATOR_CHECK_S = 10.0
MARGIN_S = 5.0


def hanging_after_s(config: WorkerConfig) -> float:
    """How long a last stable offset stands still before its transaction counts as hanging."""
    return config.transaction_timeout_ms / 1000 + COORDINATOR_CHECK_S + MARGIN_S


def abort_on(producer: Producer, partitions: Sequence[TopicPartition]) -> None:
    """Abort a transaction of ``producer`` (initialised, none open) that wrote an empty
    record (empty key, no value: a compacted topic needs a key) to each of ``partitions``:
    its abort markers end whatever that producer id left hanging there.  Readers never see
    the records: ``read_committed`` skips what was aborted.

    Raises ``KafkaException`` (after the abort) unless every record was acknowledged: a
    partition whose record was not written may not have been added to the transaction, so
    it got no marker and whatever hangs there still hangs — and the next commit of this
    transactional id on it would end those records as *committed* (a lost tick's changes
    committed after all, then sent again: doubled).  The caller sweeps again before it
    commits.  (It used to return whatever became of the records.)"""
    if not partitions:
        return
    failed: list[str] = []
    written: list[Any] = []

    def report(error: KafkaError | None, message: Any) -> None:
        if error is None:
            written.append(message)
        else:
            failed.append(f"{message.topic()}[{message.partition()}]: {error.str()}")

    producer.begin_transaction()
    for partition in partitions:
        producer.produce(partition.topic, None, b"", partition=partition.partition,
                         on_delivery=report)
    try:  # aborting purges what is still queued: the records must be written for the
        left = producer.flush(TIMEOUT_S)  # partitions to be added
    except SystemError as error:
        raise pending_error(error) from error
    producer.abort_transaction(TIMEOUT_S)
    if left or failed or len(written) < len(partitions):
        raise KafkaException(KafkaError(
            KafkaError._FAIL, f"the abort of what may hang on {len(partitions)} partitions "
            f"wrote {len(written)} of its records ({left} unacknowledged"
            + "".join(f"; {reason}" for reason in failed) + "): sweep again",
            retriable=True))
