"""Downstream readers against the real broker (issue 38): once retention deleted the head of
a change stream, ``follow()`` and ``deltalog tail --json`` still start from the view and
integrate to the oracle, and reading from the beginning refuses; a consumer that stored its
position resumes exactly (no change twice, none missed) while the changes since are
retained, and otherwise is told so and starts from the view."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from tests.integration.pipeline import (
    TWO_PATH,
    committed_changes,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
)
from tests.integration.test_cli import deltalog
from tests.integration.test_views import TINY_RETENTION, _configure, _wait_deleted
from workers.config import WorkerConfig
from workers.edn import dumps
from workers.kafka.avro import AvroCodec
from workers.kafka.clients import (
    Change,
    HeadGoneError,
    QueryAdmin,
    Snapshot,
    follow,
    subscribe,
)
from workers.kafka.messages import row_from_avro
from workers.kafka.topics import Topics
from workers.runtime.process import WorkerProcess
from workers.testing import check_change_stream, evaluate_from_scratch
from workers.zset import add_into

pytestmark = pytest.mark.kafka
TAIL_S = 10.0  # long enough for tail to start, read the view and the changes, and print
RETENTION_OFF_S = 3.0  # the broker applies a topic's new retention (it checks every second)


def test_readers_start_from_the_view_and_resume_exactly_whatever_the_retention(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    env = {**os.environ, "DELTALOG_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "DELTALOG_TOPIC_PREFIX": config.topic_prefix}
    topic = Topics(config.topic_prefix).results("paths")
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=3)
    worker.start()
    QueryAdmin(config).add("paths", TWO_PATH)
    wait_committed(config, ["paths"], -1, worker)
    stream = random_stream(seed=41, count=400)
    states = reference_states(stream)
    send_stream(config, stream[:100], batch=5, pause_s=0.02)
    wait_committed(config, ["paths"], 99, worker)

    # A consumer applied the stream up to the end of a tick and stored that position.
    history = committed_changes(config, "paths")
    positions = [change.position for change in history if change.last]
    stored = positions[len(positions) // 2]
    applied = _integrated(change for change in history if change.position <= stored)
    send_stream(config, stream[100:200], batch=5, pause_s=0.02)
    wait_committed(config, ["paths"], 199, worker)
    since = [change for change in committed_changes(config, "paths")
             if change.position > stored]
    resumed = list(follow(config, "paths", after=stored, stop_at_end=True))
    assert resumed == since and not any(change.snapshot for change in resumed)
    assert add_into(applied, _integrated(resumed)) == evaluate_from_scratch(TWO_PATH,
                                                                            states[199])
    assert list(follow(config, "paths", after=since[-1].position, stop_at_end=True)) == []
    tail = _tail_json(env, "paths", "--after", str(stored.tx),
                      "--registration", str(stored.registration))
    assert tail.lines == [change.as_json("paths") for change in since]

    # Retention deletes the head of the change stream.
    _configure(config, [topic], TINY_RETENTION)
    send_stream(config, stream[200:300], batch=5, pause_s=0.02)
    wait_committed(config, ["paths"], 299, worker)
    _wait_deleted(config, [topic])
    _configure(config, [topic], {"retention.ms": "-1"})  # what is left now stays
    time.sleep(RETENTION_OFF_S)
    expected = evaluate_from_scratch(TWO_PATH, states[299])
    assert _retained(config, topic) != expected  # what the old follow() integrated

    changes = list(follow(config, "paths", stop_at_end=True))
    assert changes[0].snapshot and check_change_stream(TWO_PATH, changes, states) >= 1
    assert _integrated(changes) == expected
    tail = _tail_json(env, "paths")
    assert tail.lines[0]["snapshot"] and tail.integrated() == {
        dumps(row): weight for row, weight in expected.items()}
    with pytest.raises(HeadGoneError, match="retention deleted its records before offset"):
        next(follow(config, "paths", stop_at_end=True, from_beginning=True))
    refused = deltalog(env, "tail", "paths", "--from-beginning")
    assert refused.returncode == 2 and refused.stdout == ""
    assert "retention deleted its records before offset" in refused.stderr

    # Resuming from a position whose changes since retention deleted: said, from the view.
    items = list(subscribe(config, "paths", after=stored, stop_at_end=True))
    snapshot = items[0]
    assert isinstance(snapshot, Snapshot) and snapshot.not_resumed == stored
    assert snapshot.rows == expected and snapshot.position > stored
    assert items[1:] == []
    tail = _tail_json(env, "paths", "--after", str(stored.tx),
                      "--registration", str(stored.registration))
    assert f"the changes after {stored} are no longer retained" in tail.stderr
    assert all(line["snapshot"] for line in tail.lines) and tail.integrated() == {
        dumps(row): weight for row, weight in expected.items()}

    # A position stored after the deletion resumes exactly: its changes since are retained.
    send_stream(config, stream[300:310], batch=5)
    wait_committed(config, ["paths"], 309, worker)
    start = next(subscribe(config, "paths", stop_at_end=True))
    assert isinstance(start, Snapshot)
    send_stream(config, stream[310:], batch=5, pause_s=0.02)
    wait_committed(config, ["paths"], len(stream) - 1, worker)
    worker.stop()
    resumed = list(follow(config, "paths", after=start.position, stop_at_end=True))
    assert resumed and not any(change.snapshot for change in resumed)
    assert [change.position for change in resumed] == sorted(
        change.position for change in resumed)
    view = add_into(dict(start.rows), _integrated(resumed))
    assert view == evaluate_from_scratch(TWO_PATH, states[-1])


class _Tail:
    def __init__(self, output: str, stderr: str) -> None:
        self.lines: list[dict[str, Any]] = [json.loads(line) for line in output.splitlines()]
        self.stderr = stderr

    def integrated(self) -> dict[str, int]:
        view: dict[str, int] = {}
        for line in self.lines:
            add_into(view, {line["row"]: line["weight"]})
        return view


def _tail_json(env: dict[str, str], name: str, *flags: str) -> _Tail:
    """What ``deltalog tail --json`` prints within a few seconds (it follows forever, so it
    is stopped by the timeout)."""
    try:
        done = deltalog(env, "tail", name, "--json", *flags, timeout_s=TAIL_S)
        return _Tail(done.stdout, done.stderr)
    except subprocess.TimeoutExpired as stopped:
        return _Tail(_text(stopped.stdout), _text(stopped.stderr))


def _text(output: str | bytes | None) -> str:
    return output.decode() if isinstance(output, bytes) else output or ""


def _integrated(changes: Iterable[Change]) -> dict[Any, int]:
    view: dict[Any, int] = {}
    for change in changes:
        add_into(view, {change.row: change.weight})
    return view


def _retained(config: WorkerConfig, topic: str) -> dict[Any, int]:
    """The change records retention left, integrated, read as any consumer would; each
    carries its query, registration and transactions in its headers too."""
    codec = AvroCodec("result_change")
    consumer = Consumer(config.kafka(**{"group.id": "retained", "enable.partition.eof": True,
                                        "isolation.level": "read_committed"}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    view: dict[Any, int] = {}
    try:
        while True:
            message = consumer.poll(5.0)
            assert message is not None
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                return view
            record = codec.decode(message.value() or b"")
            headers = {key: value.decode() for key, value in message.headers() or []}
            assert headers == {"deltalog.query": record["query"], "deltalog.registration": "0",
                               "deltalog.tx_first": str(record["tx_first"]),
                               "deltalog.tx_last": str(record["tx_last"])}
            add_into(view, {row_from_avro(record["values"]): record["weight"]})
    finally:
        consumer.close()
