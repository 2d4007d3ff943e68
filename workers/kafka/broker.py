"""A single-node Apache Kafka broker (KRaft, 127.0.0.1) run from the official jars — no Docker.

The jars come from Maven Central through ``pom.xml`` beside this module (the one place the
Kafka version is pinned) and are cached in ``~/.cache/deltalog/kafka-<version>/lib``;
``DELTALOG_KAFKA_HOME`` overrides that directory. Java 17+ runs the broker; Maven is needed
once, for the first fetch.

Start protocol (:meth:`LocalBroker.start`):

1. Ensure the jars: reuse the cache when its marker matches the pom, else fetch with Maven.
2. Write ``server.properties``: one process that is both broker and controller (node 1), a
   static one-voter quorum, both listeners on loopback; with ``sasl_users`` the client
   listener is SASL_PLAINTEXT with the PLAIN mechanism (the controller's stays PLAINTEXT).
3. Format the log directory with a fresh cluster id — only if it is not formatted yet, so a
   restart on the same ``data_dir`` keeps its topics and records.
4. Launch ``java kafka.Kafka server.properties``, stdout and stderr to ``<data_dir>/broker.log``.
5. Wait until the broker answers a metadata request; if it exits or the wait times out, kill
   it and raise :class:`BrokerError` quoting the first errors and the last lines of its log.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import fcntl
import functools
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from workers.errors import ErrorCode, WorkersError

# Package data beside this module, so an installed deltalog finds them too; paths rather than
# importlib.resources because Maven and the JVM are given them as files.
POM_PATH = Path(__file__).with_name("pom.xml")
LOG4J_CONFIG_PATH = Path(__file__).with_name("log4j2.properties")
HOME_ENV = "DELTALOG_KAFKA_HOME"
FETCHED_MARKER = ".fetched"  # holds the pom's sha256; written only after a complete fetch
HOST = "127.0.0.1"
DEFAULT_PORT = 9092

# A cold fetch is ~45 MB from Maven Central (about 5–10 s here); generous for slow CI networks.
FETCH_TIMEOUT_S = 600.0
# Formatting is one short JVM run (about 1–2 s); the margin covers a loaded CI machine.
FORMAT_TIMEOUT_S = 120.0
# A warm start takes a few seconds; a cold JVM on a busy 2-core CI machine can take 20+ s.
START_TIMEOUT_S = 60.0
# Controlled shutdown of a one-node cluster takes about 1 s; past this we SIGKILL.
STOP_TIMEOUT_S = 30.0
# After SIGKILL the kernel reaps the JVM at once; this only bounds a pathological wait.
KILL_WAIT_S = 10.0
# Pause between readiness probes, and the longest one metadata request may take.
READY_POLL_INTERVAL_S = 0.2
METADATA_TIMEOUT_S = 2.0
# All JVM threads stop within microseconds of SIGSTOP; these only bound the wait for it.
PAUSE_WAIT_S = 5.0
PAUSE_POLL_INTERVAL_S = 0.001
# How often `deltalog broker` checks that the broker it runs is still alive.
LIVENESS_POLL_INTERVAL_S = 1.0
# How much of broker.log a BrokerError quotes: the first errors (the cause) and the last lines.
LOG_ERROR_LINES = 10
LOG_TAIL_LINES = 25
_ERROR_LINE = re.compile(r"\] (ERROR|FATAL) |^(Caused by: )?[\w.$]+(Exception|Error)\b")
# A test broker holds little data; Kafka's own default heap is 1 GiB.  Its code compiled by
# C1 alone (no C2): C2's compiler threads took half of a fresh broker's CPU for its first
# ~90 s under load (0.52 of 0.98 cores at 3% of the pipeline's throughput), and the broker
# started in ~3 s, not ~5.5, with half the CPU; once C2 was done, the broker's CPU at half
# load was the same either way (docs/benchmarks.md, "The local broker compiled by C1").
JVM_OPTIONS = ("-Xms128m", "-Xmx512m", "-Djava.awt.headless=true", "-XX:TieredStopAtLevel=1")
# Kafka's minimum segment size: small segments keep test topics and restarts cheap.
LOG_SEGMENT_BYTES = 1024 * 1024
# The SASL listener's name and the broker's own account on it: a broker sends transaction
# markers to itself through its inter-broker listener, so it must log in like a client.
SASL_LISTENER = "SASL_PLAINTEXT"
BROKER_USER = "deltalog-broker"
# Credentials go into a JAAS string in server.properties unescaped: keep them to safe text.
_CREDENTIAL = re.compile(r"[\w.@+-]+")

INSTALL_JAVA = (
    "Java 17 or newer is needed to run the local Kafka broker, but no `java` was found "
    "(checked $JAVA_HOME/bin and PATH). Install it, e.g. `apt-get install "
    "openjdk-17-jre-headless` (Debian/Ubuntu) or `brew install openjdk@17` (macOS)."
)
INSTALL_MAVEN = (
    "Maven (`mvn`) is needed once to fetch the Apache Kafka jars from Maven Central, but it is "
    "not on PATH. Install it, e.g. `apt-get install maven` or `brew install maven`; or set "
    f"{HOME_ENV} to a directory whose lib/ already holds the jars and a {FETCHED_MARKER} marker."
)


class BrokerError(WorkersError):
    """The local Kafka broker could not be fetched, started or stopped."""

    code = ErrorCode.BROKER


# --- Jars -------------------------------------------------------------------------------------


@functools.cache
def kafka_version() -> str:
    """The Kafka version pinned in ``pom.xml`` (``<kafka.version>``)."""
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(POM_PATH).getroot().find("m:properties/m:kafka.version", namespace)
    if node is None or not node.text:
        raise BrokerError(f"{POM_PATH} does not pin <kafka.version>")
    return node.text.strip()


def kafka_home() -> Path:
    """The cache directory for this Kafka version (``$DELTALOG_KAFKA_HOME`` wins)."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "deltalog" / f"kafka-{kafka_version()}"


