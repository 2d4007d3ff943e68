"""A sent transaction's outcome, as the fleet committed it: its report or its dead letter.

A worker (the owner of the queries topic's partition 0) writes, in the tick that applies a
transaction, either its report to ``deltalog.reports`` — the ids its tempids were given, when
it names any — or its dead letter to ``deltalog.dlq``.  The sender knows its record's offset
and when it was sent, so it reads both topics from that time on (``offsets_for_times``: no
scan of the topics' history), ``read_committed``, until the record about its offset comes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.topics import Topics

POLL_S = 0.1
SKEW_MS = 5_000  # clocks of the sender and the broker may disagree this much


@dataclass(frozen=True, slots=True)
class Outcome:
    """A transaction's outcome: the ids its named tempids were given, or why it was
    refused (``code``, ``reason``)."""

    tx: int
    tempids: dict[Any, int]
    code: str | None = None
    reason: str | None = None


def outcome(config: WorkerConfig, tx: int, sent_ms: int, timeout_s: float) -> Outcome:
    """The committed outcome of the log's transaction ``tx``, sent at ``sent_ms`` (epoch
    milliseconds); raises when none came within ``timeout_s`` (no worker running, or one
    far behind)."""
    topics = Topics(config.topic_prefix)
    registry = registry_for(config.registry_url)
    reports, letters = AvroCodec("tx_report", registry), AvroCodec("dead_letter", registry)
    consumer = Consumer(config.kafka(**{"group.id": f"deltalog-tx-{time.time_ns()}",
                                        "enable.auto.commit": False,
                                        "isolation.level": "read_committed"}))
    try:
        wanted = [TopicPartition(topic, 0, sent_ms - SKEW_MS)
                  for topic in (topics.reports, topics.dlq)]
        consumer.assign([tp if tp.offset >= 0 else TopicPartition(tp.topic, 0, 0)
                         for tp in consumer.offsets_for_times(wanted, timeout=10.0)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = consumer.poll(POLL_S)
            if message is None or message.error() is not None:
                continue
            value = message.value()
            if value is None:
                continue
            if message.topic() == topics.reports:
                record = reports.decode(value)
                if record["tx"] == tx:
                    return Outcome(tx, {t["tempid"]: t["id"] for t in record["tempids"]})
            else:
                letter = letters.decode(value)
                if letter["topic"] == topics.tx and letter["offset"] == tx:
                    return Outcome(tx, {}, letter["code"], letter["reason"])
    finally:
        consumer.close()
    raise WorkersError(f"no report of transaction {tx} within {timeout_s:g} s: is a worker "
                       "running and caught up?", code=ErrorCode.KAFKA)
