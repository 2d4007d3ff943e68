"""The ``deltalog`` command line against the real broker: query add/ls/rm, tx (text and
file), tail --json (the view, or the raw stream from its beginning); a refused query exits
non-zero with the parser's message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.pipeline import TRIANGLE, isolated_config, wait_committed
from workers.db.resolve import allocated_id
from workers.runtime.process import WorkerProcess

pytestmark = pytest.mark.kafka
CLI_TIMEOUT_S = 60
TAIL_S = 8.0  # long enough for tail to start, read the topic and print


def deltalog(env: dict[str, str], *args: str,
             timeout_s: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workers", *args], env=env, text=True,
                          capture_output=True, timeout=timeout_s)


def test_commands_drive_a_live_worker(kafka_bootstrap: str, tmp_path: Path) -> None:
    config = isolated_config(kafka_bootstrap)
    env = {**os.environ, "DELTALOG_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "DELTALOG_TOPIC_PREFIX": config.topic_prefix}
    assert deltalog(env, "query", "add", "tri", TRIANGLE).returncode == 0
    refused = deltalog(env, "query", "add", "bad", "{:find [?x] :where [[?a :g/to ?b]]}")
    assert refused.returncode == 2
    assert "unsafe query: :find ?x does not occur in any :where pattern" in refused.stderr
    listed = deltalog(env, "query", "ls")
    assert listed.stdout.splitlines() == [f"tri\t{TRIANGLE}"]

    worker = WorkerProcess(config, tmp_path / "snapshots", tmp_path / "worker.log")
    worker.start()
    try:
        data = tmp_path / "data.edn"
        data.write_text("[[:db/add 1 :g/to 2] [:db/add 1 :g/to 3]]\n[[:db/add 2 :g/to 3]]\n")
        sent = deltalog(env, "tx", "--file", str(data))
        assert sent.returncode == 0 and "2/2 tx" in sent.stderr
        wait_committed(config, ["tri"], 1, worker)  # commit before the retraction: its own tick
        assert deltalog(env, "tx", "[[:db/retract 1 :g/to 2]]").returncode == 0
        wait_committed(config, ["tri"], 2, worker)
        # A transaction naming tempids: the ids the fleet gave them (its committed report),
        # as every worker gives them: a function of the log (offset 3: the 4th record).
        named = deltalog(env, "tx", '[{:db/id "ivan" :p/name "Ivan" :p/friend -1} '
                                    '[:db/add -1 :p/name "Oleg"]]')
        assert named.returncode == 0, named.stderr
        assert named.stdout.strip() == (f'tx 3 {{"ivan" {allocated_id(3, 0)} '
                                        f'-1 {allocated_id(3, 1)}}}')
        refused = deltalog(env, "tx", '[[:db/add "x" :p/age 1] [:db/retract "x" :p/age 1]]')
        assert refused.returncode == 1 and "tx 4 refused (tx-conflict)" in refused.stderr
        # The raw stream: the registration's (empty) snapshot, the triangle in, then out.
        assert _tail_json(env, "tri", "--from-beginning") == [
            {"query": "tri", "row": "[]", "weight": 0, "snapshot": True, "last": True},
            {"query": "tri", "row": "[1 2 3]", "weight": 1, "snapshot": False, "last": True},
            {"query": "tri", "row": "[1 2 3]", "weight": -1, "snapshot": False, "last": True}]
        # By default the view first: empty after tx 2 (the row of no values says so).
        view = _tail_json(env, "tri")
        assert view == [{"query": "tri", "row": "[]", "weight": 0, "snapshot": True,
                         "last": True}]
    finally:
        worker.stop()
    assert deltalog(env, "query", "rm", "tri").returncode == 0
    assert deltalog(env, "query", "ls").stdout == ""
    missing = deltalog(env, "query", "rm", "tri")
    assert missing.returncode == 2 and "no query named 'tri'" in missing.stderr


def _tail_json(env: dict[str, str], name: str, *flags: str) -> list[dict[str, object]]:
    """The rows ``deltalog tail --json`` prints within a few seconds (it follows forever,
    so it is stopped by the timeout)."""
    try:
        output = deltalog(env, "tail", name, "--json", *flags, timeout_s=TAIL_S).stdout
    except subprocess.TimeoutExpired as stopped:
        output = stopped.stdout.decode() if isinstance(stopped.stdout, bytes) else stopped.stdout
    changes = [json.loads(line) for line in (output or "").splitlines()]
    return [{k: change[k] for k in ("query", "row", "weight", "snapshot", "last")}
            for change in changes]