def ensure_kafka_jars() -> Path:
    """Return the directory of the broker's jars, fetching them with Maven the first time.

    The cache is valid when its marker holds the sha256 of the current pom, so editing the
    pom (a new Kafka version) fetches again. A file lock makes concurrent callers fetch once.
    """
    home = kafka_home()
    lib, marker, digest = home / "lib", home / FETCHED_MARKER, _pom_digest()
    if _read_text(marker) == digest:
        return lib
    home.mkdir(parents=True, exist_ok=True)
    with _file_lock(home / ".lock"):
        if _read_text(marker) != digest:  # another process may have fetched while we waited
            _fetch_jars(lib)
            marker.write_text(digest)
    return lib


def _fetch_jars(lib: Path) -> None:
    """Copy the pom's dependencies (the Kafka server and log4j2) into ``lib``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerError(INSTALL_MAVEN)
    shutil.rmtree(lib, ignore_errors=True)
    command = [
        mvn, "-q", "-B", "-f", str(POM_PATH), "dependency:copy-dependencies",
        f"-DoutputDirectory={lib}", "-Dmdep.useRepositoryLayout=false",
    ]
    result = _run(command, FETCH_TIMEOUT_S, what="fetching the Kafka jars with Maven")
    if result.returncode != 0:
        raise BrokerError(
            f"Maven could not fetch Kafka {kafka_version()} from Maven Central "
            f"(exit {result.returncode}):\n{_tail(result.stdout)}"
        )


def _pom_digest() -> str:
    return hashlib.sha256(POM_PATH.read_bytes()).hexdigest()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- Broker -----------------------------------------------------------------------------------


BIND_ATTEMPTS = 3  # starts with newly chosen ports when one was taken meanwhile


class LocalBroker:
    """One Kafka process that is both broker and controller, listening on 127.0.0.1.

    ``port`` and ``controller_port`` of 0 pick free ports on the first start; later starts of
    the same object reuse them, so clients can reconnect to a restarted broker. Without a
    ``data_dir`` the broker uses a temporary directory that :meth:`stop` removes; an explicit
    ``data_dir`` is kept, and starting on it again keeps its topics and records.
    ``sasl_users`` (name → password) makes the client listener SASL_PLAINTEXT with PLAIN, so
    clients must log in as one of them (``security.protocol=SASL_PLAINTEXT``,
    ``sasl.mechanism=PLAIN``, ``sasl.username``, ``sasl.password``).
    """

    def __init__(self, data_dir: Path | None = None, port: int = 0,
                 controller_port: int = 0, sasl_users: Mapping[str, str] | None = None) -> None:
        self._owns_data_dir = data_dir is None
        self.data_dir: Path | None = Path(data_dir) if data_dir is not None else None
        self.port = port
        self.controller_port = controller_port
        self._process: subprocess.Popen[bytes] | None = None
        self._log_offset = 0  # where this run's output starts in broker.log
        self._accounts = None if sasl_users is None else _accounts(sasl_users)

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>``, for ``bootstrap.servers``."""
        if not self.port:
            raise BrokerError("the broker has no port yet; call start() first")
        return f"{HOST}:{self.port}"

    @property
    def running(self) -> bool:
        """True while the broker process is alive (paused counts as alive)."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The JVM's process id while it runs."""
        return self._process.pid if self.running and self._process else None

    @property
    def log_path(self) -> Path:
        """``<data_dir>/broker.log``: the broker's stdout and stderr, appended run after run."""
        return self._require_data_dir() / "broker.log"

    @property
    def log_dir(self) -> Path:
        """Kafka's ``log.dirs``: partitions and the KRaft metadata log."""
        return self._require_data_dir() / "kraft-combined-logs"

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the broker and return once it answers (steps in the module docstring).

        ``timeout_s`` bounds step 5 only; the first jar fetch may take longer.
        """
        if self.running:
            raise BrokerError(f"the broker at {self.bootstrap_servers} is already running")
        java = _find_java()
        # Step 1: the jars.
        lib = ensure_kafka_jars()
        self._prepare_data_dir()
        for attempt in range(1, BIND_ATTEMPTS + 1):
            # Step 2: the configuration.
            chosen_here = not self.port and not self.controller_port
            self.port = self.port or free_port()
            self.controller_port = self.controller_port or free_port()
            config = self._write_config()
            # Step 3: format storage once.
            formatted_here = not (self.log_dir / "meta.properties").exists()
            if formatted_here:
                _format_storage(java, lib, config)
            # Step 4: launch.
            self._launch(java, lib, config)
            # Step 5: wait until it answers.
            try:
                self._wait_until_ready(timeout_s)
                return
            except BrokerError:
                self._kill()
                if not (chosen_here and formatted_here and attempt < BIND_ATTEMPTS
                        and "Address already in use" in self._run_output()):
                    raise
            except BaseException:
                self._kill()
                raise
            # A port free when chosen was taken before the JVM bound it (say, as the local
            # port of another process's connection: both come from the ephemeral range):
            # new ports, and the storage formatted for them.
            shutil.rmtree(self.log_dir)
            self.port = self.controller_port = 0

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop the broker: SIGTERM (a clean shutdown), then SIGKILL after ``timeout_s``.

        Removes the data directory if the broker created it. Safe to call twice.
        """
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            process.send_signal(signal.SIGCONT)  # a paused JVM handles SIGTERM only once resumed
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(KILL_WAIT_S)
        atexit.unregister(self.stop)
        if self._owns_data_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): clients see it hang, as in a long GC pause.

        Returns once every JVM thread has stopped: a thread busy on another core can go on
        for a moment after the signal, long enough to answer one more request.
        """
        self._signal(signal.SIGSTOP)
        assert self._process is not None
        _wait_until_stopped(self._process.pid)

    def resume(self) -> None:
        """Continue a paused broker (SIGCONT)."""
        self._signal(signal.SIGCONT)

    def log_tail(self) -> str:
        """The last lines the current (or last) run wrote to broker.log."""
        return _tail(self._run_output())

    def __enter__(self) -> LocalBroker:
        if not self.running:
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"LocalBroker(port={self.port}, data_dir={self.data_dir}, {state})"

    # -- helpers for start/stop --

    def _require_data_dir(self) -> Path:
        if self.data_dir is None:
            raise BrokerError("the broker has no data directory yet; call start() first")
        return self.data_dir

    def _prepare_data_dir(self) -> None:
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="deltalog-kafka-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def _write_config(self) -> Path:
        path = self._require_data_dir() / "server.properties"
        properties = server_properties(self.port, self.controller_port, self.log_dir,
                                       self._accounts)
        path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        return path

    def _launch(self, java: str, lib: Path, config: Path) -> None:
        command = [*_java_command(java, lib), "kafka.Kafka", str(config)]
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            # A session of its own: a terminal's Ctrl-C reaches Python, which stops the broker
            # cleanly, instead of killing the JVM behind its back.
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        atexit.register(self.stop, 0)  # never leave a JVM behind if the caller forgets stop()

    def _wait_until_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                raise BrokerError(self._exit_message(code))
            if _answers(self._probe_config()):
                return
            time.sleep(READY_POLL_INTERVAL_S)
        raise BrokerError(f"the Kafka broker did not answer on {self.bootstrap_servers} "
                          f"within {timeout_s:.0f} s; {self._log_report()}")

    def _probe_config(self) -> dict[str, Any]:
        """A client config for the readiness probe: on SASL, the broker's own account."""
        config = {"bootstrap.servers": self.bootstrap_servers}
        if self._accounts is None:
            return config
        return {**config, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": BROKER_USER, "sasl.password": self._accounts[BROKER_USER]}

    def _exit_message(self, code: int) -> str:
        hint = ""
        if "UnsupportedClassVersionError" in self._run_output():
            hint = " (Kafka 4 needs Java 17+)"
        return (f"the Kafka broker exited with code {code} during start-up{hint}; "
                f"{self._log_report()}")

    def _log_report(self) -> str:
        output = self._run_output()
        return (f"first errors:\n{_first_errors(output)}\n"
                f"last lines of {self.log_path}:\n{_tail(output)}")

    def _run_output(self) -> str:
        with self.log_path.open("rb") as log:
            log.seek(self._log_offset)
            return log.read().decode("utf-8", errors="replace")

    def _kill(self) -> None:
        """SIGKILL after a failed start; the data directory stays for a look at broker.log."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(KILL_WAIT_S)
        atexit.unregister(self.stop)

    def _signal(self, signum: signal.Signals) -> None:
        if not self.running or self._process is None:
            raise BrokerError("the broker is not running")
        self._process.send_signal(signum)


def server_properties(port: int, controller_port: int, log_dir: Path,
                      sasl_accounts: Mapping[str, str] | None = None) -> dict[str, str]:
    """The broker's ``server.properties``: KRaft combined mode, one node, all on loopback.

    The quorum is static (``controller.quorum.voters``) rather than 4.x's dynamic one
    (``controller.quorum.bootstrap.servers`` + ``format --standalone``): a static voter is not
    recorded with its address in the metadata log, so a restart may use another port.
    With ``sasl_accounts`` the client listener becomes SASL (:func:`_sasl_properties`).
    """
    plain = _plain_properties(port, controller_port, log_dir)
    if sasl_accounts is None:
        return plain
    return {**plain, **_sasl_properties(port, controller_port, sasl_accounts)}


def _sasl_properties(port: int, controller_port: int,
                     accounts: Mapping[str, str]) -> dict[str, str]:
    """SASL_PLAINTEXT/PLAIN on the client (and inter-broker) listener: ``accounts`` may log in,
    the broker itself as :data:`BROKER_USER`; the controller listener stays PLAINTEXT."""
    users = " ".join(f'user_{name}="{password}"' for name, password in accounts.items())
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{BROKER_USER}" password="{accounts[BROKER_USER]}" {users};')
    return {
        "listeners": f"{SASL_LISTENER}://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"{SASL_LISTENER}://{HOST}:{port}",
        "listener.security.protocol.map":
            f"{SASL_LISTENER}:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": SASL_LISTENER,
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        f"listener.name.{SASL_LISTENER.lower()}.plain.sasl.jaas.config": jaas,
    }


def _accounts(users: Mapping[str, str]) -> dict[str, str]:
    """``users`` plus the broker's own account (a fresh password each broker object)."""
    for name, password in users.items():
        if not (_CREDENTIAL.fullmatch(name) and _CREDENTIAL.fullmatch(password)):
            raise BrokerError(f"SASL user {name!r}: names and passwords may hold letters, "
                              "digits and '.', '_', '@', '+', '-' only")
    return {**users, BROKER_USER: secrets.token_hex(16)}


def _plain_properties(port: int, controller_port: int, log_dir: Path) -> dict[str, str]:
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "auto.create.topics.enable": "false",
        # Internal topics: one replica (one node) and one partition (Kafka's default 50
        # partitions take seconds to create on the first group join or transaction).
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        # The first consumer of a group gets its partitions at once, not after 3 s.
        "group.initial.rebalance.delay.ms": "0",
        # One node is its own controller: a long pause (a frozen JVM) must not make it fence
        # itself and leave its partitions without a leader.
        "broker.session.timeout.ms": "60000",
        # A worker killed mid-transaction leaves it open until the coordinator aborts it,
        # and whoever takes over waits for that (see docs/fleet.md): look every second
        # for timed-out transactions, not every 10 s.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        # Workers lose a dead member's partitions after their session timeout (3 s by
        # default, docs/fleet.md): allow sessions that short in both group protocols (the
        # classic minimum is 6 s, the consumer protocol's 45 s).
        "group.min.session.timeout.ms": "1000",
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.min.heartbeat.interval.ms": "250",
        "log.segment.bytes": str(LOG_SEGMENT_BYTES),
        # The log cleaner's key map, filled anew at each cleaning: Kafka's 128 MiB (a quarter
        # of this heap) made each cleaning of the small compacted segments (views, progress,
        # the group's offsets, every ~second under load) fill 128 MiB — 10% of the broker's
        # CPU samples at half load (JFR). 16 MiB holds ~700,000 keys a pass
        # (docs/benchmarks.md, "The local broker's cleaner").
        "log.cleaner.dedupe.buffer.size": str(16 << 20),
        # Apply retention within a second, not Kafka's 5 minutes: a test that sets a tiny
        # retention on a topic sees its old segments really deleted in seconds.
        "log.retention.check.interval.ms": "1000",
    }


