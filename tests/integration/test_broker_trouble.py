"""The worker survives broker trouble — a 10 s pause (a frozen JVM: timeouts, a rebalance, a
coordinator aborting the open transaction) or a stop and restart 10 s later (connections
refused, then a broker recovering its logs) — and carries on exactly once: the committed
change streams pass the oracle and the worker never exits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.pipeline import (
    REACH_COUNT,
    TRIANGLE,
    committed_changes,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
)
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.serial]
OUTAGE_S = 10.0


def _pause(broker: LocalBroker) -> None:
    broker.pause()
    time.sleep(OUTAGE_S)
    broker.resume()


def _restart(broker: LocalBroker) -> None:
    broker.stop()
    time.sleep(OUTAGE_S)
    broker.start()


@pytest.mark.parametrize("outage", [_pause, _restart], ids=["pause", "restart"])
def test_worker_survives_broker_trouble(own_broker: LocalBroker, tmp_path: Path,
                                        outage: Callable[[LocalBroker], None]) -> None:
    config = isolated_config(own_broker.bootstrap_servers)
    admin = QueryAdmin(config)
    admin.add("tri", TRIANGLE)
    admin.add("reach", REACH_COUNT)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=5)
    worker.start()
    stream = random_stream(seed=17, count=900)
    sender = threading.Thread(target=send_stream, args=(config, stream, 1, 0.02))
    sender.start()
    wait_committed(config, ["tri", "reach"], 100, worker)
    outage(own_broker)
    sender.join()
    wait_committed(config, ["tri", "reach"], len(stream) - 1, worker)
    assert worker.alive()
    worker.stop()
    states = reference_states(stream)
    check_change_stream(TRIANGLE, committed_changes(config, "tri"), states)
    check_change_stream(REACH_COUNT, committed_changes(config, "reach"), states)
