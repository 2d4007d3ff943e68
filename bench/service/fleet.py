"""A fleet of deltalog workers on a local Kafka broker: capacity scaling and takeover time.

    python -m bench fleet [--tx N] [--queries Q] [--workers 1,2,3] [--rate TX_PER_S]
                          [--warmup-tx N] [--repeats R] [--nodes N] [--tick-max-tx N]
                          [--only capacity|takeover] [--seed S] [--workdir DIR]
                          [--group-protocol classic|consumer] [--session-timeout-ms MS]

A `LocalBroker` is started for the run; every measurement uses topics of its own prefix, and
the workers are `python -m workers worker` child processes logging to files under the work
directory (a temp dir unless `--workdir`; it is kept for a look at the logs). Q queries cycle
triangle / two-path / reach-count (a recursive rule with aggregates), the variables renamed
per query so no two texts are equal; the stream is seeded edge adds, retracts and entity
retractions over `--nodes` nodes (the mix of the integration tests' `random_stream`).

Capacity: for each k in `--workers`, N transactions are preloaded and the queries registered,
then k workers start at once; timed until every query's committed progress reaches the last
offset; the workers' CPU time (user + system, start to stop) is reported too. Every worker
reads every transaction, so on a 2-core machine scaling is bounded.

Takeover: 2 workers sharing one snapshot store, a warm-up preload, then a steady stream of
`--rate` tx/s. The first worker replays the warm-up history alone; the second starts from its
newest snapshot (what a worker added to a deployment does). Once settled (both workers hold
query partitions and every query has passed the log end), one worker is killed with SIGKILL;
timed from the kill until the group has given the survivor every query partition
(`reassigned`, as the group coordinator describes it) and until every query's progress passes
the log end as it was at the kill (`takeover`); the survivor's log gives the steps between
(ending the dead worker's open transaction, reading the committed progress and the moved
queries' committed views, and how many records that read met), and its lines since the kill
are printed as a timeline.
`--warmup-tx` is the history before the kill (10^4 vs 10^6: issue 17 wants the medians within
1.2x). The killed worker is restarted (from the newest snapshot) and the fleet settles again
before the next repeat. Results go to bench/results/fleet-<start>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import resource
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.harness import BenchError, Results, log, markdown_table, positive_ints
from workers.config import WorkerConfig, from_env
from workers.kafka.avro import AvroCodec
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin, TxProducer
from workers.kafka.compacted import CompactedReader, latest
from workers.kafka.topics import Topics
from workers.runtime.process import WorkerProcess
from workers.testing import edge_transactions

Tx = list[list[Any]]
SHAPES = {
    "triangle": "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}",
    "two-path": "{:find [?a ?c] :where [[?a :g/to ?b] [?b :g/to ?c]]}",
    "reach-count": "{:find [?a (count ?b) (distinct ?b)] :where [(reach ?a ?b)] :rules "
                   "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]}",
}
TAKEOVER_TARGET_S = 5.0  # issue 17's target (median) at default settings
POLL_S = 0.1  # between progress reads while waiting
CAPACITY_TIMEOUT_S = 600.0
SETTLE_TIMEOUT_S = 180.0
CATCH_UP_TX_S = 500  # the slowest start-up catch-up allowed for: the warm-up history at this rate
TAKEOVER_TIMEOUT_S = 120.0
LIVE_S = 5.0  # a fleet that reaches the log end within this is keeping up with the stream
# The survivor's log lines that time a takeover's steps (workers.runtime.fencing, .worker).
FENCED = re.compile(r"fenced \S+ \(its open transaction aborted\) in ([\d.]+) s")
PROGRESS_READ = re.compile(r"progress read in ([\d.]+) s")
VIEWS_READ = re.compile(r"committed views in ([\d.]+) s")
VIEW_RECORDS = re.compile(r"committed views in [\d.]+ s \((\d+) records\)")
SNAPSHOT_LOADED = re.compile(r"loaded snapshot at tx (\d+)")
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ [\w.]+: (.*)$", re.MULTILINE)
COORDINATOR_NOT_READY = {KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                         KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR}


class FleetError(BenchError):
    """A wait timed out or a worker died; the message quotes the workers' logs."""


