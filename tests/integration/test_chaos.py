"""The fleet under chaos (issue 6): three workers, 20 queries, 20,000 transactions; during
the stream a random worker is killed -9 and restarted three times, a fourth worker joins,
and the broker is stopped for 10 s and started again (a freeze is in test_broker_trouble);
a worker its watchdog ends is started again, as the deployment's supervisor does.
Afterwards every query's committed change stream integrates to the from-scratch result at
every tick, no tick is there twice, and each committed tick had one writer (ticks of one
query never overlap)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from tests.integration.pipeline import (
    REACH_COUNT,
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
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.serial]
EDGES = "{:find [?a ?b] :where [[?a :g/to ?b]]}"
SHAPES = (TRIANGLE, TWO_PATH, REACH_COUNT, EDGES)
QUERIES = {f"q{i:02d}": SHAPES[i % len(SHAPES)] for i in range(20)}
STREAM_TX = 20_000


def _reached(config: WorkerConfig, tx: int) -> bool:
    return committed_progress(config, list(QUERIES)) >= tx


def _wait(config: WorkerConfig, tx: int, deadline: float,
          workers: list[WorkerProcess]) -> None:
    """Until every query's progress reaches ``tx``.  A worker whose watchdog ended it (a
    librdkafka call hung, as one can after the broker's restart) is started again, as the
    deployment's ``restart: on-failure`` does; any other exit fails the test."""
    while not _reached(config, tx):
        assert time.monotonic() < deadline, f"progress stuck before tx {tx}"
        for worker in workers:
            worker.restart_if_asked()
            assert worker.process is None or worker.alive(), \
                f"worker died ({worker.log}):\n{worker.tail(40)}"
        time.sleep(0.5)


def test_chaos_loses_and_doubles_nothing(own_broker: LocalBroker, tmp_path: Path) -> None:
    config = isolated_config(own_broker.bootstrap_servers)
    workers = [WorkerProcess(config, tmp_path / "snapshots", tmp_path / f"w{i}.log",
                             worker_id=f"w{i}", tick_max_tx=200, snapshot_interval_s=2)
               for i in range(1, 5)]
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    for worker in workers[:3]:
        worker.start()
    stream = random_stream(seed=29, count=STREAM_TX)
    sender = threading.Thread(target=send_stream, args=(config, stream, 200, 0.05))
    sender.start()
    rng, deadline = random.Random(8), time.monotonic() + 900
    for at in (2_000, 6_000, 12_000):  # kill -9 a random worker, restart it
        _wait(config, at, deadline, workers)
        victim = rng.choice([w for w in workers if w.alive()])
        victim.kill()
        time.sleep(2)
        victim.start()
        if at == 6_000:
            workers[3].start()  # a fourth worker joins
            _wait(config, 9_000, deadline, workers)
            own_broker.stop()
            time.sleep(10)
            own_broker.start()
    sender.join()
    _wait(config, STREAM_TX - 1, time.monotonic() + 300, workers)
    for worker in workers:
        worker.stop()
    states = reference_states(stream)
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)
