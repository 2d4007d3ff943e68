"""Replay throughput: one worker on an empty disk catching up on a log already written.

    python -m bench replay [--tx 100000] [--queries 12] [--nodes 50] [--repeats 2]
                           [--tick-max-tx N] [--profile] [--seed S] [--workdir DIR]

What a recovery does (a fresh worker with no snapshot, a restart after a crash, the fleet
benchmark's warm-up), measured alone:

1. A local broker; per repeat, topics of a fresh prefix holding `--tx` transactions of the
   fleet benchmark's stream and its `--queries` queries (`bench.service.fleet`: the same
   generator and query set).
2. One worker started with an empty snapshot directory: every query is new, registered on
   the empty database, then stepped through the whole log.
3. Timed from the end of its start (its log says "started at tx": it has joined the group
   and taken its queries up) until every query's committed progress reaches the last
   transaction (`replay s`; `start s` counts from the process start); its CPU time
   (all its threads, `/proc`) over the same span, so the rate per CPU second holds on a
   shared machine. Its `/metrics` then say how many ticks it took and how long each query
   shape stepped.
4. `--profile`: the worker runs under cProfile (stopped cleanly, it writes the profile) and
   the time is split into the tick's parts (`PHASES`), as fractions of the ticks' time.

Results go to bench/results/replay-<start>.json, the profiles beside the worker logs.
"""

from __future__ import annotations

import argparse
import itertools
import os
import pstats
import statistics
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.harness import Results, log, markdown_table
from bench.service.fleet import (
    Watch,
    failure,
    fresh_config,
    kept_workdir,
    preload,
    query_set,
    wait_progress,
)
from workers.kafka.broker import LocalBroker, free_port
from workers.runtime.process import WorkerProcess
from workers.testing import edge_transactions

START_TIMEOUT_S = 120.0
STARTED = " started at tx "  # the worker's log line once its ticks begin
POLL_S = 0.05
REPLAY_TIMEOUT_S = 3600.0  # 10^6 transactions at the old ~1,200 tx/s took ~14 minutes
METRICS_TIMEOUT_S = 10.0
# The parts of a tick, as the functions that do them: (label, (module path, function)...).
PHASES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("poll the tx log", (("workers/kafka/source.py", "next_batch"),)),
    ("poll the queries' group", (("workers/runtime/query_lifecycle.py", "own"),)),
    ("decode Avro", (("workers/kafka/avro.py", "decode"),
                     ("workers/kafka/messages.py", "transaction_from_avro"))),
    ("normalise", (("workers/engine.py", "_normalise_many"),)),
    ("step the queries", (("workers/executors/dispatch.py", "step"),)),
    ("apply to the arrangements", (("workers/arrangements/registry.py", "apply"),
                                   ("workers/arrangements/registry.py", "apply_batch"),
                                   ("workers/arrangements/registry.py", "apply_columns"))),
    ("produce rows, views, progress", (("workers/runtime/tick_writer.py", "_write"),
                                       ("workers/runtime/tick_writer.py", "_write_view"),
                                       ("workers/kafka/sink.py", "view_marker"),
                                       ("workers/kafka/sink.py", "progress"),
                                       ("workers/kafka/sink.py", "dead_letter"))),
    ("Kafka transaction (begin, offsets, commit)", (("workers/kafka/sink.py", "begin"),
                                                    ("workers/kafka/sink.py", "send_offsets"),
                                                    ("workers/kafka/sink.py", "commit"))),
    ("snapshots", (("workers/runtime/worker.py", "_maybe_snapshot"),)),
    ("metrics", (("workers/runtime/worker.py", "_observe"),
                 ("workers/runtime/batch.py", "_observed"))),
)
TICK = ("workers/runtime/worker.py", "tick")
TICKS_S = "ticks, s (profiled)"


