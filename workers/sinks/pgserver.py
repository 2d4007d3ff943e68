"""A throwaway PostgreSQL server for the tests and benchmarks of the sink: Debian's server
binaries (``/usr/lib/postgresql/<version>/bin``; ``deploy/install-postgresql.sh`` installs
them), a cluster made by ``initdb`` in a new temporary directory, listening on a free
loopback port only (no Unix socket), trust authentication, stopped and deleted at the end.
Not a system service: nothing is left running or registered.

``initdb`` refuses to run as root (a server must not own the machine), so as root every
server command runs as the unprivileged ``postgres`` user the Debian package makes (``nobody``
where there is none) through ``runuser -u USER --``, in a directory that user owns under the
system's temporary directory (a test's own ``tmp_path`` sits in a directory only root may
enter).  As any other user they run as that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from workers.errors import ErrorCode, WorkersError
from workers.kafka.broker import free_port

SUPERUSER = "deltalog"  # the cluster's superuser (initdb -U), trust authentication
START_TIMEOUT_S = 60  # pg_ctl -w waits this long for the server to accept connections
COMMAND_TIMEOUT_S = 120.0
INSTALL_HINT = ("PostgreSQL's server binaries (initdb, pg_ctl) are not installed: run "
                "deploy/install-postgresql.sh (make test does), or apt-get install postgresql")


class PostgresMissing(WorkersError):
    code = ErrorCode.CONFIG


def server_bin_dir() -> Path:
    """The newest installed ``/usr/lib/postgresql/*/bin`` with ``initdb`` (or the one on
    ``PATH``); raises :class:`PostgresMissing` when there is none."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda path: int(Path(path).parent.parent.name)
                   if Path(path).parent.parent.name.isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path is None or shutil.which("pg_ctl") is None:
        raise PostgresMissing(INSTALL_HINT)
    return Path(on_path).parent


class LocalPostgres:
    """One PostgreSQL server: :meth:`start`, :meth:`dsn`, :meth:`create_database`,
    :meth:`stop` (``with`` does both).  ``durable=False`` turns off ``fsync`` and
    synchronous commits (tests: the machine is shared, and the server is not what they
    crash); a benchmark keeps them on."""

    def __init__(self, durable: bool = True) -> None:
        self.bin = server_bin_dir()
        self.durable = durable
        self.port = 0
        self.data_dir: Path | None = None
        self._as: list[str] = []

    def start(self) -> None:
        self.port = free_port()
        self.data_dir = Path(tempfile.mkdtemp(prefix="deltalog-pg-"))
        if os.geteuid() == 0:
            user = _unprivileged_user()
            entry = pwd.getpwnam(user)
            os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
            self._as = ["runuser", "-u", user, "--"]
        cluster = self.data_dir / "cluster"
        self._run("initdb", "-D", str(cluster), "-U", SUPERUSER, "--auth=trust",
                  "--encoding=UTF8", "--no-locale", "--no-sync")
        settings = [f"-p {self.port}", "-c listen_addresses=127.0.0.1",
                    "-c unix_socket_directories=''", "-c shared_buffers=64MB",
                    "-c max_connections=40"]
        if not self.durable:
            settings += ["-c fsync=off", "-c synchronous_commit=off",
                         "-c full_page_writes=off"]
        self._run("pg_ctl", "-D", str(cluster), "-l", str(self.data_dir / "server.log"),
                  "-w", "-t", str(START_TIMEOUT_S), "-o", " ".join(settings), "start")

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={dbname}"

    def create_database(self, name: str) -> str:
        """A new database ``name`` (a test's own); its DSN."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def log_tail(self, lines: int = 40) -> str:
        if self.data_dir is None:
            return ""
        log = self.data_dir / "server.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) \
            if log.exists() else ""

    def stop(self) -> None:
        if self.data_dir is None:
            return
        try:
            self._run("pg_ctl", "-D", str(self.data_dir / "cluster"), "-m", "fast", "-w",
                      "stop")
        finally:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def _run(self, program: str, *args: str) -> None:
        command = [*self._as, str(self.bin / program), *args]
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise WorkersError(f"{program} failed ({done.returncode}): {done.stderr.strip()}"
                               f"\n{self.log_tail()}", code=ErrorCode.CONFIG)

    def __enter__(self) -> LocalPostgres:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _unprivileged_user() -> str:
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
            return user
        except KeyError:
            continue
    raise PostgresMissing("running as root, and no postgres or nobody user to run the "
                          "PostgreSQL server as (initdb refuses root)")
