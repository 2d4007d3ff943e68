"""Which queries this worker owns: the partitions of ``deltalog.queries`` that the consumer
group gives it (DESIGN §6-7).

Adding a worker moves partitions to it; a worker that stops or hangs (no heartbeat) loses
them to the others within the session timeout.  A partition just assigned is read from its
beginning up to its end as it was then, and released as a table (the latest registration
per query); after that its records pass through as they arrive.  The group's metadata
(generation) goes into every output transaction (``send_offsets_to_transaction``), so a
worker that lost its partitions while paused cannot commit for them: its transaction is
refused and aborted (KIP-447 fencing).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from workers.config import WorkerConfig
from workers.kafka.closing import Closing
from workers.kafka.compacted import KeyedRecord, latest
from workers.kafka.consume import data_messages
from workers.runtime.process import client_id

log = logging.getLogger(__name__)
WATERMARK_TIMEOUT_S = 10.0
OUTAGE_S = 300.0  # a broker restart waited out while assigning (the chaos test saw > 60 s)
ADMIN_TIMEOUT_S = 30.0
CATCH_UP_WAIT_S = 1.0  # longest one poll reads newly assigned partitions
CATCH_UP_POLL_S = 0.02
# The longest the broker holds a fetch of the owned partitions when they have nothing new
# (librdkafka's default: 500 ms).  Partitions just assigned join the *next* fetch, so a
# takeover waited for the one in flight: assignment to registrations read 0.5 s, now ~0.1 s
# (docs/fleet.md, "Takeover time"), at the cost of 10 idle fetches a second.
FETCH_WAIT_MS = 100
HEARTBEATS_PER_SESSION = 6


@dataclass(slots=True)
class Polled:
    """What changed since the last poll: partitions lost, registrations to apply."""

    revoked: set[int] = field(default_factory=set)
    records: list[KeyedRecord] = field(default_factory=list)


class Ownership(Closing):
    """A member of the workers' consumer group on the queries topic."""

    def __init__(self, config: WorkerConfig, topic: str, admin: AdminClient) -> None:
        group = config.group_id or f"{config.topic_prefix}.workers"
        self._consumer = Consumer(config.kafka(**{
            "group.id": group,
            "client.id": client_id(config.worker_id),
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": FETCH_WAIT_MS,
            **_liveness(config, group, admin),
        }))
        self.topic = topic
        self.owned: set[int] = set()
        self._high: dict[int, int] = {}  # partition being read to its end -> that end
        self._staged: dict[int, list[KeyedRecord]] = defaultdict(list)
        self._polled = Polled()
        self.assigned_once = False
        self._consumer.subscribe([topic], on_assign=self._on_assign,
                                 on_revoke=self._on_revoke, on_lost=self._on_revoke)

    def poll(self, timeout_s: float = 0.0) -> Polled:
        """Registrations and revocations since the last call (rebalances happen in here).
        Partitions just assigned are read to their end in this call (for up to
        ``CATCH_UP_WAIT_S``), not one batch per tick: a takeover waits for no tick."""
        deadline = time.monotonic() + CATCH_UP_WAIT_S
        while True:
            messages = self._consumer.consume(500, CATCH_UP_POLL_S if self._high else timeout_s)
            for record in self._records(messages):
                if record.partition in self._high:
                    self._staged[record.partition].append(record)
                elif record.partition in self.owned:
                    self._polled.records.append(record)
            self._release_caught_up()
            if not self._high or time.monotonic() > deadline:
                break
        polled, self._polled = self._polled, Polled()
        return polled

    @property
    def catching_up(self) -> bool:
        return bool(self._high)

    def offsets(self) -> list[TopicPartition]:
        """The positions of the owned partitions (sent with each output transaction)."""
        if not self.owned:
            return []
        positions = self._consumer.position([TopicPartition(self.topic, p)
                                             for p in sorted(self.owned)])
        return [TopicPartition(self.topic, p.partition, max(p.offset, 0)) for p in positions]

    def group_metadata(self) -> Any:
        return self._consumer.consumer_group_metadata()

    def close(self) -> None:
        self._consumer.close()

    def _records(self, messages: list[Any]) -> list[KeyedRecord]:
        return [KeyedRecord((m.key() or b"").decode(), m.value(), m.offset() or 0,
                            m.partition() or 0)
                for m in data_messages(messages, self.topic)]

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigned_once = True
        for tp in partitions:
            tp.offset = OFFSET_BEGINNING
            self._high[tp.partition] = self._end(consumer, tp.partition)
            self.owned.add(tp.partition)
        consumer.incremental_assign(partitions)
        if partitions:
            log.info("assigned query partitions %s", sorted(tp.partition for tp in partitions))

    def _end(self, consumer: Consumer, partition: int) -> int:
        """The partition's end now; asked again while the broker is not ready to say (or
        restarting: up to ``OUTAGE_S``)."""
        deadline = time.monotonic() + OUTAGE_S
        while True:
            try:
                return int(consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=WATERMARK_TIMEOUT_S)[1])
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = {tp.partition for tp in partitions}
        self.owned -= lost
        for p in lost:
            self._high.pop(p, None)
            self._staged.pop(p, None)
        self._polled.revoked |= lost
        self._polled.records = [r for r in self._polled.records if r.partition not in lost]
        consumer.incremental_unassign(partitions)
        if lost:
            log.info("revoked query partitions %s", sorted(lost))

    def _release_caught_up(self) -> None:
        """A partition read up to its end at assignment is released as a table."""
        done = []
        for partition, high in self._high.items():
            (position,) = self._consumer.position([TopicPartition(self.topic, partition)])
            if position.offset >= high or high == 0:
                done.append(partition)
        for partition in done:
            del self._high[partition]
            self._polled.records += latest(self._staged.pop(partition, [])).values()


def _liveness(config: WorkerConfig, group: str, admin: AdminClient) -> dict[str, Any]:
    """How the group notices a dead member: after ``session_timeout_ms`` without a heartbeat
    (one every sixth of it: 500 ms at the default 3 s).  The heartbeat is also how a survivor
    hears that a rebalance began (the classic protocol), so a shorter one joins it sooner and
    leaves more missed heartbeats of slack before a false eviction.  The classic protocol
    takes both from each member, with cooperative-sticky assignment (a rebalance moves only
    the partitions that change owner); the consumer protocol (KIP-848) assigns on the
    broker, incrementally, and reads both from the group's configuration, set here."""
    session_ms = config.session_timeout_ms
    heartbeat_ms = max(session_ms // HEARTBEATS_PER_SESSION, 250)
    if config.group_protocol == "consumer":
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(name, str(value), incremental_operation=AlterConfigOpType.SET)
            for name, value in (("consumer.session.timeout.ms", session_ms),
                                ("consumer.heartbeat.interval.ms", heartbeat_ms))])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(ADMIN_TIMEOUT_S)
        return {"group.protocol": "consumer"}
    return {"group.protocol": "classic", "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": heartbeat_ms,
            "partition.assignment.strategy": "cooperative-sticky"}