# --- workload -------------------------------------------------------------------------------


def query_set(count: int) -> dict[str, str]:
    """`count` queries cycling over SHAPES, each query's variables suffixed with its index."""
    kinds = list(SHAPES)
    queries = {}
    for i in range(count):
        kind = kinds[i % len(kinds)]
        queries[f"{kind}-{i}"] = re.sub(r"\?(\w+)", rf"?\g<1>{i}", SHAPES[kind])
    return queries


def fresh_config(bootstrap: str) -> WorkerConfig:
    """Client settings with a topic prefix of their own."""
    return from_env({}, bootstrap_servers=bootstrap, topic_prefix=f"fleet{uuid.uuid4().hex[:8]}")


def preload(config: WorkerConfig, queries: dict[str, str], txs: Iterable[Tx]) -> int:
    """Send `txs` and register `queries`; the number of transactions sent."""
    producer = TxProducer(config)
    sent = 0
    for tx in txs:
        producer.send(tx)
        sent += 1
    producer.flush()
    admin = QueryAdmin(config)
    for name, text in queries.items():
        admin.add(name, text)
    return sent


class Sender(threading.Thread):
    """Sends a stream at a steady rate (each transaction flushed) until stopped."""

    def __init__(self, config: WorkerConfig, stream: Iterator[Tx], rate: float) -> None:
        super().__init__(name="sender", daemon=True)
        self.config, self.stream, self.rate = config, stream, rate
        self.halt = threading.Event()
        self.sent = 0
        self.started = self.stopped = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            producer = TxProducer(self.config)
            self.started = time.monotonic()
            for tx in self.stream:
                if self.halt.is_set():
                    break
                producer.send(tx)
                producer.flush()
                self.sent += 1
                self.halt.wait(max(0.0, self.started + self.sent / self.rate - time.monotonic()))
        except BaseException as error:  # reported by the waits in the main thread
            self.error = error
        self.stopped = time.monotonic()

    def achieved(self) -> float:
        """Transactions per second actually sent (after the thread ended)."""
        return self.sent / max(self.stopped - self.started, 1e-9)


# --- workers --------------------------------------------------------------------------------


@contextlib.contextmanager
def fleet(config: WorkerConfig, count: int, workdir: Path,
          args: argparse.Namespace) -> Iterator[list[WorkerProcess]]:
    """`count` workers w1..wN (not started), sharing one snapshot store as a deployment's
    workers do (a worker started late, or restarted, replays only the log after the newest
    snapshot); all stopped on exit."""
    env = {"DELTALOG_GROUP_PROTOCOL": args.group_protocol}
    if args.session_timeout_ms is not None:
        env["DELTALOG_SESSION_TIMEOUT_MS"] = str(args.session_timeout_ms)
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(WorkerProcess(
            config, workdir / f"{config.topic_prefix}-snapshots",
            workdir / f"{config.topic_prefix}-{worker_id}.log", worker_id, env=env,
            tick_max_tx=args.tick_max_tx))
            for worker_id in (f"w{i + 1}" for i in range(count))]


def failure(message: str, workers: Sequence[WorkerProcess]) -> FleetError:
    """A FleetError quoting the end of every worker's log."""
    tails = [f"--- {w.worker_id} ({'alive' if w.alive() else 'dead'}) {w.log}:\n{w.tail()}"
             for w in workers]
    return FleetError("\n".join([message, *tails]))


# --- watching the fleet ---------------------------------------------------------------------


