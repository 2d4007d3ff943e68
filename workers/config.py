"""Worker settings: one frozen object, from ``DELTALOG_*`` environment variables and flags.

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
from typing import Any

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
    kafka_extra: Mapping[str, str] = field(default_factory=dict)

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