def _format_storage(java: str, lib: Path, config: Path) -> None:
    """Format ``log.dirs`` for a new cluster (``kafka-storage.sh format``)."""
    command = [*_java_command(java, lib), "kafka.tools.StorageTool", "format",
               "-t", _new_cluster_id(), "-c", str(config)]
    result = _run(command, FORMAT_TIMEOUT_S, what="formatting the Kafka storage")
    if result.returncode != 0:
        raise BrokerError(f"formatting the Kafka storage failed (exit {result.returncode}):\n"
                          f"{_tail(result.stdout)}")


def _java_command(java: str, lib: Path) -> list[str]:
    # `lib/*` is expanded by java itself, not by a shell.
    return [java, *JVM_OPTIONS, f"-Dlog4j2.configurationFile={LOG4J_CONFIG_PATH}",
            "-cp", str(lib / "*")]


def _new_cluster_id() -> str:
    """A random Kafka ``Uuid`` in its text form: 16 bytes, URL-safe base64, no padding."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):  # Kafka refuses ids that look like a command-line flag
            return text


def _find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise BrokerError(INSTALL_JAVA)
    return java


def _answers(config: dict[str, Any]) -> bool:
    """True when the broker's listener accepts and a metadata request lists a broker."""
    host, port = config["bootstrap.servers"].rsplit(":", 1)
    try:  # a plain TCP probe first, so librdkafka does not log refused connections
        socket.create_connection((host, int(port)), timeout=METADATA_TIMEOUT_S).close()
    except OSError:
        return False
    try:
        with AdminClient(config) as admin:
            return bool(admin.list_topics(timeout=METADATA_TIMEOUT_S).brokers)
    except KafkaException:
        return False


