"""``deltalog status``: the fleet as Kafka sees it — the workers in the group with the query
partitions each holds, and every query with its owner, committed progress and lag."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from workers.config import WorkerConfig
from workers.kafka.clients import progress_table
from workers.kafka.compacted import CompactedReader, KeyedRecord, latest
from workers.kafka.topics import Topics

TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    client_id: str
    host: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class QueryStatus:
    name: str
    partition: int
    owner: str | None  # the client id of the worker holding its partition
    tx_last: int | None  # committed progress; None before its first tick
    lag: int | None  # transactions in the log after its progress
    last_writer: str | None  # the worker that committed that progress


@dataclass(frozen=True, slots=True)
class FleetStatus:
    group: str
    log_end: int
    workers: tuple[WorkerStatus, ...]
    queries: tuple[QueryStatus, ...]

    def text(self) -> str:
        lines = [f"group {self.group}: {len(self.workers)} worker(s); tx log end {self.log_end}"]
        for worker in self.workers:
            lines.append(f"  {worker.client_id} on {worker.host}: partitions "
                         f"{list(worker.partitions)}")
        lines.append(f"{'query':<24} {'owner':<24} {'tx_last':>9} {'lag':>7}  last written by")
        for q in self.queries:
            lines.append(f"{q.name:<24} {q.owner or '-':<24} {_show(q.tx_last):>9} "
                         f"{_show(q.lag):>7}  {q.last_writer or '-'}")
        return "\n".join(lines)


def fleet_status(config: WorkerConfig) -> FleetStatus:
    topics = Topics(config.topic_prefix)
    group = config.group_id or f"{config.topic_prefix}.workers"
    workers = _workers(config, group)
    owner_of = {p: w.client_id for w in workers for p in w.partitions}
    registrations = _table(config, topics.queries)
    progress = progress_table(config)
    end = _log_end(config, topics.tx)
    queries = []
    for name, record in sorted(registrations.items()):
        done = progress.get(name)
        tx_last = done["tx_last"] if done else None
        queries.append(QueryStatus(name, record.partition, owner_of.get(record.partition),
                                   tx_last, None if tx_last is None else end - 1 - tx_last,
                                   done["worker"] if done else None))
    return FleetStatus(group, end, workers, tuple(queries))


def _workers(config: WorkerConfig, group: str) -> tuple[WorkerStatus, ...]:
    with AdminClient(config.kafka()) as admin:
        description = admin.describe_consumer_groups([group])[group].result(timeout=TIMEOUT_S)
    return tuple(sorted((WorkerStatus(m.client_id, m.host, tuple(sorted(
        tp.partition for tp in (m.assignment.topic_partitions if m.assignment else []))))
        for m in description.members), key=lambda w: w.client_id))


def _table(config: WorkerConfig, topic: str) -> dict[str, KeyedRecord]:
    with CompactedReader(config, topic) as reader:
        return latest(reader.catch_up())


def _log_end(config: WorkerConfig, topic: str) -> int:
    with Consumer(config.kafka(**{"group.id": "deltalog-status",
                                  "isolation.level": "read_committed"})) as consumer:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0),
                                                  timeout=TIMEOUT_S)[1])


def _show(value: int | None) -> str:
    return "-" if value is None else str(value)
