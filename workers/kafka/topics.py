"""Topic names (DESIGN §6) and their creation."""

from __future__ import annotations

import re
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from workers.config import VIEW_TOMBSTONES_MS
from workers.errors import ErrorCode, WorkersError

QUERY_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
ADMIN_TIMEOUT_S = 30.0  # topic creation on a busy single-node broker
# Retention and cleanup of every topic deltalog creates (docs/pipeline.md, "Topics"): no topic
# is left to the broker's default retention.
COMPACTED = {"cleanup.policy": "compact"}
# The tx log is the source of truth (every worker rebuilds from it): never delete from it.
DURABLE = {"retention.ms": "-1", "retention.bytes": "-1"}
DAY_MS = 24 * 3600 * 1000
# A query's change stream: nothing reads it back but its consumers, who start from the view
# (``subscribe``); a consumer more than a week behind starts again from the view.
CHANGES = {"cleanup.policy": "delete", "retention.ms": str(7 * DAY_MS)}
# A query's view: compacted.  Compaction never touches the active segment, so small segments
# (Kafka's least, 1 MiB, or an hour) keep the part not compacted yet small beside the view.
# Tombstones (rows that left) and transaction markers (one per tick) stay delete.retention.ms
# after compaction (Kafka's default: a day, every row deleted in a day): two minutes by default
# (the ``view_tombstones_ms`` setting, ``VIEW_TOMBSTONES_MS`` in ``workers/config.py``) keeps
# them few, and a reader that takes longer than half of it reads again (``views.py``) — a
# deployment with views too big to read in a minute raises it.
VIEW = {"cleanup.policy": "compact", "segment.ms": str(3600 * 1000),
        "segment.bytes": str(1 << 20), "min.cleanable.dirty.ratio": "0.5"}
# Dead letters wait for an operator: a month, not the broker's week.
DEAD_LETTERS = {"cleanup.policy": "delete", "retention.ms": str(30 * DAY_MS)}
# Transaction reports are read right after a transaction is sent (``deltalog tx``): a week.
REPORTS = {"cleanup.policy": "delete", "retention.ms": str(7 * DAY_MS)}
# Queries are owned by partition: more partitions than workers lets a fleet grow to that many.
QUERY_PARTITIONS = 12


@dataclass(frozen=True, slots=True)
class Topics:
    prefix: str = "deltalog"
    view_tombstones_ms: int = VIEW_TOMBSTONES_MS  # the view topics' delete.retention.ms

    @property
    def tx(self) -> str:
        return f"{self.prefix}.tx"

    @property
    def queries(self) -> str:
        return f"{self.prefix}.queries"

    @property
    def progress(self) -> str:
        return f"{self.prefix}.progress"

    @property
    def dlq(self) -> str:
        return f"{self.prefix}.dlq"

    @property
    def reports(self) -> str:
        return f"{self.prefix}.reports"

    def results(self, query: str) -> str:
        return f"{self.prefix}.results.{query}"

    def view(self, query: str) -> str:
        return f"{self.prefix}.views.{query}"

    def written_by_workers(self, topic: str) -> bool:
        """Whether ``topic`` is one the workers' transactions write: the progress, the dead
        letters, the reports, a query's results or view."""
        return topic in (self.progress, self.dlq, self.reports) or topic.startswith(
            (self.results(""), self.view("")))

    def of_query(self, query: str) -> dict[str, dict[str, str]]:
        """The topics of one query (its change stream and its view) with their configs."""
        return {self.results(query): CHANGES,
                self.view(query): {**VIEW, "delete.retention.ms": str(self.view_tombstones_ms)}}


def check_query_name(name: str) -> str:
    """Query names become topic names: letters, digits, ``.``, ``_`` and ``-`` only."""
    if not QUERY_NAME.fullmatch(name):
        raise WorkersError(f"invalid query name {name!r}: use letters, digits, '.', '_', '-' "
                           "(it becomes part of a Kafka topic name)", code=ErrorCode.QUERY_SHAPE,
                           form=name)
    return name


def ensure_topics(admin: AdminClient, topics: Topics,
                  query_partitions: int = QUERY_PARTITIONS) -> None:
    """Create the fixed topics if they are missing: tx and progress with one partition
    each; queries with ``query_partitions`` (the units of ownership a fleet shares out)."""
    create(admin, {topics.tx: DURABLE, topics.progress: COMPACTED, topics.dlq: DEAD_LETTERS,
                   topics.reports: REPORTS})
    create(admin, {topics.queries: COMPACTED}, partitions=query_partitions)


def create(admin: AdminClient, wanted: dict[str, dict[str, str]], partitions: int = 1) -> None:
    """Create each missing topic with ``partitions`` partitions and the given configs."""
    try:
        existing = set(admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics)
    except KafkaException as err:  # no broker answered; a refused login looks the same here
        raise WorkersError(f"cannot list the topics to create {', '.join(wanted)}: {err} "
                           "(is the broker up, and are the security settings right?)",
                           code=ErrorCode.KAFKA) from err
    missing = [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config)
               for name, config in wanted.items() if name not in existing]
    if not missing:
        return
    for name, future in admin.create_topics(missing, operation_timeout=ADMIN_TIMEOUT_S).items():
        try:
            future.result()
        except KafkaException as err:
            if err.args[0].name() != "TOPIC_ALREADY_EXISTS":
                raise WorkersError(f"cannot create topic {name}: {err}", code=ErrorCode.KAFKA,
                                   form=name) from err
