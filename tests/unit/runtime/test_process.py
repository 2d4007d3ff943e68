"""workers.runtime.process: the worker launcher, without a broker (the worker waits for one)."""

from __future__ import annotations

from pathlib import Path

from workers.config import from_env
from workers.runtime.process import (
    WorkerProcess,
    client_id,
    transactional_id,
    transactional_id_of_client,
)

NO_BROKER = from_env({}, bootstrap_servers="127.0.0.1:1")


def test_a_worker_is_stopped_at_the_end_of_its_with_block_and_no_longer_tracked(
        tmp_path: Path) -> None:
    with WorkerProcess(NO_BROKER, tmp_path / "snapshots", tmp_path / "w.log", "w7") as worker:
        worker.start()
        assert worker.alive() and worker in WorkerProcess.running
        worker.pause()
        worker.resume()
        assert worker.alive()
    assert not worker.alive() and worker not in WorkerProcess.running
    assert worker.transactional_id == transactional_id("w7")


def test_flags_pass_through_as_dashed_options_and_none_is_left_out(tmp_path: Path) -> None:
    worker = WorkerProcess(NO_BROKER, tmp_path / "snapshots", tmp_path / "w.log",
                           tick_max_tx="many", metrics_port=None)
    worker.start()
    assert worker.process is not None and worker.process.wait(60) == 2
    worker.stop()
    assert "--metrics-port" not in worker.process.args
    assert "argument --tick-max-tx: invalid int value: 'many'" in worker.tail()


def test_a_group_member_s_client_id_names_its_worker_s_transactional_id() -> None:
    """What a new owner fences: the worker behind a client id (docs/fleet.md, "Fencing")."""
    assert transactional_id_of_client(client_id("w-7.a")) == transactional_id("w-7.a")
    assert transactional_id_of_client("rdkafka") is None
