"""SASL/PLAIN end to end: a broker that demands a login, a worker and clients configured by a
TOML file (credentials through the ``[kafka]`` pass-through), and a wrong password that ends
a command at once with a message saying so — not a hang, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.pipeline import (
    TRIANGLE,
    committed_changes,
    send_stream,
    wait_committed,
)
from workers.config import from_env
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin
from workers.runtime.process import WorkerProcess

pytestmark = pytest.mark.kafka
USER, PASSWORD, WRONG = "alice", "alice-secret", "wrong-pw-7"
CLI_TIMEOUT_S = 60.0
# A refused login is reported in ~0.3 s; the rest is the interpreter and imports starting.
FAIL_FAST_S = 20.0


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A broker of this module alone whose client listener is SASL_PLAINTEXT/PLAIN."""
    broker = LocalBroker(data_dir=tmp_path_factory.mktemp("sasl") / "kafka",
                         sasl_users={USER: PASSWORD})
    broker.start()
    yield broker
    broker.stop()


def _settings_file(path: Path, broker: LocalBroker, password: str) -> Path:
    path.write_text(f"""
bootstrap_servers = "{broker.bootstrap_servers}"
topic_prefix = "sasl{time.monotonic_ns()}"

[kafka]
"security.protocol" = "SASL_PLAINTEXT"
"sasl.mechanism" = "PLAIN"
"sasl.username" = "{USER}"
"sasl.password" = "{password}"
""")
    return path


def test_worker_with_the_right_login_keeps_a_query_live(sasl_broker: LocalBroker,
                                                         tmp_path: Path) -> None:
    settings = _settings_file(tmp_path / "deltalog.toml", sasl_broker, PASSWORD)
    config = from_env({}, config_file=settings)
    QueryAdmin(config).add("tri", TRIANGLE)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "worker.log",
                           env={"DELTALOG_CONFIG": str(settings)})
    worker.start()
    try:
        send_stream(config, ["[[:db/add 1 :g/to 2] [:db/add 1 :g/to 3]]",
                             "[[:db/add 2 :g/to 3]]"])
        wait_committed(config, ["tri"], 1, worker)
    finally:
        worker.stop()
    changes = committed_changes(config, "tri")
    # The registration's (empty) snapshot row first, then the triangle.
    assert [(c.row, c.weight, c.snapshot) for c in changes] == [((), 0, True),
                                                                ((1, 2, 3), 1, False)]


@pytest.mark.parametrize("command", [["worker", "--worker-id", "w1"],
                                     ["tx", "[[:db/add 1 :g/to 2]]"]], ids=["worker", "tx"])
def test_wrong_password_fails_fast_naming_authentication(sasl_broker: LocalBroker,
                                                         tmp_path: Path,
                                                         command: list[str]) -> None:
    settings = _settings_file(tmp_path / "deltalog.toml", sasl_broker, WRONG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTALOG_")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "workers", *command, "--config", str(settings)],
                          env=env, text=True, capture_output=True, timeout=CLI_TIMEOUT_S)
    assert time.monotonic() - started < FAIL_FAST_S
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        f"deltalog: error [kafka]: cannot log in to Kafka at {sasl_broker.bootstrap_servers}: "
        "authentication failed (")
    assert WRONG not in done.stderr
