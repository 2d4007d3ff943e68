"""End to end through the local broker: single-edge triangle transactions per worker.

1. Start a local broker and one worker process; register the triangle query; load the
   PEGASE grid (14,232 edges) as transactions of 2,000 edges.
2. Throughput: send N single-edge transactions (random adds and retracts) as fast as the
   producer can, and time until the worker's committed progress reaches the last one.
3. Latency: send at half that rate (``--load``); for each transaction, the time from its send to the
   moment the first progress record covering it is visible to a ``read_committed`` consumer.
   Then where it went, per tick of the latency run: the worker's phases
   (:mod:`workers.runtime.phases`, read from its ``DELTALOG_TICK_PHASES`` file) and the time
   from each commit to its progress record reaching this consumer — median, p99 and max.

    python -m bench pipeline [--tx 20000] [--latency-seconds 20] [--load 0.5 | --rate TX_S]
                             [--profile PATH]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.data import Edge, load_pegase_edges
from workers.config import WorkerConfig, from_env
from workers.edn import keyword
from workers.kafka.avro import AvroCodec
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin, TxProducer
from workers.kafka.consume import arrived
from workers.kafka.messages import transaction_to_avro
from workers.kafka.topics import Topics
from workers.runtime.phases import PHASES, PHASES_ENV
from workers.runtime.process import WorkerProcess, cpu_s

TRIANGLE = "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}"
ADD, RETRACT, TO = keyword("db/add"), keyword("db/retract"), keyword("g/to")
LOAD_CHUNK = 2000
PACE_S = 0.005  # the latency run sends the transactions due every 5 ms


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--tx", type=int, default=20000, help="transactions in the throughput run")
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    parser.add_argument("--load", type=float, default=0.5,
                        help="latency run rate as a fraction of the measured throughput")
    parser.add_argument("--rate", type=float, default=None,
                        help="latency run rate in tx/s instead (before/after comparisons: the "
                             "measured throughput varies by a third on a shared machine)")
    parser.add_argument("--profile", type=Path, default=None,
                        help="run the worker under cProfile, its statistics written here")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Load the grid through a worker, then measure throughput and latency."""
    edges = load_pegase_edges()
    with tempfile.TemporaryDirectory() as scratch, LocalBroker(Path(scratch) / "kafka") as broker:
        config = from_env({}, bootstrap_servers=broker.bootstrap_servers)
        phases = Path(scratch) / "phases.tsv"
        with WorkerProcess(config, Path(scratch) / "snapshots", Path(scratch) / "worker.log",
                           "bench", env={PHASES_ENV: str(phases)}, profile=args.profile) as worker:
            worker.start()
            QueryAdmin(config).add("tri", TRIANGLE)
            progress = ProgressWatch(config)
            producer = TxProducer(config)
            for i in range(0, len(edges), LOAD_CHUNK):
                producer.send([[ADD, u, TO, v] for u, v in edges[i:i + LOAD_CHUNK]])
            producer.flush()
            last = progress.wait_for(_end_offset(config) - 1)
            print(f"loaded {len(edges)} edges (worker at tx {last})")
            stream = edge_stream(edges, args.tx + int(args.latency_seconds * 20000), seed=1)
            rate = _throughput(config, progress, stream[:args.tx])
            processes = {"broker": broker.pid,
                         "worker": worker.process.pid if worker.process else None}
            cpu = _cpu(processes)
            started = time.perf_counter()
            first, sent = _latency(config, progress, stream[args.tx:],
                                   args.rate or rate * args.load, args.latency_seconds)
            _print_cpu(processes, cpu, time.perf_counter() - started, sent)
            _phases(phases, progress, first)


def edge_stream(edges: list[tuple[int, int]], count: int, seed: int) -> list[bytes]:
    """Encoded single-edge transactions: retract a present edge or add it back."""
    rng, codec = random.Random(seed), AvroCodec("transaction")
    present, stream = set(edges), []
    absent: list[Edge] = []
    for _ in range(count):
        if absent and rng.random() < 0.5:
            edge = absent.pop(rng.randrange(len(absent)))
            present.add(edge)
            op = ADD
        else:
            edge = rng.choice(edges)
            while edge not in present:
                edge = rng.choice(edges)
            present.discard(edge)
            absent.append(edge)
            op = RETRACT
        stream.append(codec.encode(transaction_to_avro([[op, edge[0], TO, edge[1]]])))
    return stream


