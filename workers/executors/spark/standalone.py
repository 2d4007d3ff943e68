"""A Spark standalone cluster on 127.0.0.1: a master and N workers run from the pip PySpark's
own launcher (``bin/spark-class``) — no Docker, no separate Spark download.

It is what ``executor=spark`` with ``spark_master="spark://..."`` meets in a deployment,
started on one machine for the tests and benchmarks (as ``kafka/broker.py`` is for Kafka).
Nothing here imports PySpark: it only needs the package's directory (``SPARK_HOME``).

Start protocol (:meth:`StandaloneCluster.start`):

1. Write ``spark-defaults.conf`` under ``root``: the master's REST submission server off
   (it would take the fixed port 6066, which a second cluster on the machine cannot).
2. Launch the master on free ports (``--port 0 --webui-port 0``) and read its URL and web UI
   port from its log (Spark prints them once bound).
3. Launch the workers, each with its own work directory and one ``cores``/``memory`` share.
4. Wait until the master's JSON endpoint (``/json/``) lists every worker ALIVE.

Every daemon runs in a process group of its own, which also holds the executor JVMs a
worker starts: :meth:`kill_worker` kills a worker's group (``kill -9``: a machine lost) and
:meth:`stop` kills every group and waits until none of their processes is left.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from workers.errors import ErrorCode, WorkersError

HOST = "127.0.0.1"
# What a driver on this machine adds to its environment to reach the cluster over loopback
# only (Spark otherwise hands the executors a non-loopback address of the driver to call).
DRIVER_ENV: Mapping[str, str] = {"SPARK_LOCAL_IP": HOST}
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# A master or worker daemon holds little: Spark's default daemon heap is 1 GiB.
DAEMON_MEMORY = "256m"
# A cold daemon JVM binds its ports in 2-5 s and the workers register within ~8 s; on a
# shared 2-core machine under load that took over a minute.
START_TIMEOUT_S = 300.0
# After SIGKILL the kernel removes the processes at once; this only bounds the wait.
KILL_WAIT_S = 10.0
POLL_INTERVAL_S = 0.2
# The master's JSON endpoint answers in milliseconds; a frozen master must not hang us.
HTTP_TIMEOUT_S = 5.0
LOG_TAIL_LINES = 25
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_MASTER_UI_PORT = re.compile(r"Successfully started service 'MasterUI' on port (\d+)")


class SparkClusterError(WorkersError):
    """The standalone cluster did not start, or left a process behind when stopped."""

    code = ErrorCode.SPARK


@dataclass
class _Daemon:
    """One master or worker JVM (the leader of its process group) and its log."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    killed: bool = False  # by kill_worker, on purpose

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"last lines of {self.log}:\n" + "\n".join(text.splitlines()[-LOG_TAIL_LINES:])