class Watch:
    """Committed progress per query (one progress reader kept open), the tx log's end, and
    which workers of the group hold query partitions."""

    def __init__(self, config: WorkerConfig) -> None:
        topics = Topics(config.topic_prefix)
        self._codec = AvroCodec("progress")
        self._reader = CompactedReader(config, topics.progress)
        self._ends = Consumer(config.kafka(**{"group.id": f"bench-fleet-{uuid.uuid4()}",
                                              "enable.auto.commit": False}))
        self._tx = TopicPartition(topics.tx, 0)
        self._admin = AdminClient(config.kafka())
        self.group = config.group_id or f"{config.topic_prefix}.workers"
        self.progress: dict[str, dict[str, Any]] = {}

    def refresh(self) -> None:
        """Read the progress committed since the last call."""
        for name, record in latest(self._reader.catch_up()).items():
            self.progress[name] = self._codec.decode(record.value or b"")

    def reached(self, queries: Sequence[str]) -> int | None:
        """The offset every query's progress has reached; None while one has none."""
        if not queries or any(q not in self.progress for q in queries):
            return None
        return min(self.progress[q]["tx_last"] for q in queries)

    def last_tx(self) -> int:
        """The offset of the last transaction in the log (-1 when empty)."""
        return int(self._ends.get_watermark_offsets(self._tx, timeout=30)[1]) - 1

    def holders(self) -> dict[str, int]:
        """Query partitions held per client id, for the group members holding any (none
        while the coordinator is not ready to say)."""
        try:
            group = self._admin.describe_consumer_groups([self.group])[self.group].result(30)
        except KafkaException as error:
            if error.args[0].code() not in COORDINATOR_NOT_READY:
                raise
            return {}
        return {m.client_id: len(m.assignment.topic_partitions) for m in group.members
                if m.assignment and m.assignment.topic_partitions}

    def writers(self, queries: Iterable[str]) -> Counter[str]:
        """How many of `queries` each worker committed the latest progress of."""
        return Counter(self.progress[q]["worker"] for q in queries if q in self.progress)

    def close(self) -> None:
        self._reader.close()
        self._ends.close()


def wait_progress(watch: Watch, queries: Sequence[str], offset: int,
                  alive: Sequence[WorkerProcess], timeout_s: float,
                  sender: Sender | None = None) -> float:
    """Poll until every query's progress is at least `offset`; when that was seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        watch.refresh()
        done = watch.reached(queries)
        if done is not None and done >= offset:
            return time.monotonic()
        problem = (f"progress {done} after {timeout_s:.0f} s, waiting for tx {offset}"
                   if time.monotonic() > deadline else None)
        problem = problem or next((f"worker {w.worker_id} died" for w in alive
                                   if not w.alive()), None)
        if sender is not None and sender.error is not None:
            problem = problem or f"the sender failed: {sender.error!r}"
        if problem:
            raise failure(problem, alive)
        time.sleep(POLL_S)


def wait_assignment(watch: Watch, done: Callable[[dict[str, int]], bool],
                    alive: Sequence[WorkerProcess], timeout_s: float) -> float:
    """Poll the group until `done(partitions held per client id)`; when that was seen."""
    deadline = time.monotonic() + timeout_s
    while not done(held := watch.holders()):
        if time.monotonic() > deadline or not all(w.alive() for w in alive):
            raise failure(f"query partitions held as {held} after {timeout_s:.0f} s", alive)
        time.sleep(POLL_S)
    return time.monotonic()


def settle(watch: Watch, queries: Sequence[str], workers: Sequence[WorkerProcess],
           sender: Sender, timeout_s: float = SETTLE_TIMEOUT_S) -> float:
    """Wait until every worker holds query partitions, then until every query has passed
    the log end as it was then — again, while reaching it took longer than ``LIVE_S``: a
    long catch-up (10^6 transactions of history) ends behind the stream sent meanwhile, and
    a takeover then would time the survivor's own catch-up; the seconds it took."""
    started = time.monotonic()
    wanted = {w.client_id for w in workers}
    wait_assignment(watch, lambda held: set(held) == wanted, workers, timeout_s)
    while True:
        waited = time.monotonic()
        reached = wait_progress(watch, queries, watch.last_tx() + 1, workers,
                                started + timeout_s - time.monotonic(), sender)
        if reached - waited <= LIVE_S:
            return time.monotonic() - started


# --- scenarios ------------------------------------------------------------------------------


