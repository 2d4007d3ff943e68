"""deltalog installed from its wheel, away from the checkout: ``from workers import Engine``,
``deltalog broker`` and ``deltalog demo`` find everything they read inside the package.

One wheel and one fresh virtual environment per run, used from an empty directory. The
environment borrows the dependencies of the one running the tests through a ``.pth`` line
(pyspark alone is ~500 MB to download): a directory added by a ``.pth`` line is not scanned
for ``.pth`` files of its own, so the checkout's editable install is not loaded there.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from workers.demo import KARATE, PEOPLE
from workers.kafka.broker import (
    FETCH_TIMEOUT_S,
    HOST,
    KILL_WAIT_S,
    LIVENESS_POLL_INTERVAL_S,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    free_port,
)

pytestmark = pytest.mark.kafka
ROOT = Path(__file__).resolve().parents[2]
# A build without isolation takes seconds; with it, pip first downloads setuptools.
BUILD_TIMEOUT_S = 300.0
# Installing the wheel alone (no dependencies, no index) and an import take seconds.
STEP_TIMEOUT_S = 120.0
# The first broker on a machine fetches the Kafka jars before it starts.
BROKER_UP_S = FETCH_TIMEOUT_S + START_TIMEOUT_S
# `deltalog broker` notices the signal within a poll, then stops its JVM within its own bound.
BROKER_DOWN_S = LIVENESS_POLL_INTERVAL_S + STOP_TIMEOUT_S + KILL_WAIT_S
# The demo streams its transactions in about 10 s and waits at most 60 s for the worker.
DEMO_TIMEOUT_S = BROKER_UP_S + 180.0
POLL_S = 0.2


@dataclass(frozen=True)
class Installed:
    """The fresh environment holding the wheel, and the empty directory its commands run in."""

    venv: Path
    cwd: Path
    env: dict[str, str]

    def command(self, name: str, *args: str) -> list[str]:
        return [str(self.venv / "bin" / name), *args]

    def run(self, name: str, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(name, *args), cwd=self.cwd, env=self.env, text=True,
                              capture_output=True, timeout=timeout_s, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel in a fresh environment, checked to be what ``import workers`` finds there."""
    work = tmp_path_factory.mktemp("package")
    venv, cwd = work / "venv", work / "empty"
    _check([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = str(venv / "bin" / "python")
    # Installed before the dependencies are borrowed, so pip sees no deltalog there yet.
    _check([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
            "--no-index", "--quiet", str(_build_wheel(work))])
    site = _check([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    borrowed = dict.fromkeys(sysconfig.get_path(key) for key in ("purelib", "platlib"))
    (Path(site.strip()) / "borrowed-dependencies.pth").write_text("\n".join(borrowed) + "\n")
    cwd.mkdir()
    found = Installed(venv, cwd, _without_python_path())
    imported = found.run("python", "-c", "import workers; print(workers.__file__)",
                         timeout_s=STEP_TIMEOUT_S)
    assert imported.returncode == 0, imported.stderr
    wheel_copy = Path(imported.stdout.strip()).resolve()
    assert wheel_copy.is_relative_to(venv.resolve()), wheel_copy  # not the checkout's
    return found


def test_the_engine_is_exported(installed: Installed) -> None:
    imported = installed.run("python", "-c", "from workers import Engine",
                             timeout_s=STEP_TIMEOUT_S)
    assert imported.returncode == 0, imported.stderr


def test_the_demo_runs_to_the_end(installed: Installed) -> None:
    demo = installed.run("deltalog", "demo", timeout_s=DEMO_TIMEOUT_S)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert demo.stdout.splitlines()[-1] == (
        f"done: {len(KARATE) + len(PEOPLE)} transactions, every change committed exactly once")


def test_the_broker_serves_and_stops_cleanly(installed: Installed) -> None:
    port = free_port()
    output = installed.cwd.parent / "broker.out"
    with output.open("wb") as out:
        broker = subprocess.Popen(installed.command("deltalog", "broker", "--port", str(port)),
                                  cwd=installed.cwd, env=installed.env, stdout=out,
                                  stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + BROKER_UP_S
        # errors="replace": the read may end inside a character of a line being written.
        while f"ready at {HOST}:{port}" not in output.read_text(errors="replace"):
            assert broker.poll() is None, output.read_text()
            assert time.monotonic() < deadline, output.read_text()
            time.sleep(POLL_S)
        socket.create_connection((HOST, port), timeout=STEP_TIMEOUT_S).close()
        broker.send_signal(signal.SIGINT)
        assert broker.wait(BROKER_DOWN_S) == 0, output.read_text()
    finally:
        _stop(broker)
    assert (installed.cwd / ".deltalog" / "kafka" / "broker.log").is_file()  # --dir's default


def _build_wheel(work: Path) -> Path:
    """The wheel of a copy of the checkout: built in place, setuptools would leave build/
    behind and pack whatever stale files an earlier build left in it."""
    source, dist = work / "source", work / "dist"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__"))
    _check([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", *_offline_build(),
            "--wheel-dir", str(dist), str(source)], BUILD_TIMEOUT_S)
    [wheel] = dist.glob("*.whl")
    return wheel


def _offline_build() -> list[str]:
    """``--no-build-isolation`` when this environment has the build backend pyproject.toml
    asks for (no download); else pip fetches it into an isolated build environment."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for text in pyproject["build-system"]["requires"]:
        requirement = Requirement(text)
        try:
            if version(requirement.name) not in requirement.specifier:
                return []
        except PackageNotFoundError:
            return []
    return ["--no-build-isolation"]


def _without_python_path() -> dict[str, str]:
    """This process's environment without ``PYTHONPATH``: a Spark session started earlier
    in it puts the checkout there (``workers.executors.spark.session``), and pip then finds
    the checkout's ``deltalog.egg-info`` and installs nothing ("already satisfied": CI,
    2026-11-24, with the Spark tests on the same xdist worker first)."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def _check(command: list[str], timeout_s: float = STEP_TIMEOUT_S) -> str:
    done = subprocess.run(command, text=True, capture_output=True, timeout=timeout_s,
                          env=_without_python_path(), check=False)
    assert done.returncode == 0, f"{command}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _stop(broker: subprocess.Popen[bytes]) -> None:
    """SIGINT (its JVM stops with it), then SIGKILL if it does not exit in time."""
    if broker.poll() is None:
        broker.send_signal(signal.SIGINT)
        try:
            broker.wait(BROKER_DOWN_S)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
