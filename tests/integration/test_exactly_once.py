"""Exactly once under failure: the worker is killed again and again while a stream runs —
SIGKILL from outside once it has committed fresh progress, and crashes injected between
produce and commit, mid-produce, right after a commit and right after a snapshot.  The
committed change streams must still integrate to the oracle at every tick, with no tick
twice and none overlapping."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from tests.integration.pipeline import (
    REACH_COUNT,
    TRIANGLE,
    TWO_PATH,
    WAIT_S,
    committed_changes,
    committed_progress,
    isolated_config,
    random_stream,
    reference_states,
    wait_committed,
)
from workers.config import WorkerConfig
from workers.kafka.clients import QueryAdmin, TxProducer
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.serial]
KILLS = 6
FAULTS = "before-commit=0.02,mid-produce=0.02,after-commit=0.02,after-snapshot=0.05"
QUERIES = ("tri", "paths", "reach")
STREAM_TX = 1200
SEND_RATE_TX_S = 60  # slow enough that the stream outlives every kill and restart


def test_kill_9_during_a_stream_loses_and_doubles_nothing(kafka_bootstrap: str,
                                                          tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "worker.log",
                           tick_max_tx=4, snapshot_interval_s=0.5)
    admin = QueryAdmin(config)
    admin.add("tri", TRIANGLE)
    admin.add("paths", TWO_PATH)
    admin.add("reach", REACH_COUNT)
    stream = random_stream(seed=11, count=STREAM_TX)
    sender = threading.Thread(target=_send_slowly, args=(config, stream))
    sender.start()
    restarts = _kill_repeatedly(worker, config, random.Random(5))
    sender.join()
    worker.start()  # a worker without injected faults finishes the stream
    wait_committed(config, QUERIES, len(stream) - 1, worker)
    worker.stop()
    assert restarts >= KILLS
    assert _log_count(worker, "loaded snapshot") >= 1  # recovery went through a snapshot
    states = reference_states(stream)
    check_change_stream(TRIANGLE, committed_changes(config, "tri"), states)
    check_change_stream(TWO_PATH, committed_changes(config, "paths"), states)
    check_change_stream(REACH_COUNT, committed_changes(config, "reach"), states)


def _kill_repeatedly(worker: WorkerProcess, config: WorkerConfig, rng: random.Random) -> int:
    """Start the worker; each time it commits fresh progress, kill it at a random moment;
    restart it whenever it is down (killed or crashed by an injected fault)."""
    os.environ["DELTALOG_FAULTS"] = FAULTS
    try:
        restarts, kills, seen = 0, 0, -1
        deadline = time.monotonic() + WAIT_S * 2
        worker.start()
        while kills < KILLS:
            assert time.monotonic() < deadline, f"{kills} kills, {restarts} restarts"
            if not worker.alive():
                worker.start()
                restarts += 1
            progress = committed_progress(config, QUERIES)
            if progress > seen and worker.alive():
                time.sleep(rng.uniform(0.0, 0.4))
                worker.kill()
                kills, seen = kills + 1, progress
            time.sleep(0.1)
        worker.stop()
        return restarts + 1
    finally:
        del os.environ["DELTALOG_FAULTS"]


def _send_slowly(config: WorkerConfig, stream: list) -> None:
    producer = TxProducer(config)
    for i, tx in enumerate(stream):
        producer.send(tx)
        if i % 10 == 9:
            producer.flush()
            time.sleep(10 / SEND_RATE_TX_S)
    producer.flush()


def _log_count(worker: WorkerProcess, text: str) -> int:
    return worker.log.read_text().count(text)