@dataclass
class ReplayRow:
    """One worker replaying a log from its first transaction."""

    repeat: int
    transactions: int
    queries: int
    tick_max_tx: int | None
    start_s: float  # from the process start until every query reached the last transaction
    replay_s: float  # from the end of its start (it logs "started at tx") until then
    tx_per_s: float  # transactions / replay_s
    cpu_s: float  # the worker's CPU (user + system) over replay_s
    tx_per_cpu_s: float
    ticks: int
    peak_mb: float  # the worker's peak resident memory (VmHWM)
    step_s: dict[str, float]  # query shape -> seconds stepping (all its queries, all ticks)
    phases: dict[str, float]  # --profile: the ticks' seconds, each part's fraction of them


def scrape(port: int) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """The worker's /metrics: sample name -> labels -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=METRICS_TIMEOUT_S) as reply:
        text = reply.read().decode()
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return samples


def step_seconds(samples: dict[str, dict[tuple[tuple[str, str], ...], float]]
                 ) -> dict[str, float]:
    """Seconds stepping, summed per query shape (the name less its index)."""
    by_shape: dict[str, float] = {}
    for labels, value in samples.get("deltalog_query_step_duration_seconds_sum", {}).items():
        shape = dict(labels)["query"].rsplit("-", 1)[0]
        by_shape[shape] = by_shape.get(shape, 0.0) + value
    return {shape: round(seconds, 2) for shape, seconds in sorted(by_shape.items())}


def phases(profile: Path) -> dict[str, float]:
    """The ticks' CPU seconds (the cumulative time of ``Worker.tick``) and the fraction of it
    each of ``PHASES`` took (what none covers is the rest)."""
    stats: dict[tuple[str, int, str], Any] = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    wanted = {*(f for _, functions in PHASES for f in functions), TICK}
    cumulative = dict.fromkeys(wanted, 0.0)
    for (filename, _, function), (_, _, _, seconds, _) in stats.items():
        for path, name in wanted:
            if function == name and filename.endswith(path):
                cumulative[path, name] += seconds
    ticks = cumulative[TICK] or 1.0
    return {TICKS_S: round(ticks, 2)} | {
        label: round(sum(cumulative[f] for f in functions) / ticks, 3)
        for label, functions in PHASES}


def peak_resident_mb(worker: WorkerProcess) -> float:
    """The running worker's peak resident memory so far, MB (``VmHWM``)."""
    assert worker.process is not None
    with open(f"/proc/{worker.process.pid}/status") as status:
        kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    return round(kb / 1024, 1)