def _throughput(config: WorkerConfig, progress: ProgressWatch, stream: list[bytes]) -> float:
    producer = Producer(config.kafka(**{"linger.ms": 5, "enable.idempotence": True}))
    topic = Topics(config.topic_prefix).tx
    start = time.perf_counter()
    for value in stream:
        _produce(producer, topic, value)
    producer.flush(60)
    sent = time.perf_counter() - start
    progress.wait_for(_end_offset(config) - 1)
    elapsed = time.perf_counter() - start
    rate = len(stream) / elapsed
    print(f"throughput: {len(stream)} tx in {elapsed:.2f} s = {rate:,.0f} tx/s "
          f"(producer alone {len(stream) / sent:,.0f} tx/s)")
    return rate


def _latency(config: WorkerConfig, progress: ProgressWatch, stream: list[bytes], rate: float,
             seconds: float) -> tuple[int, int]:
    """Send ``stream`` at ``rate`` for ``seconds``; print the latencies; return the first
    offset sent and the number sent."""
    # The transactions due every PACE_S leave together, ~1 ms after the first: with
    # linger.ms 0 the bench's producer thread woke for each record and took ~0.17 of the
    # machine's two cores from the broker and the worker it measures (the bench's CPU
    # 37-39 -> 22-28 us a transaction at half load, its produce requests ~260 -> ~130 a
    # second; docs/benchmarks.md, thirteenth session).  The linger counts in the latency.
    producer = Producer(config.kafka(**{"linger.ms": 1, "enable.idempotence": True}))
    topic = Topics(config.topic_prefix).tx
    sent_at: dict[int, float] = {}
    acked_after: list[float] = []

    def delivered(error: object, message: object, started: float) -> None:
        sent_at[message.offset()] = started  # type: ignore[attr-defined]
        acked_after.append((time.perf_counter() - started) * 1000)

    # An idempotent producer gets its producer id with its first send (up to ~1 s on a fresh
    # broker); an empty transaction, a no-op for the worker, takes that out of the numbers.
    producer.produce(topic, AvroCodec("transaction").encode({"ops": [], "source": "warm-up"}))
    producer.flush(60)
    count = min(len(stream), int(rate * seconds))
    start, sent = time.perf_counter(), 0
    while sent < count:  # send what is due every PACE_S, waiting in between (no busy wait)
        now = time.perf_counter()
        due = min(count, int((now - start) * rate) + 1)
        for value in stream[sent:due]:
            producer.produce(topic, value, on_delivery=partial(delivered, started=now))
        sent = due
        # The wait serves the acknowledgements as they come: served once per PACE_S (and
        # librdkafka's Message.latency() counts to the call, not to the ack), every ack took
        # 5 ms.
        while (left := now + PACE_S - time.perf_counter()) > 0:
            producer.poll(left)
    producer.flush(60)
    progress.wait_for(max(sent_at))
    timeline = sorted((t, (progress.seen_at(offset) - t) * 1000) for offset, t in sent_at.items())
    if os.environ.get("DELTALOG_BENCH_TIMELINE"):
        for second in range(int(seconds) + 1):
            window = [ms for t, ms in timeline if second <= t - start < second + 1]
            if window:
                print(f"  second {second:>3}: max {max(window):7.1f} ms over {len(window)} tx")
    latencies = sorted(ms for _, ms in timeline)
    p50 = statistics.median(latencies)
    p99 = _p99(latencies)
    print(f"latency at {rate:,.0f} tx/s ({len(latencies)} tx): median {p50:.1f} ms, "
          f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms")
    acked_after.sort()
    print(f"  of which produce -> broker ack: median {statistics.median(acked_after):.1f} ms, "
          f"p99 {_p99(acked_after):.1f} ms, max {acked_after[-1]:.1f} ms")
    return min(sent_at), len(sent_at)


def _cpu(processes: dict[str, int | None]) -> dict[str, float]:
    """CPU seconds used so far by each process (this one as ``bench``)."""
    return {"bench": time.process_time(),
            **{name: cpu_s(pid) for name, pid in processes.items() if pid is not None}}


def _print_cpu(processes: dict[str, int | None], before: dict[str, float], seconds: float,
               sent: int) -> None:
    """Each process's CPU over the latency run: cores, and per transaction sent (on a
    shared machine a robust measure of what a change costs where, as wall times are not)."""
    used = {name: cpu - before[name] for name, cpu in _cpu(processes).items()}
    print("  CPU over the run: " + ", ".join(
        f"{name} {cpu / seconds:.2f} cores ({cpu / sent * 1e6:.0f} us/tx)"
        for name, cpu in used.items()))


def _phases(path: Path, progress: ProgressWatch, first: int) -> None:
    """The worker's ticks of the latency run (those ending at ``first`` or later), by phase:
    median, p99 and max; then the time from each commit to its progress record seen here."""
    if not path.exists():  # a worker from before the phases were traced
        return
    ticks = [line.split("\t") for line in path.read_text().splitlines()]
    ticks = [tick for tick in ticks if int(tick[0]) >= first]
    if not ticks:
        return
    span = int(ticks[-1][0]) - int(ticks[0][0])
    print(f"  per tick of the worker ({len(ticks)} ticks, "
          f"{span / max(len(ticks) - 1, 1):.1f} tx each): median / p99 / max ms")
    columns = {phase: sorted(float(tick[2 + i]) * 1000 for tick in ticks)
               for i, phase in enumerate(PHASES)}
    columns["total (no queued)"] = sorted(sum(float(value) for value in tick[3:]) * 1000
                                          for tick in ticks)
    # the previous tick's commit to this tick's first poll: bookkeeping and idle ticks
    columns["between ticks"] = sorted(
        max(float(b[1]) - float(a[1]) - sum(float(value) for value in b[3:]), 0.0) * 1000
        for a, b in itertools.pairwise(ticks))
    columns["commit -> seen here"] = sorted(
        (progress.seen_wall(int(tick[0])) - float(tick[1])) * 1000 for tick in ticks)
    for name, values in columns.items():
        print(f"    {name:<20} {statistics.median(values):7.1f} {_p99(values):7.1f} "
              f"{values[-1]:7.1f}")


def _p99(values: list[float]) -> float:
    """The 99th percentile of sorted ``values``."""
    return values[max(int(len(values) * 0.99) - 1, 0)]


def _produce(producer: Producer, topic: str, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value)
            return
        except BufferError:
            producer.poll(0.01)


def _end_offset(config: WorkerConfig) -> int:
    consumer = Consumer(config.kafka(**{"group.id": "bench-watermark"}))
    _, high = consumer.get_watermark_offsets(TopicPartition(Topics(config.topic_prefix).tx, 0),
                                             timeout=10)
    consumer.close()
    return int(high)


class ProgressWatch:
    """Follows deltalog.progress (read_committed) and records when each tx became visible.

    Its fetches wait at the broker for the next committed record (a commit's markers
    complete them), rather than asking every few ms: ~200 fetches/s cost the broker
    CPU the worker's transactions needed."""

    def __init__(self, config: WorkerConfig) -> None:
        self._consumer = Consumer(config.kafka(**{
            "group.id": "bench-progress", "isolation.level": "read_committed",
            "fetch.wait.max.ms": 100, "enable.auto.commit": False}))
        self._consumer.assign([TopicPartition(Topics(config.topic_prefix).progress, 0, 0)])
        self._codec = AvroCodec("progress")
        self._marks: list[tuple[int, float, float]] = []  # (tx_last, seen at, Unix time)
        self._lock = threading.Lock()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        while True:
            messages = arrived(self._consumer, 1000, 0.1)
            seen, wall = time.perf_counter(), time.time()
            for message in messages:
                if message.error() is None and (value := message.value()) is not None:
                    tx_last = self._codec.decode(value)["tx_last"]
                    with self._lock:
                        if not self._marks or tx_last > self._marks[-1][0]:
                            self._marks.append((tx_last, seen, wall))

    def wait_for(self, offset: int, timeout_s: float = 600) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if self._marks and self._marks[-1][0] >= offset:
                    return self._marks[-1][0]
            time.sleep(0.01)
        raise TimeoutError(f"the worker did not reach tx {offset}")

    def seen_at(self, offset: int) -> float:
        with self._lock:
            return next(at for tx_last, at, _ in self._marks if tx_last >= offset)

    def seen_wall(self, offset: int) -> float:
        """When (Unix time) the first progress record at or after ``offset`` was seen."""
        with self._lock:
            return next(wall for tx_last, _, wall in self._marks if tx_last >= offset)
