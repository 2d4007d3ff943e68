"""What ending a possibly hanging transaction costs a worker: ``ResultSink.sweep`` after a
tick (``workers.kafka.hanging``), as every lost tick and every start pays it.

1. Start a local broker; create the topics of ``--queries`` queries.
2. ``--repeat`` times: commit a tick that writes one change, one view row and the progress
   of every query (the topics a lost tick would have written), then time the sweep over
   the topics it wrote — one aborted transaction over all their partitions.

    python -m bench sweep [--queries 13] [--repeat 12]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka.admin import AdminClient

from bench.harness import log, markdown_table
from workers.config import from_env
from workers.kafka.broker import LocalBroker
from workers.kafka.sink import ResultSink
from workers.kafka.topics import Topics, create, ensure_topics

ROW = (1, 2, 3)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--queries", type=int, default=13,
                        help="queries the lost tick wrote (a results and a view topic each)")
    parser.add_argument("--repeat", type=int, default=12)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """One broker; ``--repeat`` ticks, each followed by a timed sweep."""
    with tempfile.TemporaryDirectory() as scratch, \
            LocalBroker(Path(scratch) / "kafka") as broker:
        config = from_env({}, bootstrap_servers=broker.bootstrap_servers)
        topics = Topics(config.topic_prefix)
        queries = [f"q{i:03d}" for i in range(args.queries)]
        with AdminClient(config.kafka()) as admin:
            ensure_topics(admin, topics, config.query_partitions)
            create(admin, {topic: settings for query in queries
                           for topic, settings in topics.of_query(query).items()})
        seconds = []
        with ResultSink(config, topics, "deltalog-worker-bench") as sink:
            sink.init()
            for _ in range(args.repeat):
                sink.begin()
                for query in queries:
                    sink.change(query, 0, ROW, 1, 0, 0)
                    sink.view(query, 0, ROW, 1, 0)
                    sink.progress(query, 0, 0)
                sink.commit()
                written = sink.written
                started = time.perf_counter()
                sink.sweep(written)
                seconds.append(time.perf_counter() - started)
        log(f"sweep: {len(written)} topics, {args.repeat} sweeps")
    print(markdown_table(["topics", "median ms", "min ms", "max ms"], [[
        str(len(written)), f"{statistics.median(seconds) * 1000:.1f}",
        f"{min(seconds) * 1000:.1f}", f"{max(seconds) * 1000:.1f}"]]))
