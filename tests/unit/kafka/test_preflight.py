"""The connection check before a command talks to Kafka, with no broker at all (the refused
login is in tests/integration/test_sasl.py, against a real SASL broker)."""

from __future__ import annotations

import socket
import time

import pytest

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.preflight import check_connection


def test_no_broker_fails_after_the_timeout_naming_the_address() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    started = time.monotonic()
    with pytest.raises(WorkersError, match=f"no Kafka broker answered at {address} within 1 s"
                       ) as failed:
        check_connection(WorkerConfig(bootstrap_servers=address), timeout_s=1.0)
    assert failed.value.code == ErrorCode.KAFKA
    assert time.monotonic() - started < 5.0
