"""Reading a query's committed view: its view topic against integrating its change stream.

1. Start a local broker and one worker (ticks of one transaction); register the two-path
   query over a graph of ``--nodes`` nodes, whose result stays small while its history grows.
2. At each count of ``--tx`` transactions sent (edges coming and going), once committed: time
   reading the view topic (:func:`workers.kafka.views.read_views`, what a takeover and
   ``subscribe`` do) and integrating the whole change stream (what they did before), the
   median of ``--repeat`` reads each, and check that both give the same view.

    python -m bench views [--tx 1000,4000,16000] [--nodes 30] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from itertools import islice
from pathlib import Path

from bench.harness import csv_list, markdown_table, mismatch
from workers.config import WorkerConfig, from_env
from workers.kafka.broker import LocalBroker
from workers.kafka.clients import QueryAdmin, TxProducer, follow, progress_table
from workers.kafka.views import read_views
from workers.runtime.process import WorkerProcess
from workers.testing import edge_transactions
from workers.zset import ZSet, add_into
from workers.zset.row import Row

TWO_PATH = "{:find [?a ?c] :where [[?a :g/to ?b] [?b :g/to ?c]]}"
WAIT_S = 600.0


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--tx", type=csv_list, default=["1000", "4000", "16000"],
                        help="transaction counts at which to read (comma-separated)")
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Grow the history, reading the view both ways at each step."""
    counts = sorted(int(n) for n in args.tx)
    stream = list(islice(edge_transactions(seed=7, nodes=args.nodes), counts[-1]))
    rows = []
    with tempfile.TemporaryDirectory() as scratch, LocalBroker(Path(scratch) / "kafka") as broker:
        config = from_env({}, bootstrap_servers=broker.bootstrap_servers)
        with WorkerProcess(config, Path(scratch) / "snapshots", Path(scratch) / "worker.log",
                           "bench", tick_max_tx=1) as worker:
            worker.start()
            QueryAdmin(config).add("paths", TWO_PATH)
            _wait_committed(config, -1)
            sent = 0
            with TxProducer(config) as producer:
                for count in counts:
                    for tx in stream[sent:count]:
                        producer.send(tx)
                    producer.flush()
                    sent = count
                    _wait_committed(config, count - 1)
                    rows.append(_measure(config, count, args.repeat))
    print(markdown_table(["transactions", "view rows", "change records", "view topic (ms)",
                          "change stream (ms)"], rows))


def _measure(config: WorkerConfig, count: int, repeat: int) -> list[str]:
    view_s, view = _median(lambda: read_views(config, ["paths"])["paths"].rows, repeat)
    stream_s, integrated = _median(lambda: _integrated(config), repeat)
    if view != integrated:
        raise mismatch(f"after {count} transactions the view topic and the change stream "
                       "differ", view, integrated, ("view topic", "change stream"))
    records = sum(1 for _ in follow(config, "paths", stop_at_end=True))
    return [f"{count:,}", f"{len(view):,}", f"{records:,}", f"{view_s * 1000:.0f}",
            f"{stream_s * 1000:.0f}"]


def _integrated(config: WorkerConfig) -> ZSet[Row]:
    view: ZSet[Row] = {}
    for change in follow(config, "paths", stop_at_end=True):
        add_into(view, {change.row: change.weight})
    return view


def _median(read: Callable[[], ZSet[Row]], repeat: int) -> tuple[float, ZSet[Row]]:
    """The median wall-clock time of ``repeat`` reads (each with its own consumer), and what
    the last one read."""
    times, result = [], {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = read()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _wait_committed(config: WorkerConfig, tx: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while (progress := progress_table(config).get("paths")) is None or progress["tx_last"] < tx:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker did not reach tx {tx}")
        time.sleep(0.2)
