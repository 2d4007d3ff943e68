"""``deltalog sink postgres`` against the real broker, a real worker and a real PostgreSQL:
the table equals the oracle's view after a stream with retractions (sets, a bag, aggregates;
typed and EDN columns), after kill -9 of the sink mid-stream and restarts, across a broker
restart, and rebuilt from the view when its position left the change stream's retention or
the query was registered anew; a second sink on the same table is refused, a stale one
fenced."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from tests.integration.pipeline import (
    REACH_COUNT,
    TWO_PATH,
    WAIT_S,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
)
from tests.integration.sinks import (
    SinkProcess,
    SinkThread,
    column_types,
    oracle_table,
    position,
    wait_table,
)
from workers.config import WorkerConfig
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin
from workers.kafka.compacted import OPEN_TRANSACTION_WAIT_S, CompactedReader
from workers.kafka.topics import Topics
from workers.runtime.process import WorkerProcess
from workers.sinks import SinkFenced

pytestmark = pytest.mark.kafka
BAG = "{:find [?a] :with [?b] :where [[?a :g/to ?b]]}"  # out-degrees as multiplicities
SCHEMA = "[{:db/ident :g/to :db/valueType :db.type/long}]"  # tx 0: ?b, ?c are bigint
TYPES = {"g/to": "db.type/long"}
QUERIES = {"paths": TWO_PATH, "degree": BAG, "reach": REACH_COUNT}


def _start(config: WorkerConfig, tmp_path: Path, queries: dict[str, str],
           **flags: object) -> WorkerProcess:
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "worker.log", **flags)
    worker.start()
    admin = QueryAdmin(config)
    for name, query in queries.items():
        admin.add(name, query)
    wait_committed(config, list(queries), -1, worker)
    send_stream(config, [SCHEMA])
    return worker


def test_table_equals_the_view_after_retractions(kafka_bootstrap: str, postgres_dsn: str,
                                                 tmp_path: Path) -> None:
    """Sinks started on a non-empty result (from the view), then following changes."""
    config = isolated_config(kafka_bootstrap)
    worker = _start(config, tmp_path, QUERIES, tick_max_tx=3)
    stream = random_stream(seed=23, count=300)
    send_stream(config, stream[:100], batch=20)
    wait_committed(config, list(QUERIES), 100, worker)
    sinks = {name: SinkThread(config, postgres_dsn, name, commit_interval_s=0.05)
             for name in QUERIES}
    send_stream(config, stream[100:], batch=5, pause_s=0.01)
    wait_committed(config, list(QUERIES), len(stream), worker)
    final = reference_states(stream)[-1]
    for name, query in QUERIES.items():
        wait_table(postgres_dsn, name, oracle_table(query, final, TYPES), sinks[name].alive)
    assert column_types(postgres_dsn, "paths") == {
        "row_key": "bytea", "a": "text", "c": "bigint", "weight": "bigint"}
    assert column_types(postgres_dsn, "reach") == {
        "row_key": "bytea", "a": "text", "count_b": "bigint", "distinct_b": "text",
        "max_2_b": "text", "weight": "bigint"}
    assert max(oracle_table(BAG, final).values()) > 1  # the bag kept its multiplicities
    for sink in sinks.values():
        sink.stop()
        assert sink.error is None, sink.error
        assert sink.sink.rebuilds == 0  # every change followed, none rebuilt from a view


@pytest.mark.serial
def test_kill_9_mid_stream_then_restart(kafka_bootstrap: str, postgres_dsn: str,
                                        tmp_path: Path) -> None:
    """Sink processes killed -9 three times while changes flow: no change lost or doubled
    (a doubled set row would weigh 2, a doubled bag row more)."""
    config = isolated_config(kafka_bootstrap)
    queries = {"paths": TWO_PATH, "degree": BAG}
    worker = _start(config, tmp_path, queries, tick_max_tx=2)
    sinks = {name: SinkProcess(config, postgres_dsn, name, tmp_path / f"sink-{name}.log")
             for name in queries}
    for sink in sinks.values():
        sink.start()
    stream = random_stream(seed=5, count=600)
    for part in range(4):
        sender = threading.Thread(target=send_stream, args=(
            config, stream[part * 150:(part + 1) * 150], 3, 0.01))
        sender.start()
        if part < 3:  # once each sink wrote past where it was, while the stream flows: kill
            for name, sink in sinks.items():
                _wait_written(postgres_dsn, name, part * 150 + 20, sink)
                sink.kill()
                sink.start()
        sender.join()
    wait_committed(config, list(queries), len(stream), worker)
    final = reference_states(stream)[-1]
    for name, query in queries.items():
        wait_table(postgres_dsn, name, oracle_table(query, final, TYPES), sinks[name].alive)
        log = sinks[name].log.read_text()
        assert log.count("resumes query") == 3 and "rebuilds" not in log, log
    for sink in sinks.values():
        assert sink.stop() == 0, sink.tail()


@pytest.mark.serial
def test_sink_survives_a_broker_restart(own_broker: LocalBroker, postgres_dsn: str,
                                        tmp_path: Path) -> None:
    config = isolated_config(own_broker.bootstrap_servers)
    worker = _start(config, tmp_path, {"paths": TWO_PATH}, tick_max_tx=3)
    sink = SinkProcess(config, postgres_dsn, "paths", tmp_path / "sink.log")
    sink.start()
    stream = random_stream(seed=31, count=400)
    send_stream(config, stream[:200], batch=5, pause_s=0.01)
    # The outage hits a sink that is streaming (its table made, its position stored). A sink
    # still reading the view when the broker goes waits out a view transaction held open over
    # the restart (views.py's OPEN_TRANSACTION_WAIT_S, 120 s) before it starts again: a known
    # gap (docs/pipeline.md, "PostgreSQL"), not what this test measures.
    _wait_written(postgres_dsn, "paths", 20, sink)
    own_broker.stop()
    time.sleep(8.0)
    own_broker.start()
    send_stream(config, stream[200:], batch=5, pause_s=0.01)
    wait_committed(config, ["paths"], len(stream), worker)
    final = reference_states(stream)[-1]
    # Room for a read the outage left waiting on an open transaction (120 s), then caught up.
    wait_table(postgres_dsn, "paths", oracle_table(TWO_PATH, final, TYPES), sink.alive,
               wait_s=OPEN_TRANSACTION_WAIT_S + WAIT_S)
    assert sink.stop() == 0, sink.tail()
    assert "rebuilds" not in sink.log.read_text()


def test_a_second_sink_is_refused_and_a_stale_one_fenced(kafka_bootstrap: str,
                                                         postgres_dsn: str,
                                                         tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    worker = _start(config, tmp_path, {"paths": TWO_PATH}, tick_max_tx=1)
    stream = random_stream(seed=3, count=60)
    send_stream(config, stream[:30])
    first = SinkThread(config, postgres_dsn, "paths", commit_interval_s=0.05)
    wait_committed(config, ["paths"], 30, worker)
    wait_table(postgres_dsn, "paths",
               oracle_table(TWO_PATH, reference_states(stream[:30])[-1], TYPES), first.alive)

    second = SinkProcess(config, postgres_dsn, "paths", tmp_path / "second.log")
    second.start()
    assert second.wait(60) == 2
    assert "kept by another sink" in second.log.read_text()

    # A sink that got past the lock (say, through a pooler in transaction mode) raises the
    # epoch: the first one's next write finds it and stops, writing nothing.
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE deltalog_sink SET epoch = epoch + 1")
    before = position(postgres_dsn, "paths")
    send_stream(config, stream[30:])
    wait_committed(config, ["paths"], len(stream), worker)
    first.thread.join(60)
    assert isinstance(first.error, SinkFenced), first.error
    assert position(postgres_dsn, "paths") == before


@pytest.mark.serial
def test_rebuilt_from_the_view_when_retention_or_a_registration_moved_on(
        kafka_bootstrap: str, postgres_dsn: str, tmp_path: Path) -> None:
    """The sink stopped, its stored offset deleted by retention: it starts again from the
    view.  The query registered anew — with an empty result (nothing on the change stream
    says so), then with other columns — the table follows each."""
    config = isolated_config(kafka_bootstrap)
    worker = _start(config, tmp_path, {"paths": TWO_PATH}, tick_max_tx=5)
    stream = random_stream(seed=11, count=300)
    send_stream(config, stream[:50])
    sink = SinkThread(config, postgres_dsn, "paths", commit_interval_s=0.05)
    wait_committed(config, ["paths"], 50, worker)
    wait_table(postgres_dsn, "paths",
               oracle_table(TWO_PATH, reference_states(stream[:50])[-1], TYPES), sink.alive)
    sink.stop()
    stored = position(postgres_dsn, "paths")
    assert stored is not None

    results = Topics(config.topic_prefix).results("paths")
    _configure(config, results, {"segment.ms": "100", "retention.ms": "100"})
    send_stream(config, stream[50:], batch=10, pause_s=0.05)
    wait_committed(config, ["paths"], len(stream), worker)
    _wait_deleted(config, results, stored[2])
    final = reference_states(stream)[-1]
    sink = SinkThread(config, postgres_dsn, "paths", commit_interval_s=0.05)
    wait_table(postgres_dsn, "paths", oracle_table(TWO_PATH, final, TYPES), sink.alive)
    assert sink.sink.rebuilds == 1  # the stored offset was gone: from the view

    nothing = "{:find [?a] :where [[?a :g/none ?b]]}"
    QueryAdmin(config).add("paths", nothing)
    wait_table(postgres_dsn, "paths", {}, sink.alive)
    three = "{:find [?c ?b ?a] :where [[?a :g/to ?b] [?b :g/to ?c]]}"
    QueryAdmin(config).add("paths", three)
    wait_table(postgres_dsn, "paths", oracle_table(three, final, TYPES), sink.alive)
    assert sink.sink.rebuilds == 3
    assert column_types(postgres_dsn, "paths") == {
        "row_key": "bytea", "c": "bigint", "b": "bigint", "a": "text", "weight": "bigint"}
    sink.stop()
    assert sink.error is None, sink.error


def _configure(config: WorkerConfig, topic: str, settings: dict[str, str]) -> None:
    admin = AdminClient(config.kafka())
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        for key, value in settings.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def _wait_deleted(config: WorkerConfig, topic: str, offset: int) -> None:
    """Until retention deleted ``topic`` past ``offset`` (its low watermark moved beyond)."""
    deadline = time.monotonic() + 90.0
    with CompactedReader(config, topic) as reader:
        while reader.low_watermarks()[0] <= offset:
            assert time.monotonic() < deadline, reader.low_watermarks()
            time.sleep(0.5)


def _wait_written(dsn: str, table: str, tx: int, sink: SinkProcess) -> None:
    """Until the sink's stored position passed ``tx``."""
    deadline = time.monotonic() + 120.0
    while (at := position(dsn, table)) is None or at[1] < tx:
        assert sink.alive() and time.monotonic() < deadline, sink.tail()
        time.sleep(0.05)
