"""Worker settings from defaults, ``DELTALOG_*`` variables (an explicit env dict) and overrides."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path
from typing import Any

import pytest

from workers.config import WorkerConfig, from_env
from workers.errors import WorkersError


def test_defaults() -> None:
    config = from_env({})
    assert config == WorkerConfig()
    assert (config.bootstrap_servers, config.topic_prefix, config.strategy) == (
        "127.0.0.1:9092", "deltalog", "delta")
    assert (config.tick_max_tx, config.tick_max_bytes, config.tick_max_wait_s) == (
        50_000, 4 << 20, 0.05)
    assert config.snapshot_dir == Path(".deltalog/snapshots")
    assert (config.registry_url, config.metrics_port, config.kafka_extra) == (None, None, {})
    assert config.worker_id == socket.gethostname()
    assert config.kafka() == {"bootstrap.servers": "127.0.0.1:9092",
                              "socket.nagle.disable": True}


def test_kafka_settings_override_the_defaults() -> None:
    config = from_env({"DELTALOG_KAFKA__SOCKET_NAGLE_DISABLE": "false"})
    assert config.kafka()["socket.nagle.disable"] == "false"
    assert config.kafka(**{"socket.nagle.disable": True})["socket.nagle.disable"] is True


def test_unrelated_variables_are_ignored() -> None:
    assert from_env({"PATH": "/bin", "DELTALOG_NOPE": "1", "KAFKA__X": "y"}) == WorkerConfig()


ENV_CASES = [
    ("DELTALOG_BOOTSTRAP_SERVERS", "broker:29092", "bootstrap_servers", "broker:29092"),
    ("DELTALOG_TOPIC_PREFIX", "t1", "topic_prefix", "t1"),
    ("DELTALOG_WORKER_ID", "w-7", "worker_id", "w-7"),
    ("DELTALOG_TICK_MAX_TX", "50", "tick_max_tx", 50),
    ("DELTALOG_TICK_MAX_BYTES", "1024", "tick_max_bytes", 1024),
    ("DELTALOG_TICK_MAX_WAIT_S", "0.5", "tick_max_wait_s", 0.5),
    ("DELTALOG_SNAPSHOT_INTERVAL_S", "2", "snapshot_interval_s", 2.0),
    ("DELTALOG_REGISTRY_URL", "http://registry:8081", "registry_url", "http://registry:8081"),
    ("DELTALOG_SNAPSHOT_URL", "s3://bucket/snapshots", "snapshot_url", "s3://bucket/snapshots"),
    ("DELTALOG_EXECUTOR", "auto", "executor", "auto"),
    ("DELTALOG_SPARK_MASTER", "spark://m:7077", "spark_master", "spark://m:7077"),
    ("DELTALOG_SPARK_TICK_DATOMS", "500", "spark_tick_datoms", 500),
]


@pytest.mark.parametrize(("variable", "raw", "field", "value"), ENV_CASES,
                         ids=[case[2] for case in ENV_CASES])
def test_from_env_reads_and_converts(variable: str, raw: str, field: str, value: Any) -> None:
    got = getattr(from_env({variable: raw}), field)
    assert got == value
    assert type(got) is type(value)


def test_snapshot_dir_from_env_is_a_path() -> None:
    assert isinstance(from_env({"DELTALOG_SNAPSHOT_DIR": "/var/lib/x"}).snapshot_dir, Path)


def test_snapshot_dir_from_env_names_the_directory() -> None:
    assert str(from_env({"DELTALOG_SNAPSHOT_DIR": "/var/lib/x"}).snapshot_dir) == "/var/lib/x"


def test_snapshots_go_to_the_url_when_set_else_the_directory() -> None:
    assert from_env({}).snapshot_store() == Path(".deltalog/snapshots")
    assert from_env({"DELTALOG_SNAPSHOT_DIR": "/x", "DELTALOG_SNAPSHOT_URL": "gs://b/p"}
                    ).snapshot_store() == "gs://b/p"


def test_metrics_port_from_env_is_an_int() -> None:
    assert from_env({"DELTALOG_METRICS_PORT": "9100"}).metrics_port == 9100


def test_kafka_variables_pass_through_to_librdkafka() -> None:
    config = from_env({"DELTALOG_BOOTSTRAP_SERVERS": "b:9093",
                       "DELTALOG_KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
                       "DELTALOG_KAFKA__SASL_MECHANISMS": "PLAIN"})
    assert config.kafka_extra == {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"}
    assert config.kafka(**{"group.id": "g"}) == {
        "bootstrap.servers": "b:9093", "socket.nagle.disable": True,
        "security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "group.id": "g"}


def test_kafka_overrides_beat_extra_settings() -> None:
    config = from_env({"DELTALOG_KAFKA__SECURITY_PROTOCOL": "SASL_SSL"})
    assert config.kafka(**{"security.protocol": "PLAINTEXT"})["security.protocol"] == "PLAINTEXT"


def test_overrides_beat_env_and_none_overrides_are_ignored() -> None:
    env = {"DELTALOG_TICK_MAX_TX": "50", "DELTALOG_STRATEGY": "naive",
           "DELTALOG_BOOTSTRAP_SERVERS": "env:9092"}
    config = from_env(env, tick_max_tx=7, strategy=None, bootstrap_servers=None,
                      metrics_port=None, snapshot_dir=Path("flag"))
    assert (config.tick_max_tx, config.strategy, config.bootstrap_servers) == (
        7, "naive", "env:9092")
    assert (config.metrics_port, config.snapshot_dir) == (None, Path("flag"))


def test_unknown_override_is_refused() -> None:
    with pytest.raises(TypeError):
        from_env({}, no_such_setting=1)


def test_config_is_frozen() -> None:
    config = from_env({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.tick_max_tx = 5  # type: ignore[misc]


def test_spark_settings_from_env() -> None:
    config = from_env({"DELTALOG_SPARK_MASTER": "spark://m:7077",
                       "DELTALOG_SPARK_CONF": "spark.driver.memory=4g,spark.sql.x=a=b",
                       "DELTALOG_SPARK_BOOTSTRAP_DATOMS": "10",
                       "DELTALOG_SPARK_STATE": "s3://bucket/state"})
    settings = config.spark()
    assert settings.master == "spark://m:7077" and settings.remote is None
    assert settings.state == "s3://bucket/state"
    assert settings.conf == {"spark.driver.memory": "4g", "spark.sql.x": "a=b"}
    assert config.auto().bootstrap_datoms == 10


def test_malformed_spark_conf_names_the_setting() -> None:
    with pytest.raises(WorkersError, match="spark_conf must be key=value pairs"):
        from_env({"DELTALOG_SPARK_CONF": "spark.driver.memory"}).spark()


def test_a_fleet_shares_a_spark_state_only_on_spark_at_a_location() -> None:
    """``spark_sharing=fleet`` takes ``executor=spark`` and a ``spark_state``; anything but
    ``worker`` or ``fleet`` is refused, naming the choices."""
    shared = {"DELTALOG_SPARK_SHARING": "fleet", "DELTALOG_EXECUTOR": "spark"}
    assert from_env({**shared, "DELTALOG_SPARK_STATE": "s3://b/s"}).spark().state == "s3://b/s"
    for env in (shared, {**shared, "DELTALOG_EXECUTOR": "auto", "DELTALOG_SPARK_STATE": "d"}):
        with pytest.raises(WorkersError, match="takes executor=spark and a spark_state"):
            from_env(env).spark()
    with pytest.raises(WorkersError, match="one of worker, fleet"):
        from_env({"DELTALOG_SPARK_SHARING": "all"}).spark()