def wait_started(worker: WorkerProcess) -> tuple[float, float]:
    """When the worker logged the end of its start (topics, snapshot, group joined,
    queries taken up: its ticks begin), and its CPU seconds then."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while STARTED not in worker.log.read_text(errors="replace"):
        if time.monotonic() > deadline or not worker.alive():
            raise failure("the worker did not start", [worker])
        time.sleep(POLL_S)
    return time.monotonic(), worker.cpu_s()


def replay_once(bootstrap: str, args: argparse.Namespace, repeat: int,
                workdir: Path) -> ReplayRow:
    """Preload a fresh log, start one worker on it, time it to the end."""
    config = fresh_config(bootstrap)
    queries = query_set(args.queries)
    names = list(queries)
    log(f"replay {repeat}: preloading {args.tx:,} transactions")
    sent = preload(config, queries, itertools.islice(edge_transactions(args.seed, args.nodes),
                                                      args.tx))
    port = free_port()
    profile = workdir / f"{config.topic_prefix}.prof" if args.profile else None
    watch = Watch(config)
    try:
        with WorkerProcess(config, workdir / f"{config.topic_prefix}-snapshots",
                           workdir / f"{config.topic_prefix}.log", "replay", profile=profile,
                           tick_max_tx=args.tick_max_tx, metrics_port=port) as worker:
            started = time.monotonic()
            worker.start()
            ticking, ticking_cpu = wait_started(worker)
            done = wait_progress(watch, names, sent - 1, [worker], REPLAY_TIMEOUT_S)
            cpu = worker.cpu_s() - ticking_cpu
            samples = scrape(port)
            peak_mb = peak_resident_mb(worker)
            worker.stop()
            if profile is not None and not profile.exists():
                raise failure(f"no profile written to {profile}", [worker])
    finally:
        watch.close()
    seconds = done - ticking
    return ReplayRow(repeat, sent, len(names), args.tick_max_tx, round(done - started, 2),
                     round(seconds, 2), round(sent / seconds),
                     round(cpu, 2), round(sent / max(cpu, 1e-9)),
                     int(sum(samples.get("deltalog_ticks_total", {}).values())), peak_mb,
                     step_seconds(samples), {} if profile is None else phases(profile))


def table(rows: Sequence[ReplayRow]) -> str:
    shapes = sorted({shape for r in rows for shape in r.step_s})
    headers = ["repeat", "tx", "queries", "tick max tx", "start s", "replay s", "tx/s",
               "worker CPU s", "tx/CPU s", "ticks", "peak MB", *(f"step {s} s" for s in shapes)]
    return markdown_table(headers, [
        [str(r.repeat), f"{r.transactions:,}", str(r.queries),
         "default" if r.tick_max_tx is None else f"{r.tick_max_tx:,}", f"{r.start_s:.1f}",
         f"{r.replay_s:.1f}", f"{r.tx_per_s:,}", f"{r.cpu_s:.1f}", f"{r.tx_per_cpu_s:,}",
         f"{r.ticks:,}", f"{r.peak_mb:.0f}", *(f"{r.step_s.get(s, 0.0):.1f}" for s in shapes)]
        for r in rows
    ])


def phase_table(rows: Sequence[ReplayRow]) -> str:
    return markdown_table(["part of the ticks", *(f"repeat {r.repeat}" for r in rows)], [
        [label, *(f"{r.phases[label]:.1f}" if label == TICKS_S else f"{r.phases[label]:.1%}"
                  for r in rows)]
        for label in rows[0].phases
    ])


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--tx", type=int, default=100_000,
                        help="transactions in the log (default 100000)")
    parser.add_argument("--queries", type=int, default=12, help="registered queries (default 12)")
    parser.add_argument("--nodes", type=int, default=50, help="graph nodes (default 50)")
    parser.add_argument("--repeats", type=int, default=2, help="replays (default 2)")
    parser.add_argument("--tick-max-tx", type=int,
                        help="the worker's --tick-max-tx (default: the worker's own)")
    parser.add_argument("--profile", action="store_true",
                        help="run the worker under cProfile and split the ticks' time")
    parser.add_argument("--seed", type=int, default=42, help="stream seed (default 42)")
    parser.add_argument("--workdir", type=Path,
                        help="worker logs, snapshots, profiles (default a new temp dir, kept)")
    args = parser.parse_args(argv)
    if min(args.tx, args.queries, args.repeats, args.tick_max_tx or 1) < 1 or args.nodes < 2:
        parser.error("--tx, --queries, --repeats, --tick-max-tx must be positive, --nodes >= 2")
    return args


def run(args: argparse.Namespace) -> None:
    """Start a broker, replay `--repeats` times, print the table and write the JSON."""
    output = Results("replay", args)
    workdir = kept_workdir(args, "replay")
    load = os.getloadavg()
    print(f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{args.queries} queries over {args.nodes} nodes; worker logs in {workdir}")
    log("starting a local Kafka broker")
    with LocalBroker() as broker:
        rows = [replay_once(broker.bootstrap_servers, args, repeat, workdir)
                for repeat in range(1, args.repeats + 1)]
    after = os.getloadavg()
    print()
    print(table(rows))
    if args.profile:
        print()
        print(phase_table(rows))
    median, per_cpu = (statistics.median(r.tx_per_s for r in rows),
                       statistics.median(r.tx_per_cpu_s for r in rows))
    print()
    print(f"replay median {median:,.0f} tx/s ({per_cpu:,.0f} tx per worker CPU second); "
          f"load average after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")
    output.write({"cores": os.cpu_count(), "load_before": load, "load_after": after,
                  "queries": query_set(args.queries), "rows": [asdict(r) for r in rows]})
