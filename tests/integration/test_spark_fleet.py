"""A fleet on Spark writes its state once per tick: the workers share one state location
(``spark_sharing=fleet``); the owner of the queries topic's partition 0 writes it, the others
follow it.  The writer is killed twice mid-stream (bad records among the good ones): the
other takes writing over where the state stands, and every query's committed change stream
still integrates to the oracle, with one dead letter per bad record — and the state is one
epoch, never written again from the start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.pipeline import (
    REACH_COUNT,
    TRIANGLE,
    TWO_PATH,
    committed_changes,
    isolated_config,
    reference_states,
    with_bad_records,
)
from tests.integration.test_fleet import killing_the_dead_letters_writer_twice
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.serial]
QUERIES = {"tri": TRIANGLE, "paths": TWO_PATH, "reach": REACH_COUNT, "tri2": TRIANGLE}


def test_a_fleet_writes_one_state_and_hands_writing_over_when_its_writer_dies(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    state = tmp_path / "state"
    workers = {i: WorkerProcess(config, tmp_path / f"snapshots-{i}", tmp_path / f"{i}.log",
                                worker_id=i, tick_max_tx=5, executor="spark",
                                spark_master="local[1]", spark_memory_values=8,
                                spark_state=str(state), spark_sharing="fleet")
               for i in ("w1", "w2")}
    records, bad = with_bad_records(seed=17, count=300, every=11)
    dead = killing_the_dead_letters_writer_twice(config, workers, QUERIES, records, bad, 15)
    states = reference_states([r if isinstance(r, list) and offset not in bad else []
                               for offset, r in enumerate(records)])  # offsets kept
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)
    assert dead == {offset: 1 for offset in bad}
    logs = {i: w.log.read_text() for i, w in workers.items()}
    assert all("writing the shared Spark state" in text for text in logs.values())
    assert any("following the shared Spark state" in text for text in logs.values())
    manifest = json.loads((state / "manifest.json").read_text())
    epochs = {name.split("-")[1] for name in (p.name for p in state.iterdir())
              if name.startswith(("batch-", "base-"))}
    assert epochs == {manifest["epoch"]}  # one epoch: the state was never written anew
