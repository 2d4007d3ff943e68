"""Helpers for pipeline tests: a seeded transaction stream, waits for committed progress,
and the oracle that checks a committed change stream tick by tick.  The worker runs in its
own process (:class:`workers.runtime.process.WorkerProcess`)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from itertools import islice
from typing import Any

from workers.config import WorkerConfig, from_env
from workers.edn import keyword
from workers.errors import WorkersError
from workers.kafka.clients import Change, TxProducer, follow, progress_table
from workers.runtime.process import WorkerProcess
from workers.testing import ReferenceDb, edge_transactions

ADD = keyword("db/add")
TO = keyword("g/to")
TRIANGLE = "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}"
TWO_PATH = "{:find [?a ?c] :where [[?a :g/to ?b] [?b :g/to ?c]]}"
# A recursive rule with aggregates: derived relations and groups the worker must rebuild;
# (distinct ?b) and (max 2 ?b) travel as the Set and Vector arms of the Avro Value union.
REACH_COUNT = ("{:find [?a (count ?b) (distinct ?b) (max 2 ?b)] :where [(reach ?a ?b)] :rules "
               "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]}")
WAIT_S = 120.0  # longest a test waits for the worker to commit what it was sent


def isolated_config(bootstrap: str, **overrides: Any) -> WorkerConfig:
    """Settings with a fresh topic prefix, so tests on one broker never share topics."""
    return from_env({}, bootstrap_servers=bootstrap,
                    topic_prefix=f"t{uuid.uuid4().hex[:10]}", **overrides)


def http_get(url: str) -> tuple[int, bytes]:
    """A GET's status and body, error statuses too (the health endpoints and Prometheus
    explain themselves in the body); ``(0, b"")`` while nothing listens there."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, bytes(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, bytes(error.read())
    except OSError:
        return 0, b""


def random_stream(seed: int, count: int, nodes: int = 7) -> list[list[list[Any]]]:
    """``count`` transactions over a small graph (:func:`workers.testing.edge_transactions`)."""
    return list(islice(edge_transactions(seed, nodes), count))


Record = str | bytes | list[Any]  # a transaction, its EDN text, or bytes no decoder reads


def with_bad_records(seed: int, count: int, every: int) -> tuple[list[Record], set[int]]:
    """A schema declaring ``:age`` a long, then ``count`` transactions with a bad record
    after every ``every``-th (undecodable bytes, or a type error), and the offsets of the
    records the engine must refuse: those, and the stream's own refused transactions (a
    conflict, by the oracle) — each a dead letter."""
    records: list[Record] = ['[{:db/ident :age :db/valueType :db.type/long}]']
    oracle = ReferenceDb()
    refused = set()
    for i, tx in enumerate(random_stream(seed, count)):
        if not oracle.transact(tx):
            refused.add(len(records))
        records.append(tx)
        if i % every == 4:
            records.append(b"garbage" if i % 2 else '[[:db/add 1 :age "thirty"]]')
    return records, refused | {offset for offset, record in enumerate(records)
                               if isinstance(record, bytes) or "thirty" in str(record)}


def send_stream(config: WorkerConfig, stream: Sequence[Any], batch: int = 1,
                pause_s: float = 0.0) -> None:
    """Send ``stream``, each ``batch`` acknowledged before the next (then ``pause_s``): while
    the broker is away the producer keeps the records queued and retries, so waiting longer
    is all it takes — nothing is sent twice."""
    with TxProducer(config) as producer:
        for start in range(0, len(stream), batch):
            for tx in stream[start:start + batch]:
                producer.send(tx)
            while True:
                try:
                    producer.flush()
                    break
                except WorkersError:
                    continue
            time.sleep(pause_s)


def committed_progress(config: WorkerConfig, queries: Sequence[str]) -> int:
    """The committed tx offset every one of ``queries`` has reached: -1 once all are taken up
    on an empty log, -2 while some is not taken up yet."""
    table = progress_table(config)
    done = [table[q]["tx_last"] for q in queries if q in table]
    return min(done) if len(done) == len(queries) else -2


def wait_committed(config: WorkerConfig, queries: Sequence[str], tx_last: int,
                   worker: WorkerProcess | None = None) -> None:
    """Wait until every query's progress reaches ``tx_last`` (-1: until every query is taken
    up, so a stream sent after it is seen tick by tick, not as one bootstrap)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        done = committed_progress(config, queries)
        if done >= tx_last:
            return
        assert worker is None or worker.alive(), f"worker died ({worker.log}):\n{worker.tail(40)}"
        assert time.monotonic() < deadline, f"progress {done}, waiting for tx {tx_last}"
        time.sleep(0.2)


def committed_changes(config: WorkerConfig, query: str) -> list[Change]:
    """Every change row the workers committed, from the stream's first record (the raw
    history: what exactly-once is checked on, not a consumer's view-first reading)."""
    return list(follow(config, query, stop_at_end=True, from_beginning=True))


def reference_states(stream: Sequence[list[list[Any]]]) -> list[frozenset[tuple[Any, ...]]]:
    """The database after each transaction (offset i), refused ones leaving it unchanged."""
    db = ReferenceDb()
    states = []
    for tx in stream:
        db.transact(tx)
        states.append(frozenset(db.datoms))
    return states
