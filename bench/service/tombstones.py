"""What a view topic holds after churn: the records a view read meets, by the topic's
``delete.retention.ms`` (how long the cleaner keeps tombstones and transaction markers).

1. Start a local broker; create a view topic with deltalog's settings (``topics.VIEW``) but
   the ``delete.retention.ms`` under test.
2. Write ``--ticks`` ticks the way a worker does (one transaction each, through
   :class:`~workers.kafka.sink.ResultSink`): ``--rows`` rows per tick, half new rows, half
   tombstones of the oldest, so the view stays ``--view-rows`` rows while the rows ever
   deleted grow with the history; then pause ``--pause-s`` (past the short retention), and
   write as many ticks again (the cleaner cleans again only once there is as much dirty).
3. Count the records a read from the beginning meets (tombstones apart) and time
   :func:`~workers.kafka.views.read_views` (median of ``--repeat``), checking the view.

    python -m bench tombstones [--retention-ms 86400000,15000] [--ticks 3000] [--rows 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka.admin import AdminClient

from bench.harness import csv_list, log, markdown_table, mismatch
from workers.config import WorkerConfig, from_env
from workers.kafka.broker import LocalBroker
from workers.kafka.compacted import CompactedReader
from workers.kafka.sink import ResultSink
from workers.kafka.topics import VIEW, Topics, create
from workers.kafka.views import read_views

QUERY = "churn"


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--retention-ms", type=csv_list, default=["86400000", "15000"],
                        help="delete.retention.ms values to compare (comma-separated)")
    parser.add_argument("--ticks", type=int, default=3000, help="ticks per phase (2 phases)")
    parser.add_argument("--rows", type=int, default=20, help="rows written per tick")
    parser.add_argument("--view-rows", type=int, default=500)
    parser.add_argument("--pause-s", type=float, default=30.0,
                        help="pause between the phases (longer than the short retention)")
    parser.add_argument("--repeat", type=int, default=5)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """One broker per retention; the same churn on each."""
    rows = []
    for retention in args.retention_ms:
        log(f"tombstones: delete.retention.ms={retention}")
        with tempfile.TemporaryDirectory() as scratch, \
                LocalBroker(Path(scratch) / "kafka") as broker:
            config = from_env({}, bootstrap_servers=broker.bootstrap_servers)
            rows.append([retention, *_measure(config, args, retention)])
    print(markdown_table(["delete.retention.ms", "ticks", "view rows", "records read",
                          "of which tombstones", "read_views (ms)"], rows))


def _measure(config: WorkerConfig, args: argparse.Namespace, retention: str) -> list[str]:
    topics = Topics(config.topic_prefix)
    create(AdminClient(config.kafka()),
           {topics.view(QUERY): {**VIEW, "delete.retention.ms": retention}})
    view: deque[int] = deque()
    with ResultSink(config, topics, "bench-tombstones") as sink:
        sink.init()
        _churn(sink, view, args, range(args.ticks))
        time.sleep(args.pause_s)
        _churn(sink, view, args, range(args.ticks, 2 * args.ticks))
    with CompactedReader(config, topics.view(QUERY)) as reader:
        records = reader.catch_up()
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        rows = read_views(config, [QUERY])[QUERY].rows
        times.append(time.perf_counter() - start)
    expected = {(key,): 1 for key in view}
    if rows != expected:
        raise mismatch("the view read differs from the rows written", rows, expected,
                       ("read", "written"))
    tombstones = sum(1 for record in records if record.value is None)
    return [f"{2 * args.ticks:,}", f"{len(view):,}", f"{len(records):,}", f"{tombstones:,}",
            f"{statistics.median(times) * 1000:.0f}"]


def _churn(sink: ResultSink, view: deque[int], args: argparse.Namespace,
           ticks: range) -> None:
    """Each tick one transaction: new rows in, and (once the view is full) the oldest out."""
    for tick in ticks:
        sink.begin()
        for i in range(args.rows // 2):
            row = tick * args.rows + i
            sink.view(QUERY, 0, (row,), 1, tick)
            view.append(row)
            if len(view) > args.view_rows:
                sink.view(QUERY, 0, (view.popleft(),), 0, tick)
        sink.view_marker(QUERY, 0, tick)
        sink.commit()
