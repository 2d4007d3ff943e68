"""Kafka → a worker on a real Spark standalone cluster (a master, two workers) → results
topics, with one Spark worker killed -9 after the first tick and the rest of the stream
sent only then, so the worker steps it on the damaged cluster whatever the machine's speed.

Either Spark reschedules the lost tasks on the other worker and the step goes on, or the step
fails, the worker exits and is started again (as a supervisor's ``restart: on-failure``
does) and resumes after its last committed tick: in both cases every committed tick must
equal the oracle and none may be lost or repeated.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.pipeline import (
    TRIANGLE,
    TWO_PATH,
    committed_changes,
    committed_progress,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
)
from workers.config import WorkerConfig
from workers.executors.spark.standalone import DRIVER_ENV, StandaloneCluster
from workers.kafka.clients import QueryAdmin
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.serial]
QUERIES = {"tri": TRIANGLE, "paths": TWO_PATH}
STREAM_TX = 30
TICK_MAX_TX = 10  # three ticks: the kill after the first, two Spark steps after it
MAX_RESTARTS = 3  # a lost Spark worker may fail a step or two, not every step
# A tick's two Spark steps take ~12 s on a quiet 2-core machine, ten times that and more
# while other tests load it (measured at a load average of 27).
WAIT_S = 600.0


def wait_supervised(config: WorkerConfig, tx_last: int, worker: WorkerProcess,
                    max_restarts: int) -> None:
    """Wait until every query committed ``tx_last`` (-1: taken up), starting the worker again
    whenever it exits, at most ``max_restarts`` times."""
    deadline, restarts = time.monotonic() + WAIT_S, 0
    while committed_progress(config, list(QUERIES)) < tx_last:
        assert time.monotonic() < deadline, f"progress stuck before tx {tx_last}; {worker.log}"
        if not worker.alive():
            assert restarts < max_restarts, f"worker exited; see {worker.log}"
            restarts += 1
            worker.start()
        time.sleep(0.2)


def test_worker_on_a_cluster_commits_the_oracle_through_a_lost_spark_worker(
        kafka_bootstrap: str, spark_cluster: StandaloneCluster, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "worker.log",
                           env=dict(DRIVER_ENV), tick_max_tx=TICK_MAX_TX,
                           executor="spark", spark_master=spark_cluster.master_url,
                           spark_memory_values=8)
    worker.start()
    wait_supervised(config, -1, worker, max_restarts=0)  # Spark is up, the queries taken up
    assert spark_cluster.status()["coresused"] == 2, "the worker runs on both Spark workers"
    stream = random_stream(seed=5, count=STREAM_TX)
    send_stream(config, stream[:TICK_MAX_TX], batch=TICK_MAX_TX)
    wait_supervised(config, TICK_MAX_TX - 1, worker, max_restarts=0)

    spark_cluster.kill_worker(1)
    spark_cluster.wait_alive_workers(1)
    send_stream(config, stream[TICK_MAX_TX:], batch=STREAM_TX - TICK_MAX_TX)
    wait_supervised(config, STREAM_TX - 1, worker, MAX_RESTARTS)
    worker.stop()

    assert "executor spark" in worker.log.read_text()
    states = reference_states(stream)
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)
