"""The embedded demo: a small social graph streamed through live queries, changes printed.

It runs the same engine the worker runs, in-process and on embedded defaults, so a fresh
checkout shows deltalog working in seconds: every transaction prints, for each query it
changed, the rows that entered (+) and left (-) the result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workers.edn import dumps
from workers.engine import Engine
from workers.zset import signed

if TYPE_CHECKING:
    from workers.kafka.clients import QueryAdmin, TxProducer
    from workers.runtime.worker import Worker

QUERIES = {
    "adults": "[:find ?name ?age :where [?p :person/name ?name] [?p :person/age ?age]"
              " [?p :person/adult true]]",
    "friends-of-friends": "{:find [?a ?c] :where [[?x :person/name ?a] [?x :friend ?y]"
                          " [?y :friend ?z] [?z :person/name ?c]]}",
    "triangles": "{:find [?a ?b ?c] :where [[?a :friend ?b] [?a :friend ?c] [?b :friend ?c]]}",
}

TRANSACTIONS = [
    '[{:db/ident :person/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}'
    ' {:db/ident :person/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}'
    ' {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]',
    '[{:db/id :ivan :person/name "Ivan" :person/age 30 :person/adult true}'
    ' {:db/id :petr :person/name "Petr" :person/age 17}'
    ' {:db/id :olga :person/name "Olga" :person/age 25 :person/adult true}]',
    "[[:db/add :ivan :friend :petr] [:db/add :petr :friend :olga]]",
    "[[:db/add :ivan :friend :olga]]",
    "[[:db/add :petr :person/age 18] [:db/add :petr :person/adult true]]",
    "[[:db/retract :petr :friend :olga]]",
    "[[:db/retractEntity :olga]]",
]


def run_embedded_demo(strategy: str = "delta", executor: str = "local",
                      out: Callable[[str], None] = print) -> Engine:
    """Register the demo queries, replay the demo transactions and print every change, each
    transaction naming where its queries stepped (``local`` or ``spark``)."""
    engine = Engine(strategy=strategy, executor=executor)
    for name, text in QUERIES.items():
        engine.register(name, text)
        out(f"registered {name}: {text}")
    for text in TRANSACTIONS:
        changes = engine.transact(text)
        where = ", ".join(sorted({work.executor for work in engine.last_work.values()}))
        out(f"\ntx {engine.tx} ({f'stepped on {where}' if where else 'no query stepped'}): "
            f"{text}")
        for name, rows in sorted(changes.items()):
            for row, weight in sorted(rows.items(), key=lambda item: (-item[1], repr(item[0]))):
                out(f"  {name:<20} {signed(weight)} {dumps(row)}")
    out("\ncurrent results:")
    for name in QUERIES:
        shown = sorted(dumps(row) for row in engine.result(name))
        out(f"  {name:<20} {' '.join(shown) or '(empty)'}")
    return engine


# -- the main job: a local broker, a worker, live queries --------------------------------

# Zachary's karate club (1977), 78 friendships, each directed from the lower id.
KARATE = [(1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (1, 7), (1, 8), (1, 9), (1, 11), (1, 12),
          (1, 13), (1, 14), (1, 18), (1, 20), (1, 22), (1, 32), (2, 3), (2, 4), (2, 8),
          (2, 14), (2, 18), (2, 20), (2, 22), (2, 31), (3, 4), (3, 8), (3, 9), (3, 10),
          (3, 14), (3, 28), (3, 29), (3, 33), (4, 8), (4, 13), (4, 14), (5, 7), (5, 11),
          (6, 7), (6, 11), (6, 17), (7, 17), (9, 31), (9, 33), (9, 34), (10, 34), (14, 34),
          (15, 33), (15, 34), (16, 33), (16, 34), (19, 33), (19, 34), (20, 34), (21, 33),
          (21, 34), (23, 33), (23, 34), (24, 26), (24, 28), (24, 30), (24, 33), (24, 34),
          (25, 26), (25, 28), (25, 32), (26, 32), (27, 30), (27, 34), (28, 34), (29, 32),
          (29, 34), (30, 33), (30, 34), (31, 33), (31, 34), (32, 33), (32, 34), (33, 34)]
LIVE_QUERIES = {
    "triangles": "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}",
    "residents": "[:find ?name ?city :where [?p :person/name ?name] [?p :person/lives-in ?c]"
                 " [?c :city/name ?city]]",
}
PEOPLE = [
    '[{:db/ident :person/lives-in :db/valueType :db.type/ref'
    ' :db/cardinality :db.cardinality/one}'
    ' {:db/id :berlin :city/name "Berlin"} {:db/id :paris :city/name "Paris"}]',
    '[{:db/id :ivan :person/name "Ivan" :person/lives-in :berlin}'
    ' {:db/id :olga :person/name "Olga" :person/lives-in :paris}]',
    "[[:db/add :ivan :person/lives-in :paris]]",
    '[[:db/add :berlin :city/name "Berlin, Germany"] [:db/retract :berlin :city/name "Berlin"]]',
]
SHOWN_PER_QUERY = 12
CLEAR_LINE = "\r\033[K"  # a change line replaces the progress bar, which redraws below it
STREAM_PAUSE_S = 0.03  # pace the stream so the changes arrive tick by tick
METRICS_PORT = 9464
CATCH_UP_TIMEOUT_S = 60.0


def run_demo(strategy: str = "delta", executor: str = "local", spark_master: str | None = None,
             out: Callable[[str], None] = print) -> int:
    """Start a local broker and a worker, register live queries, stream transactions; the
    last lines say where the queries' steps ran (``executor``: local, spark or auto)."""
    import tempfile
    from pathlib import Path

    from workers.config import from_env
    from workers.kafka.broker import LocalBroker
    from workers.kafka.clients import QueryAdmin, TxProducer
    from workers.runtime.health import serve
    from workers.runtime.worker import Worker

    with tempfile.TemporaryDirectory(prefix="deltalog-demo-") as scratch:
        out("starting a local Apache Kafka broker (first run fetches its jars with Maven)...")
        with LocalBroker(Path(scratch) / "kafka") as broker:
            config = from_env(bootstrap_servers=broker.bootstrap_servers, worker_id="demo",
                              strategy=strategy, snapshot_dir=Path(scratch) / "snapshots",
                              executor=executor, spark_master=spark_master)
            # The Kafka clients close before the broker stops, or they log its absence.
            with Worker(config) as worker, QueryAdmin(config) as admin, \
                    TxProducer(config, source="deltalog demo") as producer:
                try:
                    serve(METRICS_PORT, worker.readiness)
                    metrics_url = f"http://127.0.0.1:{METRICS_PORT}/metrics"
                except OSError as err:
                    metrics_url = f"not served (port {METRICS_PORT}: {err.strerror})"
                out(f"broker {broker.bootstrap_servers}; metrics {metrics_url}; executor "
                    f"{executor}" + (f" (Spark {config.spark_master})" if executor != "local"
                                     else ""))
                done = _stream(worker, admin, producer, out)
                out(f"query steps by where they ran: {_steps_by_executor()}")
            if done is None:
                out("the worker did not catch up; see the log above")
                return 1
            wrong = _check_committed(config)
            if wrong:
                out(f"a committed change stream is wrong: {wrong}")
                return 1
            out(f"done: {done} transactions, every change committed exactly once")
    return 0


