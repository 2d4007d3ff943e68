"""Before a command talks to Kafka: reach a broker and log in, or fail at once saying why.

librdkafka retries a refused login forever and reports it only to ``error_cb``; a metadata or
admin request meanwhile just times out, as a "transport failure" or "waiting for controller",
30 s later and without naming the cause.  So a short-lived admin client asks for metadata in
short probes and, between them, looks at what ``error_cb`` was told: a refused login (SASL or
TLS) ends the wait at once.
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError

# As long as topic creation waits (workers.kafka.topics.ADMIN_TIMEOUT_S): a broker that is
# still starting (docker compose) gets the same grace as before.
CONNECT_TIMEOUT_S = 30.0
# One metadata probe; a SASL login on a local broker takes ~0.3 s to be refused.
PROBE_S = 0.5
LOGIN_ERRORS = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL,
                          KafkaError.SASL_AUTHENTICATION_FAILED})


def check_connection(config: WorkerConfig, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Return once a broker answers a metadata request; raise a ``WorkersError`` (code
    ``kafka``) at once when the login is refused, or after ``timeout_s`` without an answer."""
    errors: list[KafkaError] = []
    with AdminClient(config.kafka(error_cb=errors.append)) as admin:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                admin.list_topics(timeout=PROBE_S)
                return
            except KafkaException:
                admin.poll(0)  # serves error_cb
            refused = next((e for e in errors if e.code() in LOGIN_ERRORS), None)
            if refused is not None:
                raise WorkersError(f"cannot log in to Kafka at {config.bootstrap_servers}: "
                                   f"authentication failed ({refused.str()}); check security."
                                   "protocol, sasl.mechanism, sasl.username, sasl.password and the "
                                   "ssl.* settings (`deltalog config` shows them)",
                                   code=ErrorCode.KAFKA)
    last = f" (last error: {errors[-1].str()})" if errors else ""
    raise WorkersError(f"no Kafka broker answered at {config.bootstrap_servers} within "
                       f"{timeout_s:.0f} s{last}", code=ErrorCode.KAFKA)
