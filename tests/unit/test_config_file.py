"""The TOML settings file: precedence (defaults < file < variables < flags), refusals that
name the file and the key, and secrets masked wherever settings are shown."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from workers.config import MASK, WorkerConfig, from_env, masked, to_toml
from workers.errors import ErrorCode, WorkersError

FILE = """
bootstrap_servers = "file:9092"
tick_max_tx = 10
snapshot_interval_s = 5
snapshot_dir = "/var/lib/deltalog"
snapshot_url = "hdfs://namenode:8020/deltalog/snapshots"

[kafka]
"security.protocol" = "SASL_PLAINTEXT"
"sasl.password" = "from-file"
"enable.ssl.certificate.verification" = false
"linger.ms" = 5
"client.id" = "dé-😀-\\u007f-\\"q\\""
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deltalog.toml"
    path.write_text(text)
    return path


def test_file_settings_are_typed_and_kafka_keys_pass_through(tmp_path: Path) -> None:
    config = from_env({}, config_file=_write(tmp_path, FILE))
    assert (config.bootstrap_servers, config.tick_max_tx) == ("file:9092", 10)
    assert config.snapshot_interval_s == 5.0 and type(config.snapshot_interval_s) is float
    assert config.snapshot_dir == Path("/var/lib/deltalog")
    assert config.snapshot_url == "hdfs://namenode:8020/deltalog/snapshots"
    assert config.kafka_extra == {"security.protocol": "SASL_PLAINTEXT",
                                  "sasl.password": "from-file",
                                  "enable.ssl.certificate.verification": "false",
                                  "linger.ms": "5", "client.id": 'dé-😀-\x7f-"q"'}


def test_file_named_by_variable(tmp_path: Path) -> None:
    path = _write(tmp_path, FILE)
    assert from_env({"DELTALOG_CONFIG": str(path)}).tick_max_tx == 10


def test_flag_file_wins_over_the_variable_file(tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text("tick_max_tx = 99\n")
    env = {"DELTALOG_CONFIG": str(_write(tmp_path, FILE))}
    assert from_env(env, config_file=other).tick_max_tx == 99


@pytest.mark.parametrize(("env", "flags", "tick_max_tx", "password"), [
    ({}, {}, 10, "from-file"),
    ({"DELTALOG_TICK_MAX_TX": "20", "DELTALOG_KAFKA__SASL_PASSWORD": "from-env"}, {},
     20, "from-env"),
    ({"DELTALOG_TICK_MAX_TX": "20"}, {"tick_max_tx": 30}, 30, "from-file"),
], ids=["file", "env beats file", "flag beats env"])
def test_precedence(tmp_path: Path, env: dict[str, str], flags: dict[str, int],
                    tick_max_tx: int, password: str) -> None:
    config = from_env(env, config_file=_write(tmp_path, FILE), **flags)
    assert config.tick_max_tx == tick_max_tx
    assert config.kafka()["sasl.password"] == password
    assert config.kafka()["security.protocol"] == "SASL_PLAINTEXT"  # the file's, untouched


@pytest.mark.parametrize(("text", "message"), [
    ("tick_max = 5\n", "unknown key 'tick_max'; did you mean 'tick_max_tx'?"),
    ("kafka_extra = 1\n", "unknown key 'kafka_extra'; did you mean 'kafka'?"),
    ('tick_max_tx = "5"\n', "tick_max_tx must be an integer, not a string"),
    ("tick_max_tx = true\n", "tick_max_tx must be an integer, not a boolean"),
    ("tick_max_wait_s = [1]\n", "tick_max_wait_s must be a number, not an array"),
    ("snapshot_dir = 3\n", "snapshot_dir must be a string (a path), not an integer"),
    ('kafka = "x"\n', "kafka must be a table of librdkafka settings, not a string"),
    ('[kafka]\n"sasl.jaas" = [1]\n', "kafka.sasl.jaas must be a string, number or boolean, "
                                     "not an array"),
    ("tick_max_tx = 5\nstrategy = \n", "not valid TOML: Invalid value (at line 2, column 12)"),
    ('[kafka]\nsecurity.protocol = "SSL"\n', "kafka.security must be a string, number or "
                                              'boolean, not a table (quote dotted keys: '
                                              '"security.…" = …)'),
], ids=["unknown", "kafka_extra", "str for int", "bool for int", "array", "int for path",
        "kafka not a table", "kafka array", "syntax", "unquoted dotted key"])
def test_bad_file_is_refused_naming_file_and_key(tmp_path: Path, text: str,
                                                 message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(WorkersError) as refused:
        from_env({}, config_file=path)
    assert refused.value.code == ErrorCode.CONFIG
    assert str(refused.value) == f"config file {path}: {message}"


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkersError, match=r"missing.toml: cannot read it \(No such file"):
        from_env({"DELTALOG_CONFIG": str(tmp_path / "missing.toml")})


def test_bad_variable_names_it() -> None:
    with pytest.raises(WorkersError, match="DELTALOG_TICK_MAX_TX='many' is not an integer"):
        from_env({"DELTALOG_TICK_MAX_TX": "many"})


SECRETS = {"sasl.password": "p1", "ssl.keystore.password": "p2", "ssl.key.password": "p3",
           "sasl.oauthbearer.client.secret": "p4", "sasl.oauthbearer.config": "p5",
           "ssl.key.pem": "p6"}


def test_secrets_are_masked_and_the_rest_shown() -> None:
    config = WorkerConfig(registry_url="https://bob:hunter2@registry:8081/x",
                          snapshot_url="s3://AKIA:s3cr3t@bucket/snapshots?region=eu-west-1",
                          spark_remote="sc://spark:15002/;token=abc;user_id=u",
                          kafka_extra={**SECRETS, "sasl.username": "alice"})
    shown = masked(config)
    assert shown["kafka"] == {**dict.fromkeys(SECRETS, MASK), "sasl.username": "alice"}
    assert shown["registry_url"] == "https://bob:***@registry:8081/x"
    assert shown["spark_remote"] == "sc://spark:15002/;token=***;user_id=u"
    assert shown["snapshot_url"] == "s3://AKIA:***@bucket/snapshots?region=eu-west-1"
    for text in (to_toml(shown), repr(config)):
        assert not any(secret in text
                       for secret in ("hunter2", "abc", "s3cr3t", *SECRETS.values()))


@pytest.mark.parametrize(("url", "shown"), [
    ("http://registry:8081", "http://registry:8081"),
    ("https://token@registry", "https://***@registry"),
    ("https://u:p@ss@registry/a@b", "https://u:***@registry/a@b"),
])
def test_registry_userinfo_is_masked(url: str, shown: str) -> None:
    assert masked(WorkerConfig(registry_url=url))["registry_url"] == shown


def test_shown_toml_loads_back_as_the_same_settings(tmp_path: Path) -> None:
    config = from_env({}, config_file=_write(tmp_path, FILE))
    text = to_toml(masked(config))
    assert "# metrics_port is not set" in text
    assert tomllib.loads(text)["kafka"]["linger.ms"] == "5"
    again = from_env({}, config_file=_write(tmp_path, text))
    assert again == replace(config, kafka_extra={**config.kafka_extra, "sasl.password": MASK})
