"""One SparkSession per process: embedded ``local[*]`` by default, a cluster by config.

Defaults are tuned for the small, frequent jobs of a tick (FACTS.md): no UI, loopback
addresses, Arrow on, adaptive execution off, one shuffle partition per core.  A cluster is
``master="spark://host:7077"``; Spark Connect is ``remote="sc://host:15002"``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from workers.arrangements.spilled import SPILL_VALUES
from workers.errors import ErrorCode, WorkersError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# How long a shared state's writer keeps the files a version no longer names: a follower
# further behind than this cannot step (it follows anew).
RETAIN_SECONDS = 600.0
SMALL_JOB_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # A step is two stages of Python tasks: adaptive execution would run each as a job of
    # its own and re-plan between them, for nothing to optimise.
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "2g",
}
LOOPBACK_CONF: Mapping[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


@dataclass(frozen=True, slots=True)
class SparkSettings:
    """Where Spark runs; ``conf`` entries override the defaults above; ``state``: where the
    executor writes the database for its tasks (a directory or a ``pyarrow.fs`` URL that
    every executor reaches; None: a temporary directory per engine); ``memory_values``: the
    values of the dictionary the driver keeps in memory, the latest numbered (the others
    are in the state's files: :mod:`workers.executors.spark.state_dictionary`).
    ``share``: other engines follow the
    state (its writer stamps each version and writes its dictionary beside it, and keeps
    the files a version no longer names ``retain_seconds``); ``follow``: this engine follows
    the state another writes (:mod:`workers.executors.spark.shared`)."""

    master: str = "local[*]"
    remote: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    state: str | None = None
    memory_values: int = SPILL_VALUES
    share: bool = False
    follow: bool = False
    retain_seconds: float = RETAIN_SECONDS

    def cores(self) -> int:
        """Cores of an embedded master (``local[N]``/``local[*]``); 2 for a cluster."""
        match = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", self.master)
        if match is None:
            return 2
        count = match.group(1) or "1"
        return os.cpu_count() or 1 if count == "*" else int(count)


def spark_session(settings: SparkSettings = SparkSettings()) -> SparkSession:
    """The process's SparkSession, started on first use; a clear error if it cannot start."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:
        # PySpark is a dependency of deltalog, not an extra: missing, the install is broken.
        raise WorkersError("the Spark executor needs PySpark, a dependency of deltalog that "
                           "this Python environment lacks: reinstall deltalog with its "
                           "dependencies (pip install -e . in a checkout), or use "
                           "executor=local", code=ErrorCode.SPARK) from error
    _local_python_workers()
    if settings.remote is not None:
        return _connect(SparkSession, settings)
    _require_java()
    if settings.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(settings.master).appName("deltalog")
    partitions = str(settings.cores())
    conf = {**SMALL_JOB_CONF, "spark.sql.shuffle.partitions": partitions,
            "spark.default.parallelism": partitions,
            **(LOOPBACK_CONF if settings.master.startswith("local") else {}), **settings.conf}
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as error:
        raise WorkersError(f"Spark did not start on master {settings.master!r}: {error}. "
                           "Check JAVA_HOME (Java 17+) and the master URL, or use "
                           "executor=local", code=ErrorCode.SPARK) from error
    session.sparkContext.setLogLevel("ERROR")
    return session


def _connect(session_class: type[SparkSession], settings: SparkSettings) -> SparkSession:
    """A Spark Connect session; the server owns its static settings, the session's runtime
    ones (shuffle partitions, ``conf``) are set here."""
    try:
        session = session_class.builder.remote(settings.remote).getOrCreate()  # type: ignore[arg-type]
        for key, value in {"spark.sql.shuffle.partitions": str(settings.cores()),
                           **settings.conf}.items():
            session.conf.set(key, value)
        return session
    except Exception as error:
        raise WorkersError(f"cannot reach Spark Connect at {settings.remote!r}: {error} "
                           "(is the server up, and the URL sc://host:port?)",
                           code=ErrorCode.SPARK) from error


def _local_python_workers() -> None:
    """Spark's Python workers on this machine (a local master, a local Connect server) run
    deltalog's task code: the driver's interpreter, and the driver's copy of deltalog first
    on their path, so they import the same version — a checkout, not whatever is installed.
    A cluster's executors need deltalog installed in their Python environment."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parents[3])
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])


def _require_java() -> None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return
    if shutil.which("java") is None:
        raise WorkersError("Spark needs a Java runtime (17 or newer) and none was found: "
                           "install one (e.g. apt install openjdk-17-jre-headless) or set "
                           "JAVA_HOME, or use executor=local", code=ErrorCode.SPARK)
