"""A fleet on Spark writes its state once per tick: the workers share one state location
(``spark_sharing=fleet``); the owner of the queries topic's partition 0 writes it, the others
follow it.  The writer is killed twice mid-stream (bad records among the good ones): the
other takes writing over where the state stands, and every query's committed change stream
still integrates to the oracle, with one dead letter per bad record — and the state is one
epoch, never written again from the start."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

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
    wait_committed,
)
from tests.integration.test_fleet import _dead_letters, _send, _settled_owner_of_partition_0
from workers.kafka.clients import QueryAdmin
from workers.kafka.topics import Topics
from workers.runtime.process import WorkerProcess
from workers.testing import ReferenceDb, check_change_stream

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
    workers["w1"].start()
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    records: list[str | bytes | list[Any]] = ['[{:db/ident :age :db/valueType :db.type/long}]']
    oracle = ReferenceDb()
    refused = set()
    for i, tx in enumerate(random_stream(seed=17, count=300)):
        if not oracle.transact(tx):
            refused.add(len(records))
        records.append(tx)
        if i % 11 == 4:
            records.append(b"garbage" if i % 2 else '[[:db/add 1 :age "thirty"]]')
    bad = refused | {offset for offset, record in enumerate(records)
                     if isinstance(record, bytes) or "thirty" in str(record)}
    sender = threading.Thread(target=_send, args=(config, records, 1 / 20))
    sender.start()
    try:
        wait_committed(config, list(QUERIES), 30, workers["w1"])
        workers["w2"].start()
        for _ in range(2):
            killed = workers[_settled_owner_of_partition_0(config)]
            killed.kill()
            survivor = next(w for w in workers.values() if w is not killed)
            wait_committed(config, list(QUERIES),
                           committed_progress(config, list(QUERIES)) + 15, survivor)
            killed.start()
        sender.join()
        for worker in workers.values():
            wait_committed(config, list(QUERIES), len(records) - 1, worker)
        dead = Counter(d["offset"] for d in _dead_letters(config, 0)
                       if d["topic"] == Topics(config.topic_prefix).tx)
    finally:
        for worker in workers.values():
            worker.stop()
    states = reference_states([r if isinstance(r, list) and offset not in bad else []
                               for offset, r in enumerate(records)])  # offsets kept
    for name, query in QUERIES.items():
        check_change_stream(query, committed_changes(config, name), states)
    assert dead == {offset: 1 for offset in bad}, (sorted(set(bad) - set(dead)), [
        line for w in workers.values() for line in w.log.read_text().splitlines()
        if "shared Spark" in line or "dead letters" in line or "killed" in line])
    logs = {i: w.log.read_text() for i, w in workers.items()}
    assert all("writing the shared Spark state" in text for text in logs.values())
    assert any("following the shared Spark state" in text for text in logs.values())
    manifest = json.loads((state / "manifest.json").read_text())
    epochs = {name.split("-")[1] for name in (p.name for p in state.iterdir())
              if name.startswith(("batch-", "base-"))}
    assert epochs == {manifest["epoch"]}  # one epoch: the state was never written anew