class StandaloneCluster:
    """A master and ``workers`` workers (``cores`` and ``memory`` each) with logs, work
    directories and configuration under ``root``; ``with`` starts and stops it."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1,
                 memory: str = "1g") -> None:
        self.root, self.worker_count, self.cores, self.memory = root, workers, cores, memory
        self.master_url = ""
        self._ui_port = 0
        self._master: _Daemon | None = None
        self._workers: list[_Daemon] = []

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the master and the workers; return once all workers are registered (steps
        in the module docstring).  On failure everything started is stopped again."""
        deadline = time.monotonic() + timeout_s
        atexit.register(self.stop)  # never leave a JVM behind if the caller forgets stop()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # Step 1: the configuration.
            defaults = self.root / "spark-defaults.conf"
            defaults.write_text("spark.master.rest.enabled false\n")
            # Step 2: the master, and where it listens.
            self._master = self._launch("master", MASTER_CLASS, "--host", HOST, "--port", "0",
                                        "--webui-port", "0", "--properties-file", str(defaults))
            self.master_url = self._await_log(self._master, _MASTER_URL, deadline)
            self._ui_port = int(self._await_log(self._master, _MASTER_UI_PORT, deadline))
            # Step 3: the workers.
            for index in range(self.worker_count):
                work_dir = self.root / f"worker-{index}"
                work_dir.mkdir(exist_ok=True)
                self._workers.append(self._launch(
                    f"worker-{index}", WORKER_CLASS, self.master_url, "--host", HOST,
                    "--port", "0", "--webui-port", "0", "--cores", str(self.cores),
                    "--memory", self.memory, "--work-dir", str(work_dir),
                    "--properties-file", str(defaults)))
            # Step 4: every worker registered.
            self.wait_alive_workers(self.worker_count, deadline - time.monotonic())
        except BaseException:
            self.stop()
            raise

    def status(self) -> dict[str, Any]:
        """The master's view now (its ``/json/`` endpoint): ``aliveworkers``, ``coresused``
        (by the applications' executors), ``activeapps``, ..."""
        url = f"http://{HOST}:{self._ui_port}/json/"
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as answer:
            return dict(json.load(answer))

    def alive_workers(self) -> int:
        """Workers the master counts ALIVE now."""
        return int(self.status()["aliveworkers"])

    def wait_alive_workers(self, count: int, timeout_s: float = START_TIMEOUT_S) -> None:
        """Wait until the master counts exactly ``count`` workers ALIVE (after a start, or
        after :meth:`kill_worker` until the master has noticed the loss)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self._check_running()
            with contextlib.suppress(OSError):
                if self.alive_workers() == count:
                    return
            if time.monotonic() > deadline:
                raise SparkClusterError(f"the Spark master at {self.master_url} did not count "
                                        f"{count} alive workers within {timeout_s:.0f} s; "
                                        + self._logs())
            time.sleep(POLL_INTERVAL_S)

    def kill_worker(self, index: int) -> None:
        """``kill -9`` worker ``index`` and the executors it started (a machine lost)."""
        daemon = self._workers[index]
        daemon.killed = True
        _signal_group(daemon.process.pid, signal.SIGKILL)
        daemon.process.wait(KILL_WAIT_S)

    def stop(self) -> None:
        """``kill -9`` every group (nothing of a test cluster needs a clean shutdown) and
        wait until none of their processes is left; raise if one survives.  Safe to call
        twice."""
        atexit.unregister(self.stop)
        daemons = self._daemons()
        self._workers, self._master = [], None
        for daemon in daemons:
            _signal_group(daemon.process.pid, signal.SIGKILL)
            daemon.process.wait(KILL_WAIT_S)
        deadline = time.monotonic() + KILL_WAIT_S
        while left := [pid for d in daemons for pid in _group_members(d.process.pid)]:
            if time.monotonic() > deadline:
                raise SparkClusterError(f"processes of the Spark cluster survived SIGKILL: {left}")
            time.sleep(POLL_INTERVAL_S)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _launch(self, name: str, main_class: str, *args: str) -> _Daemon:
        log = self.root / f"{name}.log"
        with log.open("ab") as out:
            # A session (and process group) of its own: kill_worker and stop reach the
            # executor JVMs a worker starts, and a terminal's Ctrl-C reaches only Python.
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main_class, *args],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=self._environment(), start_new_session=True)
        return _Daemon(name, process, log)

    def _environment(self) -> dict[str, str]:
        """The daemons' environment, which their executors inherit: loopback only (FACTS.md),
        a small daemon heap, and Python workers that run this interpreter and import this
        checkout of ``workers`` (not whatever another install puts first)."""
        checkout = str(Path(__file__).resolve().parents[3])
        python_path = os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))
        return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": HOST,
                "SPARK_DAEMON_MEMORY": DAEMON_MEMORY, "PYSPARK_PYTHON": sys.executable,
                "PYTHONPATH": python_path}

    def _await_log(self, daemon: _Daemon, pattern: re.Pattern[str], deadline: float) -> str:
        """The first group of ``pattern`` once the daemon's log has a line matching it."""
        while True:
            if not daemon.alive():
                raise SparkClusterError(f"the Spark {daemon.name} exited with code "
                                        f"{daemon.process.returncode}; {daemon.tail()}")
            match = pattern.search(daemon.log.read_text(errors="replace"))
            if match is not None:
                return match.group(1)
            if time.monotonic() > deadline:
                raise SparkClusterError(f"the Spark {daemon.name} did not start in time; "
                                        + daemon.tail())
            time.sleep(POLL_INTERVAL_S)

    def _check_running(self) -> None:
        """Raise if a daemon exited that was not killed on purpose."""
        for daemon in self._daemons():
            if not daemon.killed and not daemon.alive():
                raise SparkClusterError(f"the Spark {daemon.name} exited with code "
                                        f"{daemon.process.returncode}; {daemon.tail()}")

    def _daemons(self) -> list[_Daemon]:
        return [*([self._master] if self._master else []), *self._workers]

    def _logs(self) -> str:
        return "\n".join(daemon.tail() for daemon in self._daemons())


def spark_home() -> Path:
    """The pip PySpark's directory: a Spark distribution with ``bin/`` and ``jars/``."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkClusterError("a Spark cluster runs from PySpark, which this Python "
                                "environment lacks: reinstall deltalog with its dependencies")
    return Path(spec.origin).parent


def _signal_group(leader: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader, signum)


def _group_members(group: int) -> list[int]:
    """Live (not zombie) processes of process group ``group`` (Linux ``/proc``)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # "pid (comm) state ppid pgrp ...", and comm may hold spaces
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":
                members.append(int(stat.parent.name))
    return members