@dataclass
class CapacityRow:
    """k workers catching up on a preloaded log."""

    workers: int
    transactions: int
    queries: int
    first_progress_s: float  # from the start until every query had committed progress
    seconds: float  # from the start until every query reached the last offset
    tx_queries_per_s: float
    speedup: float  # over the first row (k=1 by default)
    cpu_s: float  # user + system CPU of the workers, start to stop
    queries_per_worker: dict[str, int]


@dataclass
class TakeoverRow:
    """One kill -9 of a worker of two, under a steady stream."""

    repeat: int
    killed: str
    moved: int  # queries whose latest progress the killed worker had committed
    log_end: int  # offset of the last transaction at the kill
    settle_s: float  # the fleet settling before the kill (the restart, from repeat 2 on)
    reassigned_s: float  # from the kill until the group gave the survivor every partition
    seconds: float  # from the kill until every query passed log_end
    fence_s: float  # the survivor ending the dead worker's open transaction (its log)
    progress_s: float  # the survivor reading the committed progress (its log)
    views_s: float  # the survivor reading the moved queries' committed views (its log)
    view_records: int  # the records that read met: the views and the churn their topics held


def capacity_once(bootstrap: str, k: int, args: argparse.Namespace,
                  workdir: Path) -> CapacityRow:
    """Preload, register, start k workers at once, time until all queries are caught up."""
    config = fresh_config(bootstrap)
    queries = query_set(args.queries)
    names = list(queries)
    sent = preload(config, queries, itertools.islice(edge_transactions(args.seed, args.nodes),
                                                      args.tx))
    watch = Watch(config)
    cpu = children_cpu_s()
    try:
        with fleet(config, k, workdir, args) as workers:
            started = time.monotonic()
            for worker in workers:
                worker.start()
            first = wait_progress(watch, names, -1, workers, CAPACITY_TIMEOUT_S)
            done = wait_progress(watch, names, sent - 1, workers, CAPACITY_TIMEOUT_S)
    finally:
        watch.close()
    seconds = done - started
    return CapacityRow(k, sent, len(names), first - started, seconds,
                       sent * len(names) / seconds, 1.0, children_cpu_s() - cpu,
                       dict(sorted(watch.writers(names).items())))


