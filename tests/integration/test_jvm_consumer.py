"""The record contract read by a client with nothing of deltalog's code (docs/pipeline.md,
"The record contract"): a small Java program on Apache Kafka's Java client and Apache Avro
(``tests/integration/jvm/ViewConsumer.java``) reads a query's view topic and change stream,
decodes them with the schemas in ``schemas/``, integrates them, and prints the result, which
must be the oracle's.  Java and Maven are required: without them the test fails."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.pipeline import (
    TWO_PATH,
    isolated_config,
    random_stream,
    reference_states,
    send_stream,
    wait_committed,
)
from workers.kafka.clients import QueryAdmin
from workers.runtime.process import WorkerProcess
from workers.testing import evaluate_from_scratch

pytestmark = pytest.mark.kafka
JVM = Path(__file__).parent / "jvm"
SCHEMAS = Path(__file__).parents[2] / "schemas"
BAG = "{:find [?a] :with [?b] :where [[?a :g/to ?b]]}"  # out-degrees as multiplicities
QUERIES = {"paths": TWO_PATH, "degree": BAG}
FETCH_TIMEOUT_S = 600.0  # Maven fetching two libraries and theirs from Maven Central, once
RUN_TIMEOUT_S = 120.0  # a JVM start, a view read and a change stream read


def test_a_jvm_consumer_integrates_the_view_and_the_changes_to_the_oracle(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    classes = _compiled(tmp_path / "classes")
    config = isolated_config(kafka_bootstrap)
    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "w.log", tick_max_tx=3)
    worker.start()
    admin = QueryAdmin(config)
    for name, query in QUERIES.items():
        admin.add(name, query)
    wait_committed(config, list(QUERIES), -1, worker)
    stream = random_stream(seed=43, count=200)
    send_stream(config, stream[:100], batch=5, pause_s=0.02)
    wait_committed(config, list(QUERIES), 99, worker)

    consumers = {name: _start(classes, kafka_bootstrap, config.topic_prefix, name,
                              tmp_path / f"{name}.err") for name in QUERIES}
    snapshots = {name: _line(process, "snapshot") for name, process in consumers.items()}
    send_stream(config, stream[100:], batch=5, pause_s=0.02)  # changes after the snapshot
    wait_committed(config, list(QUERIES), len(stream) - 1, worker)
    worker.stop()

    states = reference_states(stream)
    results = {}
    for name, process in consumers.items():
        output, _ = process.communicate("stop\n", timeout=RUN_TIMEOUT_S)
        assert process.returncode == 0, (tmp_path / f"{name}.err").read_text()
        first, *rows = output.splitlines()
        registration, tx = snapshots[name]
        assert registration >= 0 and 0 <= tx < 100  # the view of the first half
        position = _numbers(first, "position")
        assert position[0] == registration and position[1] > tx  # changes were integrated
        results[name] = {tuple(json.loads(values)): int(weight)
                         for weight, values in (row.split("\t") for row in rows)}
        assert results[name] == evaluate_from_scratch(QUERIES[name], states[-1]), name
    assert any(weight > 1 for weight in results["degree"].values())  # a bag's multiplicities


def _compiled(classes: Path) -> Path:
    """``ViewConsumer.java`` compiled against the pom's jars (fetched once)."""
    lib = _jars()
    javac = shutil.which("javac")
    assert javac is not None, "javac (a JDK 17) is needed to compile the JVM consumer"
    classes.mkdir(parents=True)
    subprocess.run([javac, "-d", str(classes), "-cp", str(lib / "*"),
                    str(JVM / "ViewConsumer.java")], check=True, timeout=RUN_TIMEOUT_S)
    return classes


def _jars() -> Path:
    """Kafka's Java client and Avro from Maven Central, cached in ``~/.cache/deltalog``
    (valid while its marker holds the pom's sha256), as ``workers.kafka.broker`` does."""
    digest = hashlib.sha256((JVM / "pom.xml").read_bytes()).hexdigest()
    home = Path.home() / ".cache" / "deltalog" / "jvm-consumer"
    lib, marker = home / "lib", home / "fetched"
    home.mkdir(parents=True, exist_ok=True)
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists() or marker.read_text() != digest:
            mvn = shutil.which("mvn")
            assert mvn is not None, "Maven (mvn) is needed to fetch the JVM consumer's jars"
            shutil.rmtree(lib, ignore_errors=True)
            subprocess.run([mvn, "-q", "-B", "-f", str(JVM / "pom.xml"),
                            "dependency:copy-dependencies", f"-DoutputDirectory={lib}"],
                           check=True, timeout=FETCH_TIMEOUT_S)
            marker.write_text(digest)
    return lib


def _start(classes: Path, bootstrap: str, prefix: str, query: str,
           errors: Path) -> subprocess.Popen[str]:
    java = shutil.which("java")
    assert java is not None, "java (17) is needed to run the JVM consumer"
    classpath = f"{classes}:{_jars() / '*'}"
    return subprocess.Popen([java, "-cp", classpath, "ViewConsumer", bootstrap, prefix, query,
                             str(SCHEMAS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=errors.open("w"), text=True)


def _line(process: subprocess.Popen[Any], word: str) -> tuple[int, int]:
    """The numbers of the next line the consumer prints, which starts with ``word``."""
    assert process.stdout is not None
    return _numbers(process.stdout.readline(), word)


def _numbers(line: str, word: str) -> tuple[int, int]:
    found, registration, tx = line.split()
    assert found == word, line
    return int(registration), int(tx)
