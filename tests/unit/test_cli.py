"""The command line without a broker: ``deltalog config`` (the settings a worker with the same
flags would use, secrets masked), the flags' names and usage errors."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

import pytest

from workers.cli import _parser, main
from workers.config import WorkerConfig

FILE = """
bootstrap_servers = "file:9092"
tick_max_tx = 10
registry_url = "https://bob:hunter2@registry:8081"

[kafka]
"security.protocol" = "SASL_PLAINTEXT"
"sasl.mechanism" = "PLAIN"
"sasl.username" = "alice"
"sasl.password" = "alice-secret"
"""


@pytest.fixture
def settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file, with no ``DELTALOG_*`` variable of the caller's shell in the way."""
    for variable in os.environ:
        if variable.startswith("DELTALOG_"):
            monkeypatch.delenv(variable)
    path = tmp_path / "deltalog.toml"
    path.write_text(FILE)
    return path


def test_config_shows_file_env_and_flags_with_secrets_masked(
        settings_file: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DELTALOG_TICK_MAX_TX", "20")
    monkeypatch.setenv("DELTALOG_STRATEGY", "binary")
    assert main(["config", "--config", str(settings_file), "--tick-max-tx", "30"]) == 0
    out = capsys.readouterr().out
    for line in ('bootstrap_servers = "file:9092"', "tick_max_tx = 30", 'strategy = "binary"',
                 'registry_url = "https://bob:***@registry:8081"', '"sasl.username" = "alice"',
                 '"sasl.password" = "***"'):
        assert line in out.splitlines()
    assert "hunter2" not in out and "alice-secret" not in out


def test_every_worker_flag_is_named_after_the_setting_it_sets() -> None:
    commands = next(action for action in _parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    settings = {setting.name for setting in dataclasses.fields(WorkerConfig)}
    not_settings = {"help", "log_format", "config", "verbose", "json"}
    for command in ("worker", "config"):
        flags = [action for action in commands.choices[command]._actions
                 if action.option_strings and action.dest not in not_settings]
        assert flags
        for flag in flags:
            assert flag.dest in settings
            assert flag.option_strings == ["--" + flag.dest.replace("_", "-")]


def test_config_flags_set_their_settings_in_their_units(
        settings_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--json", "--tick-max-wait-s", "0.2", "--snapshot-interval-s", "5",
                 "--tick-max-tx", "7", "--worker-id", "w9", "--metrics-port", "9100",
                 "--snapshot-url", "s3://b/s"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert {key: shown[key] for key in ("tick_max_wait_s", "snapshot_interval_s", "tick_max_tx",
                                        "worker_id", "metrics_port", "snapshot_url")} == {
        "tick_max_wait_s": 0.2, "snapshot_interval_s": 5.0, "tick_max_tx": 7,
        "worker_id": "w9", "metrics_port": 9100, "snapshot_url": "s3://b/s"}


def test_config_json_reads_the_file_named_by_the_variable(
        settings_file: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DELTALOG_CONFIG", str(settings_file))
    monkeypatch.setenv("DELTALOG_KAFKA__SASL_USERNAME", "carol")
    assert main(["config", "--json", "--bootstrap-servers", "flag:9092"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["bootstrap_servers"], shown["tick_max_tx"], shown["metrics_port"]) == (
        "flag:9092", 10, None)
    assert shown["kafka"]["sasl.username"] == "carol"
    assert shown["kafka"]["sasl.password"] == "***"


def test_config_refuses_a_bad_file_naming_it(settings_file: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    settings_file.write_text("tick_max_tx = 'ten'\n")
    assert main(["config", "--config", str(settings_file)]) == 2
    assert capsys.readouterr().err == (f"deltalog: error [config]: config file {settings_file}: "
                                       "tick_max_tx must be an integer, not a string\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["tx"], "give a transaction as EDN text or --file data.edn"),
    (["query", "add"], "query add needs a NAME"),
    (["query", "rm"], "query rm needs a NAME"),
    (["query", "add", "tri"], "query add needs NAME and the query as EDN text"),
], ids=["tx", "add", "rm", "add-no-edn"])
def test_a_usage_error_has_its_own_code_and_needs_no_broker(
        argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def unreachable(config: WorkerConfig) -> WorkerConfig:
        raise AssertionError("a usage error is reported before any broker is asked")

    monkeypatch.setattr("workers.cli._connected", unreachable)
    assert main(argv) == 2
    assert capsys.readouterr().err == f"deltalog: error [usage]: {message}\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["config", "--tick-max-tx", "ten"],
     "deltalog config: error [usage]: argument --tick-max-tx: invalid int value: 'ten'"),
    (["config", "--tick-ms", "5"], "deltalog: error [usage]: unrecognized arguments: --tick-ms 5"),
    (["worker", "--executor", "gpu"],  # the choices' quoting varies with the Python version
     "deltalog worker: error [usage]: argument --executor: invalid choice: 'gpu'"),
], ids=["bad-value", "unknown-flag", "bad-choice"])
def test_argparse_usage_errors_have_the_usage_code_too(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(message)
