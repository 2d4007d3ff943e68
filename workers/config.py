"""Worker settings: one frozen object, from ``DELTALOG_*`` environment variables and flags.

The executor settings (``executor``, ``spark_*``) say where plans run: ``local`` (default),
``spark`` or ``auto``; ``spark_conf`` is ``key=value`` pairs separated by commas, passed to
Spark as they are (``DELTALOG_SPARK_CONF=spark.driver.memory=4g,spark.executor.cores=2``).

Kafka client settings pass through unchanged (librdkafka names) from ``kafka_extra`` and from
``DELTALOG_KAFKA__<KEY>`` variables (``DELTALOG_KAFKA__SECURITY_PROTOCOL=SASL_SSL`` →
``security.protocol``), so TLS and SASL work as in any confluent-kafka client.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workers.errors import ErrorCode, WorkersError
from workers.executors.dispatch import SPARK_BOOTSTRAP_DATOMS, SPARK_TICK_DATOMS, AutoPolicy

if TYPE_CHECKING:
    from workers.executors.spark.session import SparkSettings

ENV_PREFIX = "DELTALOG_"
KAFKA_ENV_PREFIX = "DELTALOG_KAFKA__"


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    bootstrap_servers: str = "127.0.0.1:9092"
    topic_prefix: str = "deltalog"
    worker_id: str = field(default_factory=socket.gethostname)
    strategy: str = "delta"
    tick_max_tx: int = 1000  # transactions per tick at most
    tick_max_bytes: int = 4 << 20  # encoded transaction bytes per tick at most
    tick_max_wait_s: float = 0.05  # longest an idle worker waits for the first transaction
    snapshot_dir: Path = Path(".deltalog/snapshots")
    snapshot_interval_s: float = 60.0
    registry_url: str | None = None
    metrics_port: int | None = None
    executor: str = "local"  # local | spark | auto (workers.executors.dispatch)
    spark_master: str = "local[*]"
    spark_remote: str | None = None  # a Spark Connect URL (sc://host:15002) instead of a master
    spark_conf: str = ""
    spark_tick_datoms: int = SPARK_TICK_DATOMS  # auto: ticks this large run on Spark
    spark_bootstrap_datoms: int = SPARK_BOOTSTRAP_DATOMS  # auto: bootstraps on a db this large
    group_id: str | None = None  # the workers' consumer group (default <topic_prefix>.workers)
    session_timeout_ms: int = 6000  # a worker silent this long loses its queries
    query_partitions: int = 12  # partitions of a new queries topic: the most workers that help
    memory_limit_mb: int | None = None  # over it, ticks shrink and consumption slows
    ready_lag_tx: int = 1000  # ready when at most this many transactions behind the log
    transaction_timeout_ms: int = 6000  # a dead worker's open transaction ends after this
    kafka_extra: Mapping[str, str] = field(default_factory=dict)

    def spark(self) -> SparkSettings:
        """Where Spark runs, for ``executor`` spark or auto."""
        from workers.executors.spark.session import SparkSettings  # PySpark only when asked

        try:
            conf = dict(pair.split("=", 1) for pair in self.spark_conf.split(",") if pair)
        except ValueError:
            raise WorkersError(f"spark_conf must be key=value pairs separated by commas, not "
                               f"{self.spark_conf!r}", code=ErrorCode.CONFIG) from None
        return SparkSettings(self.spark_master, self.spark_remote, conf)

    def auto(self) -> AutoPolicy:
        return AutoPolicy(self.spark_tick_datoms, self.spark_bootstrap_datoms)

    def kafka(self, **overrides: Any) -> dict[str, Any]:
        """librdkafka settings for a client of this worker."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.kafka_extra, **overrides}


def from_env(env: Mapping[str, str] | None = None, **overrides: Any) -> WorkerConfig:
    """Settings from ``DELTALOG_<FIELD>`` variables, then ``overrides`` (e.g. CLI flags)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for f in fields(WorkerConfig):
        raw = env.get(ENV_PREFIX + f.name.upper())
        if raw is not None and f.name != "kafka_extra":
            values[f.name] = _PARSERS[str(f.type).removesuffix(" | None")](raw)
    kafka_extra = {key[len(KAFKA_ENV_PREFIX):].lower().replace("_", "."): value
                   for key, value in env.items() if key.startswith(KAFKA_ENV_PREFIX)}
    values["kafka_extra"] = kafka_extra
    values.update({k: v for k, v in overrides.items() if v is not None})
    return replace(WorkerConfig(), **values)


_PARSERS: dict[str, Any] = {"int": int, "float": float, "str": str, "Path": Path}
