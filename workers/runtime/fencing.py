"""Ending a dead worker's open Kafka transaction at once, instead of waiting for its timeout.

A worker killed mid-tick leaves its transaction open.  A ``read_committed`` reader stops at
the last stable offset, before it, and a new owner reads progress and results up to the high
watermark (``CompactedReader``): it would wait until the coordinator times the transaction
out.  ``init_transactions`` under the dead worker's transactional id ends it now: the
coordinator aborts it, writes the abort markers, and bumps the producer epoch, so that
producer, were it only paused, can never write again.

Whom: the writers the progress records name (every worker writes the progress of each of
its queries in every tick) that are not members of the workers' group.  Fencing is never
needed for exactness (docs/fleet.md, "Fencing"): the group generation already keeps a worker
that lost its partitions from committing; fencing only shortens the wait, so a member, alive
and about to commit, is left alone.

``unstick`` ends a hanging transaction (``workers.kafka.hanging``) much the same way, as
writers that may be alive: only for a read held far longer than any live transaction lasts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from workers.config import WorkerConfig
from workers.kafka.closing import close_producer
from workers.kafka.hanging import abort_on
from workers.runtime.process import transactional_id_of_client

log = logging.getLogger(__name__)
TIMEOUT_S = 30.0


def fence_absent(config: WorkerConfig, admin: AdminClient, writers: Iterable[str]) -> None:
    """End the open transactions of those ``writers`` (transactional ids) whose worker is not
    a member of the workers' group now."""
    present = members(config, admin)
    if present is None:  # the broker unreachable: the wait then lasts until the
        return  # transaction times out
    for writer in sorted(set(writers) - present):
        fence(config, writer)


def members(config: WorkerConfig, admin: AdminClient) -> set[str] | None:
    """The transactional ids of the workers' group members now; None if unknown."""
    group = config.group_id or f"{config.topic_prefix}.workers"
    try:
        described = admin.describe_consumer_groups([group])[group].result(TIMEOUT_S).members
    except (KafkaException, TimeoutError) as error:
        log.warning("the workers' group cannot be described: %r", error)
        return None
    return {writer for member in described
            if (writer := transactional_id_of_client(member.client_id)) is not None}


def unstick(config: WorkerConfig, writers: Iterable[str],
            partitions: list[TopicPartition]) -> None:
    """End a hanging transaction on ``partitions`` (:mod:`workers.kafka.hanging`) whose
    writer is not known: as each of ``writers`` in turn, fence it and abort a transaction
    over the partitions.  A writer alive loses the tick it has open and sends it again, as
    after any fencing."""
    for writer in sorted(set(writers)):
        producer = Producer(config.kafka(**{"transactional.id": writer}))
        try:
            producer.init_transactions(TIMEOUT_S)
            abort_on(producer, partitions)
        except KafkaException as error:  # say, fenced by another worker's sweep: the read
            # calls again if the partitions stay held
            log.warning("could not end a hanging transaction as %s: %s", writer, error)
            continue  # let go unclosed: closing a fenced producer raises that it was
        close_producer(producer, 0.0)
        log.warning("ended what %s may have left hanging on %s", writer,
                    ", ".join(f"{tp.topic}[{tp.partition}]" for tp in partitions))


def fence(config: WorkerConfig, transactional_id: str) -> None:
    """``init_transactions`` as ``transactional_id``: its open transaction is aborted, and
    the call returns once the abort is written."""
    started = time.monotonic()
    producer = Producer(config.kafka(**{"transactional.id": transactional_id}))
    try:
        producer.init_transactions(TIMEOUT_S)
    except KafkaException as error:  # the wait then lasts until the transaction times out
        log.warning("could not fence %s: %s", transactional_id, error)
        return
    finally:
        close_producer(producer, 0.0)
    log.info("fenced %s (its open transaction aborted) in %.2f s", transactional_id,
             time.monotonic() - started)
