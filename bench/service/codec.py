"""A worker's per-record Avro work without a broker: transactions decoded, change rows encoded.

The two halves of the hot path of `bench pipeline`'s worker, timed apart:

- decode: the pipeline's single-edge transactions (`pipeline.edge_stream`) through
  `AvroCodec.decode` and `transaction_from_avro`, as `BatchApplier` does (its cycle collector
  paused, as there);
- write: the PEGASE grid's directed triangles as change rows (weights +1 and -1, view weights
  1 and 0) through `RowRecords.change_and_view`, as `ResultSink` does before it produces.

Each is run `--repeats` times over the same records; the table gives the median µs a record,
of the thread's CPU time (the machine's other work counts less than in elapsed time).

    python -m bench codec [--records 20000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.data import Edge, load_pegase_edges
from bench.harness import log, markdown_table, timed
from bench.service.pipeline import edge_stream
from workers.collector import collector_paused
from workers.kafka.avro import AvroCodec
from workers.kafka.messages import transaction_from_avro
from workers.kafka.row_records import RowRecords

QUERY = "triangle"


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("--records", type=int, default=20000,
                        help="transactions decoded, and change rows written, a repeat")
    parser.add_argument("--repeats", type=int, default=7)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Time the decode and the write; print the median µs a record of each."""
    edges = load_pegase_edges()
    stream = edge_stream(edges, args.records, seed=1)
    codec = AvroCodec("transaction")
    decoded = [codec.decode(value) for value in stream]
    triangles = _triangles(edges)
    changes = [(triangles[i % len(triangles)], 1 if i % 2 else -1) for i in range(args.records)]
    records = RowRecords()

    def write() -> None:
        records.begin()  # one tick of a transaction
        for row, weight in changes:
            records.change_and_view(QUERY, 3, row, weight, max(weight, 0), 1000, 1900)

    timings = [
        ("decode: AvroCodec.decode", len(stream),
         _collector_paused(lambda: [codec.decode(value) for value in stream])),
        ("decode: transaction_from_avro", len(decoded),
         _collector_paused(lambda: [transaction_from_avro(record) for record in decoded])),
        ("decode: both", len(stream), _collector_paused(
            lambda: [transaction_from_avro(codec.decode(value)) for value in stream])),
        ("write: RowRecords.change_and_view", len(changes), write),
    ]
    table = [[name, f"{_median_us(call, count, args.repeats):.2f}"]
             for name, count, call in timings]
    print(markdown_table(["per record", "median µs"], table))


def _collector_paused(call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` without cycle collections: a batch's records are decoded so (its thousands of
    new containers would set collections off, and they would count)."""
    def paused() -> Any:
        with collector_paused():
            return call()
    return paused


def _median_us(call: Callable[[], Any], count: int, repeats: int) -> float:
    """The median over ``repeats`` calls of one call's CPU µs per record."""
    return statistics.median(timed(call, time.thread_time_ns)[0] / count / 1000
                             for _ in range(repeats))


def _triangles(edges: list[Edge]) -> list[tuple[int, int, int]]:
    """The graph's directed triangles ``a->b, a->c, b->c``: the triangle query's rows."""
    out: dict[int, set[int]] = {}
    for u, v in edges:
        out.setdefault(u, set()).add(v)
    found = [(a, b, c) for a, bs in out.items() for b in bs for c in bs & out.get(b, set())]
    log(f"{len(found)} triangles")
    return found