def children_cpu_s() -> float:
    """User + system CPU seconds of the child processes reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def capacity_scenario(bootstrap: str, args: argparse.Namespace,
                      workdir: Path) -> list[CapacityRow]:
    """One capacity run per fleet size, each on topics of its own."""
    rows: list[CapacityRow] = []
    for k in args.workers:
        log(f"capacity: {k} worker(s), {args.tx:,} tx, {args.queries} queries")
        row = capacity_once(bootstrap, k, args, workdir)
        row.speedup = rows[0].seconds / row.seconds if rows else 1.0
        log(f"capacity: {k} worker(s) caught up in {row.seconds:.1f} s")
        rows.append(row)
    return rows


def takeover_once(watch: Watch, queries: Sequence[str], victim: WorkerProcess,
                  survivor: WorkerProcess, sender: Sender, repeat: int,
                  settle_s: float) -> TakeoverRow:
    """Kill -9 `victim`; time until the survivor holds every query partition, and until
    every query passes the log end as it was at the kill."""
    watch.refresh()
    moved = watch.writers(queries)[victim.transactional_id]
    wanted = {survivor.client_id: sum(watch.holders().values())}
    end = watch.last_tx()
    logged = survivor.log.stat().st_size
    victim.kill()
    killed, killed_at = time.monotonic(), time.time()
    reassigned = wait_assignment(watch, lambda held: held == wanted, [survivor],
                                 TAKEOVER_TIMEOUT_S)
    done = wait_progress(watch, queries, end + 1, [survivor], TAKEOVER_TIMEOUT_S, sender)
    with survivor.log.open("rb") as lines:
        lines.seek(logged)
        steps = lines.read().decode(errors="replace")
    log(timeline(steps, killed_at, {"reassigned (the group, as described)": reassigned - killed,
                                    "every query past the log end": done - killed}))
    return TakeoverRow(repeat, victim.worker_id, moved, end, settle_s, reassigned - killed,
                       done - killed, logged_seconds(FENCED, steps),
                       logged_seconds(PROGRESS_READ, steps), logged_seconds(VIEWS_READ, steps),
                       sum(int(records) for records in VIEW_RECORDS.findall(steps)))


def timeline(steps: str, killed_at: float, seen: dict[str, float]) -> str:
    """The survivor's log lines after the kill and what the benchmark saw, in seconds from the
    kill (the log's times are wall-clock milliseconds)."""
    events = [(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() - killed_at,
               message[:110]) for stamp, message in LOG_LINE.findall(steps)]
    events += [(seconds, f"[bench] {what}") for what, seconds in seen.items()]
    return "\n".join(f"  {seconds:+6.2f} s  {message}" for seconds, message in sorted(events))


def started_from(worker: WorkerProcess) -> str:
    """Which snapshot the worker's log says it loaded at its (first) start."""
    loaded = SNAPSHOT_LOADED.search(worker.log.read_text(errors="replace"))
    return f"the snapshot at tx {loaded[1]}" if loaded else "no snapshot: the whole log"


def logged_seconds(pattern: re.Pattern[str], text: str) -> float:
    """The seconds a worker's log lines report for one step, summed."""
    return sum(float(seconds) for seconds in pattern.findall(text))


def takeover_scenario(bootstrap: str, args: argparse.Namespace,
                      workdir: Path) -> tuple[list[TakeoverRow], float]:
    """Two workers under a steady stream; kill one, time, restart it, settle; repeat.
    Also returns the rate the stream was actually sent at."""
    config = fresh_config(bootstrap)
    queries = query_set(args.queries)
    names = list(queries)
    stream = edge_transactions(args.seed, args.nodes)
    preload(config, queries, itertools.islice(stream, args.warmup_tx))
    sender = Sender(config, stream, args.rate)
    watch = Watch(config)
    rows: list[TakeoverRow] = []
    try:
        with fleet(config, 2, workdir, args) as workers:
            # One worker replays the warm-up history (snapshotting it into the shared store),
            # then the other starts from its newest snapshot, as a worker added to a running
            # fleet does: one replay of 10^6 transactions, not two at once on shared cores.
            history_s = args.warmup_tx / CATCH_UP_TX_S
            workers[0].start()
            sender.start()
            replay_s = settle(watch, names, workers[:1], sender, SETTLE_TIMEOUT_S + history_s)
            log(f"{workers[0].worker_id} replayed the history in {replay_s:.1f} s")
            workers[1].start()
            for repeat in range(1, args.repeats + 1):
                settle_s = settle(watch, names, workers, sender, SETTLE_TIMEOUT_S)
                if repeat == 1:
                    log(f"{workers[1].worker_id} started from {started_from(workers[1])}")
                victim, survivor = workers[(repeat - 1) % 2], workers[repeat % 2]
                log(f"takeover {repeat}: settled in {settle_s:.1f} s; kill -9 {victim.worker_id}")
                rows.append(takeover_once(watch, names, victim, survivor, sender, repeat,
                                          settle_s))
                log(f"takeover {repeat}: all queries producing {rows[-1].seconds:.1f} s later")
                if repeat < args.repeats:
                    victim.start()
    finally:
        sender.halt.set()
        sender.join()
        watch.close()
    return rows, sender.achieved()


# --- reporting ------------------------------------------------------------------------------


def capacity_table(rows: Sequence[CapacityRow]) -> str:
    headers = ["workers", "tx", "queries", "first progress s", "caught up s",
               "tx×queries/s", "speedup", "worker CPU s", "queries per worker"]
    return markdown_table(headers, [
        [str(r.workers), f"{r.transactions:,}", str(r.queries), f"{r.first_progress_s:.1f}",
         f"{r.seconds:.1f}", f"{r.tx_queries_per_s:,.0f}", f"{r.speedup:.2f}x",
         f"{r.cpu_s:.1f}",
         " / ".join(str(n) for n in r.queries_per_worker.values())]
        for r in rows
    ])


def takeover_table(rows: Sequence[TakeoverRow]) -> str:
    headers = ["repeat", "killed", "queries moved", "log end at kill", "settle s",
               "reassigned s", "fence s", "progress s", "views s", "view records", "takeover s"]
    return markdown_table(headers, [
        [str(r.repeat), r.killed, str(r.moved), f"{r.log_end:,}", f"{r.settle_s:.1f}",
         f"{r.reassigned_s:.1f}", f"{r.fence_s:.2f}", f"{r.progress_s:.2f}",
         f"{r.views_s:.2f}", f"{r.view_records:,}", f"{r.seconds:.1f}"]
        for r in rows
    ])


# --- command line ---------------------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--tx", type=int, default=10_000,
                        help="capacity: preloaded transactions (default 10000)")
    parser.add_argument("--queries", type=int, default=30, help="registered queries (default 30)")
    parser.add_argument("--workers", type=positive_ints, default=[1, 2, 3],
                        help="capacity: fleet sizes (default 1,2,3)")
    parser.add_argument("--rate", type=float, default=100.0,
                        help="takeover: transactions per second (default 100)")
    parser.add_argument("--warmup-tx", type=int, default=2000,
                        help="takeover: transactions preloaded before the stream (default 2000)")
    parser.add_argument("--repeats", type=int, default=3, help="takeover: kills (default 3)")
    parser.add_argument("--nodes", type=int, default=50, help="graph nodes (default 50)")
    parser.add_argument("--tick-max-tx", type=int,
                        help="the workers' --tick-max-tx (default: the worker's own)")
    parser.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic",
                        help="the workers' consumer group protocol (consumer: KIP-848)")
    parser.add_argument("--session-timeout-ms", type=int,
                        help="the workers' session timeout (default: the worker's own)")
    parser.add_argument("--only", choices=["capacity", "takeover"], help="run one scenario")
    parser.add_argument("--seed", type=int, default=42, help="stream seed (default 42)")
    parser.add_argument("--workdir", type=Path,
                        help="worker logs and snapshots (default a new temp dir, kept)")
    args = parser.parse_args(argv)
    if min(args.tx, args.queries, args.repeats, args.warmup_tx + 1, args.tick_max_tx or 1) < 1:
        parser.error("--tx, --queries, --repeats and --tick-max-tx must be positive")
    if args.rate <= 0 or args.nodes < 2:
        parser.error("--rate must be positive and --nodes at least 2")
    return args


