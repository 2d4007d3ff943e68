"""A worker's names in Kafka, and a worker run as a child process.

The names live beside the launcher because whoever starts, kills and restarts workers from
outside (the integration tests, the benchmarks) must call a worker what it calls itself: a
test fences a worker by producing under its transactional id, the fleet benchmark finds its
partitions by its client id in the group and its progress records by their writer.  One
definition of each serves the worker and them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar, Self

from workers.config import WorkerConfig
from workers.kafka.watchdog import HUNG_EXIT_CODE

CLIENT_PREFIX = "deltalog-"
STOP_TIMEOUT_S = 30.0  # a clean shutdown (SIGTERM) gets this long before SIGKILL


def transactional_id(worker_id: str) -> str:
    """One transactional id per worker: a restart of the same worker fences its old self.
    Its progress records name it as their writer."""
    return f"deltalog-worker-{worker_id}"


def client_id(worker_id: str) -> str:
    """The worker's client id in the workers' consumer group (``deltalog status`` shows it)."""
    return f"{CLIENT_PREFIX}{worker_id}"


def transactional_id_of_client(client: str) -> str | None:
    """The transactional id of the worker a group member's client id names (None: not a
    worker's)."""
    return transactional_id(client.removeprefix(CLIENT_PREFIX)) if client.startswith(
        CLIENT_PREFIX) else None


def cpu_s(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used, all its threads (Linux ``/proc``):
    what it cost, whatever else the machine runs."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()  # after the command's name
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class WorkerProcess:
    """``python -m workers worker`` as a child process: start (again after a kill), kill -9,
    pause and resume (SIGSTOP/SIGCONT), stop (SIGTERM, SIGKILL if it takes too long); ``with``
    stops it at the end.  ``flags`` become the worker's flags (``tick_max_tx=5``:
    ``--tick-max-tx 5``; None: left out); with ``profile`` it runs under cProfile, which
    writes its statistics there when the worker stops cleanly (a benchmark's profile of
    the process as deployed).  Those started and not stopped yet are in ``running``, so a
    test harness can stop what a failed test left behind."""

    running: ClassVar[set[WorkerProcess]] = set()

    def __init__(self, config: WorkerConfig, snapshot_dir: Path, log: Path,
                 worker_id: str = "w1", env: dict[str, str] | None = None,
                 profile: Path | None = None, **flags: Any) -> None:
        self.config, self.snapshot_dir, self.log, self.flags = config, snapshot_dir, log, flags
        self.worker_id, self.env, self.profile = worker_id, env or {}, profile
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def transactional_id(self) -> str:
        return transactional_id(self.worker_id)

    @property
    def client_id(self) -> str:
        return client_id(self.worker_id)

    def start(self) -> None:
        """Start the worker, its output appended to ``log``."""
        profiler = [] if self.profile is None else ["-m", "cProfile", "-o", str(self.profile)]
        args = [sys.executable, *profiler, "-m", "workers", "worker", "--bootstrap-servers",
                self.config.bootstrap_servers, "--worker-id", self.worker_id,
                "--snapshot-dir", str(self.snapshot_dir), "-v"]
        for flag, value in self.flags.items():
            if value is not None:
                args += [f"--{flag.replace('_', '-')}", str(value)]
        env = {**os.environ, "DELTALOG_TOPIC_PREFIX": self.config.topic_prefix, **self.env}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        WorkerProcess.running.add(self)

    def kill(self) -> None:
        """SIGKILL, then reap."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def pause(self) -> None:
        """SIGSTOP: the process hangs (no heartbeat, no progress) until :meth:`resume`."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (a clean shutdown), SIGKILL if it takes longer than ``timeout_s``."""
        WorkerProcess.running.discard(self)
        if not self.alive():
            return
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def cpu_s(self) -> float:
        """User + system CPU seconds the running worker has used (:func:`cpu_s`)."""
        assert self.process is not None
        return cpu_s(self.process.pid)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def restart_if_asked(self) -> bool:
        """What a supervisor's ``restart: on-failure`` does for the exit that asks for it
        (the watchdog's, after a librdkafka call hung): start the worker again.  True when
        it did; any other exit is left for the caller to see."""
        if self.process is None or self.process.poll() != HUNG_EXIT_CODE:
            return False
        self.start()
        return True

    def tail(self, lines: int = 20) -> str:
        """The end of its log (for a failure message)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