def _wait_until_stopped(pid: int) -> None:
    """Block until all threads of ``pid`` are stopped (Linux ``/proc``; elsewhere, no wait)."""
    tasks = Path(f"/proc/{pid}/task")
    deadline = time.monotonic() + PAUSE_WAIT_S
    while tasks.is_dir() and time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # a thread may exit between listing and reading
            if all(_thread_state(task) in "tT" for task in tasks.iterdir()):
                return
        time.sleep(PAUSE_POLL_INTERVAL_S)


def _thread_state(task: Path) -> str:
    # /proc/<pid>/task/<tid>/stat is "tid (comm) state ...", and comm may hold spaces.
    return (task / "stat").read_text().rsplit(")", 1)[1].split()[0]


def free_port() -> int:
    """A loopback port nobody listens on now (a broker's, a worker's /metrics, Prometheus's)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _run(command: list[str], timeout_s: float, *, what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as err:
        raise BrokerError(f"{what} took longer than {timeout_s:.0f} s") from err


def _tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _first_errors(text: str, lines: int = LOG_ERROR_LINES) -> str:
    """The first ERROR/FATAL log lines and exception messages: the cause, before the shutdown."""
    found = [line for line in text.splitlines() if _ERROR_LINE.search(line)]
    return "\n".join(found[:lines]) or "(none logged)"


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return None


# --- Command line -----------------------------------------------------------------------------


def run_broker(port: int = DEFAULT_PORT, data_dir: Path | None = None) -> int:
    """Run a broker in the foreground (``deltalog broker``) until SIGINT or SIGTERM.

    Prints the bootstrap address once the broker answers. Returns 0 after a clean stop, 1 if
    the broker died on its own. Without ``data_dir`` the data lives in a temporary directory
    removed on exit. Raises :class:`BrokerError` if the broker cannot start.
    """
    broker = LocalBroker(data_dir=data_dir, port=port)
    stop_requested = threading.Event()
    try:
        broker.start()
        previous = {sig: signal.signal(sig, lambda *_: stop_requested.set())
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            print(f"Kafka {kafka_version()} (KRaft) ready at {broker.bootstrap_servers} — "
                  f"data {broker.data_dir}, log {broker.log_path}; Ctrl-C stops it", flush=True)
            while not stop_requested.wait(LIVENESS_POLL_INTERVAL_S):
                if not broker.running:
                    print(f"the Kafka broker exited on its own; last lines of its log:\n"
                          f"{broker.log_tail()}", file=sys.stderr, flush=True)
                    return 1
            return 0
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        broker.stop()