def kept_workdir(args: argparse.Namespace, bench: str) -> Path:
    """``--workdir``, or a new temporary directory kept after the run (its worker logs are
    what a reader of the numbers looks at), set back into ``args`` for the results file."""
    workdir = args.workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"deltalog-{bench}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir


def run(args: argparse.Namespace) -> None:
    """Start a broker, run the scenarios, print the tables and write the JSON."""
    output = Results("fleet", args)
    workdir = kept_workdir(args, "fleet")
    print(f"{os.cpu_count()} cores; {args.queries} queries ({', '.join(SHAPES)}) over "
          f"{args.nodes} nodes; worker logs in {workdir}")
    payload: dict[str, Any] = {
        "cores": os.cpu_count(),
        "queries": query_set(args.queries),
    }
    log("starting a local Kafka broker")
    with LocalBroker() as broker:
        if args.only in (None, "capacity"):
            capacity = capacity_scenario(broker.bootstrap_servers, args, workdir)
            print()
            print(capacity_table(capacity))
            payload["capacity"] = [asdict(r) for r in capacity]
        if args.only in (None, "takeover"):
            takeover, rate = takeover_scenario(broker.bootstrap_servers, args, workdir)
            median = statistics.median(r.seconds for r in takeover)
            verdict = "meets" if median <= TAKEOVER_TARGET_S else "MISSES"
            print()
            print(takeover_table(takeover))
            print()
            print(f"takeover median {median:.1f} s at {rate:.0f} tx/s sent ({verdict} the "
                  f"<= {TAKEOVER_TARGET_S:g} s target)")
            payload["takeover"] = {"rows": [asdict(r) for r in takeover], "median_s": median,
                                   "target_s": TAKEOVER_TARGET_S, "sent_tx_per_s": rate}
    output.write(payload)
