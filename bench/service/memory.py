"""A worker's resident memory, loaded, restarted and after an enormous tick, and its parts.

1. Start a local broker and one worker (ticks stepped in pieces of ``--piece-datoms``) with
   the two-path and triangle queries, and load the graph of the memory test
   (``tests/integration/test_memory_bound.py``): ``--spokes`` spokes to and from a hub and a
   ring through them, ``--edges-per-tx`` edges a transaction.
2. Once committed, read the worker's ``/proc``: resident memory (anonymous, file-backed), its
   largest mappings, and its threads by name (one ``rdk:main`` per open librdkafka client).
3. ``--restart``: stop the worker, start it again (it reads its queries' view topics back)
   and read them again once it has started.
4. Retract the hub (one tick of ``spokes``² changes) and read them again, with the peak.

    python -m bench memory [--spokes 700] [--piece-datoms 50] [--restart]
"""

from __future__ import annotations

import argparse
import collections
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import markdown_table
from workers.config import WorkerConfig, from_env
from workers.edn import keyword
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin, TxProducer, progress_table
from workers.runtime.process import WorkerProcess

TWO_PATH = "{:find [?a ?c] :where [[?a :g/to ?b] [?b :g/to ?c]]}"
TRIANGLE = "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}"
QUERIES = {"paths": TWO_PATH, "tri": TRIANGLE}
HUB = 0
WAIT_S = 600.0
STATUS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--spokes", type=int, default=700)
    parser.add_argument("--edges-per-tx", type=int, default=100)
    parser.add_argument("--piece-datoms", type=int, default=50)
    parser.add_argument("--restart", action="store_true",
                        help="restart the worker before retracting the hub")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Load, (restart,) retract the hub; the worker's memory after each step."""
    spokes = range(1, args.spokes + 1)
    edges = ([(s, HUB) for s in spokes] + [(HUB, s) for s in spokes]
             + [(s, s % args.spokes + 1) for s in spokes])
    load = [[[keyword("db/add"), a, keyword("g/to"), b] for a, b in edges[i:i + args.edges_per_tx]]
            for i in range(0, len(edges), args.edges_per_tx)]
    rows: list[list[str]] = []
    details: list[str] = []
    with tempfile.TemporaryDirectory() as scratch, LocalBroker(Path(scratch) / "kafka") as broker:
        config = from_env({}, bootstrap_servers=broker.bootstrap_servers)
        for name, query in QUERIES.items():
            QueryAdmin(config).add(name, query)
        log = Path(scratch) / "worker.log"
        with WorkerProcess(config, Path(scratch) / "snapshots", log, "bench",
                           env={"DELTALOG_TICK_MAX_DATOMS": str(args.piece_datoms),
                                "DELTALOG_TRANSACTION_TIMEOUT_MS": "60000"}) as worker:
            worker.start()
            _send(config, load)
            _wait_committed(config, len(load) - 1)
            rows.append(_reading("loaded", worker, details))
            if args.restart:
                worker.stop()
                worker.start()
                _wait_logged(log, "started at tx", 2)
                rows.append(_reading("restarted", worker, details))
            _send(config, [[[keyword("db/retractEntity"), HUB]]])
            _wait_committed(config, len(load))
            rows.append(_reading("after the hub's tick", worker, details))
    print(markdown_table(["worker", "VmRSS (MB)", "anonymous (MB)", "file-backed (MB)",
                          "peak VmHWM (MB)", "threads", "Kafka clients"], rows))
    print("\n".join(details))


def _reading(step: str, worker: WorkerProcess, details: list[str]) -> list[str]:
    """The worker's memory now, as a table row; its largest mappings and its threads go to
    ``details``."""
    assert worker.process is not None
    proc = Path(f"/proc/{worker.process.pid}")
    status = {key: int(value.split()[0]) for key, _, value in (
        line.partition(":") for line in (proc / "status").read_text().splitlines())
        if key in STATUS}
    threads = collections.Counter(re.sub(r"\d+", "#", (task / "comm").read_text().strip())
                                  for task in (proc / "task").iterdir())
    mappings = _largest_mappings(proc / "smaps")
    details.append(f"{step}: threads {dict(threads)}; largest mappings (MB) "
                   + ", ".join(f"{name} {kb / 1024:.1f}" for name, kb in mappings))
    return [step, *(f"{status[key] / 1024:.1f}" for key in STATUS), str(threads.total()),
            str(threads["rdk:main"])]


def _largest_mappings(smaps: Path, count: int = 8) -> list[tuple[str, int]]:
    """Resident kB per mapped file (by name) or kind of anonymous mapping, largest first."""
    resident: collections.Counter[str] = collections.Counter()
    name = ""
    for line in smaps.read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split()
            name = Path(parts[5]).name if len(parts) > 5 else "[anon]"
        elif line.startswith("Rss:"):
            resident[name] += int(line.split()[1])
    return resident.most_common(count)


def _send(config: WorkerConfig, stream: Sequence[Any]) -> None:
    with TxProducer(config) as producer:
        for tx in stream:
            producer.send(tx)
        producer.flush()


def _wait_committed(config: WorkerConfig, tx: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while min((progress_table(config).get(name, {"tx_last": -2})["tx_last"]
               for name in QUERIES), default=-2) < tx:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker did not reach tx {tx}")
        time.sleep(0.2)


def _wait_logged(log: Path, text: str, times: int) -> None:
    """Until the worker's log has ``text`` ``times`` times (its start after a restart)."""
    deadline = time.monotonic() + WAIT_S
    while log.read_text(errors="replace").count(text) < times:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker did not log {text!r} {times} times")
        time.sleep(0.2)
