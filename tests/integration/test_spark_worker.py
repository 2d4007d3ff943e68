"""A worker that runs every tick on Spark, end to end through the real broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.pipeline import (
    TRIANGLE,
    TWO_PATH,
    committed_changes,
    isolated_config,
    random_stream,
    reference_states,
    wait_committed,
)
from workers.kafka.clients import QueryAdmin, TxProducer
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_worker_on_spark_commits_the_oracle_change_stream(kafka_bootstrap: str,
                                                           tmp_path: Path) -> None:
    """A catch-up: the log is written first, so the worker steps it in a few large ticks
    (a Spark step costs seconds whatever its size; DESIGN §5)."""
    config = isolated_config(kafka_bootstrap)
    admin = QueryAdmin(config)
    admin.add("tri", TRIANGLE)
    admin.add("paths", TWO_PATH)
    stream = random_stream(seed=11, count=40)
    producer = TxProducer(config)
    for tx in stream:
        producer.send(tx)
    producer.flush()
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "worker.log",
                           tick_max_tx=20, executor="spark", spark_master="local[1]",
                           spark_memory_values=8)
    worker.start()
    try:
        wait_committed(config, ["tri", "paths"], len(stream) - 1, worker)
    finally:
        worker.stop()
    assert "executor spark" in worker.log.read_text()
    states = reference_states(stream)
    # The registration's empty snapshot, then the log in two ticks of 20.
    assert check_change_stream(TWO_PATH, committed_changes(config, "paths"), states) == 3
    check_change_stream(TRIANGLE, committed_changes(config, "tri"), states)