def _stream(worker: Worker, admin: QueryAdmin, producer: TxProducer,
            out: Callable[[str], None]) -> int | None:
    """Run ``worker`` in a thread, register the live queries, stream the transactions and
    follow the changes; the transactions the worker committed (None: it did not catch up).
    The worker's thread and the followers are done with their Kafka clients on return."""
    import time

    from workers.progress import ProgressBar

    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    followers: list[threading.Thread] = []
    try:
        for name, text in LIVE_QUERIES.items():
            admin.add(name, text)
            out(f"registered {name}: {text}")
        while set(worker.engine.queries) != set(LIVE_QUERIES) and thread.is_alive():
            time.sleep(0.05)  # the worker picks registrations up from deltalog.queries
        followers = [_print_changes(worker.config, name, out, stop) for name in LIVE_QUERIES]
        transactions = _transactions()
        with ProgressBar(len(transactions), "tx") as bar:
            for tx in transactions:
                producer.send(tx)
                producer.flush()
                bar.advance()
                time.sleep(STREAM_PAUSE_S)
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        while worker.committed < len(transactions) - 1:
            if time.monotonic() > deadline or not thread.is_alive():
                return None
            time.sleep(0.1)
    finally:
        stop.set()
        for running in [thread, *followers]:
            running.join()
    return worker.committed + 1


def _steps_by_executor() -> str:
    """``deltalog_query_steps_total`` by its ``executor`` label, as the worker exported it."""
    from workers import metrics

    counts = {sample.labels["executor"]: int(sample.value)
              for family in metrics.STEPS.collect() for sample in family.samples
              if sample.name.endswith("_total")}
    return ", ".join(f"{where} {count}" for where, count in sorted(counts.items())) or "none"


def _transactions() -> list[Any]:
    """The demo's stream: the karate club's friendships, then the people moving."""
    from workers.edn import keyword

    add, to = keyword("db/add"), keyword("g/to")
    return [[[add, a, to, b]] for a, b in KARATE] + PEOPLE


def _check_committed(config: Any) -> str | None:
    """What is wrong with the live queries' committed change streams, read to their end, or
    None: each must integrate, after every tick, to the query's from-scratch result on the
    database at the tick's end, with no tick twice — the demo's last line is checked, not
    assumed.  The database after each transaction comes from an embedded engine."""
    from workers.kafka.clients import follow
    from workers.testing import ChangeStreamMismatch, check_change_stream

    database = Engine()
    states = []
    for offset, tx in enumerate(_transactions()):
        database.transact(tx, tx_id=offset)
        states.append(list(database.db.datoms()))
    for name, text in LIVE_QUERIES.items():
        try:
            check_change_stream(text, follow(config, name, stop_at_end=True,
                                             from_beginning=True), states)
        except ChangeStreamMismatch as error:
            return f"{name}: {error}"
    return None


def _print_changes(config: Any, name: str, out: Callable[[str], None],
                   stop: threading.Event) -> threading.Thread:
    """Follow one query's committed changes in the background, printing the first few."""
    from workers.kafka.clients import follow

    def run() -> None:
        rows = (change for change in follow(config, name, stop=stop) if change.weight)
        for count, change in enumerate(rows, 1):  # not an empty snapshot's row of weight 0
            if count <= SHOWN_PER_QUERY:
                out(f"{CLEAR_LINE}  {name:<10} tx {change.tx_first}..{change.tx_last} "
                    f"{signed(change.weight)} {dumps(change.row)}")
            elif count == SHOWN_PER_QUERY + 1:
                out(f"{CLEAR_LINE}  {name:<10} ... (`deltalog tail {name}` shows them all)")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
