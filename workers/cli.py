"""The ``deltalog`` command line.

``demo`` (the main job: local broker + worker + live queries), ``broker``, ``worker``, ``tx``,
``query add|rm|ls``, ``tail``, ``status``, ``explain`` and ``config``.  Settings come from a TOML
file (``--config``), ``DELTALOG_*`` environment variables and flags (``workers.config``);
``deltalog config`` prints the result, secrets masked.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from workers.config import WorkerConfig, from_env, masked, to_toml
from workers.edn import dumps, read, read_all
from workers.engine import Engine
from workers.errors import ErrorCode, WorkersError
from workers.executors.dispatch import EXECUTORS
from workers.logs import LOG_FORMATS, configure
from workers.plan import STRATEGIES

Handler = Callable[[argparse.Namespace], int]
SETTINGS = frozenset(setting.name for setting in dataclasses.fields(WorkerConfig))


INPUT_HELP = ("value of the next :in binding as EDN: a scalar, [tuple], [collection], "
              "[[relation]] or the rule set for % (repeatable)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        configure(logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
                  args.log_format, os.environ)
        logging.getLogger("edn_format").setLevel(logging.WARNING)  # its lexer logs its tables
        handler: Handler = args.handler
        return handler(args)
    except WorkersError as err:
        print(f"deltalog: error [{err.code.value}]: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


class _Parser(argparse.ArgumentParser):
    """argparse's own usage errors (an unknown flag, a bad value) with the code every other
    usage error has: ``deltalog worker: error [usage]: ...``.  Subcommands inherit it."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error [{ErrorCode.USAGE.value}]: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="deltalog", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    demo = _command(commands, "demo", _demo, "broker + worker + live queries over a real graph")
    demo.add_argument("--embedded", action="store_true",
                      help="run the engine in-process only (no Kafka, no Java)")
    demo.add_argument("--strategy", choices=STRATEGIES, default="delta")
    demo.add_argument("--executor", choices=EXECUTORS, default="local",
                      help="where the ticks run: local (default), spark (every tick a Spark "
                           "job), or auto (large ticks and bootstraps on Spark)")
    demo.add_argument("--spark-master", help="e.g. local[*] (default) or spark://host:7077")

    broker = _command(commands, "broker", _broker, "run a local Apache Kafka (KRaft) broker")
    broker.add_argument("--port", type=int, default=9092)
    broker.add_argument("--dir", type=Path, default=Path(".deltalog/kafka"))

    worker = _command(commands, "worker", _worker, "maintain every registered query")
    _worker_options(worker)
    worker.add_argument("-v", "--verbose", action="store_true")

    config = _command(commands, "config", _show_config,
                      "print the settings a worker given the same flags would use, secrets "
                      "masked")
    _worker_options(config)
    config.add_argument("--json", action="store_true", help="JSON instead of TOML")

    tx = _command(commands, "tx", _tx, "send transactions")
    _kafka_options(tx)
    tx.add_argument("edn", nargs="?", help="one transaction as EDN, e.g. '[[:db/add 1 :a 2]]'")
    tx.add_argument("--file", type=Path, help="a file of EDN transactions, one form each")
    tx.add_argument("--report-timeout", type=float, default=30.0, metavar="S",
                    help="seconds to wait for the ids of a transaction's tempids (default 30)")

    query = _command(commands, "query", _query, "add, remove or list standing queries")
    _kafka_options(query)
    query.add_argument("action", choices=("add", "rm", "ls"))
    query.add_argument("name", nargs="?")
    query.add_argument("edn", nargs="?")
    query.add_argument("--input", action="append", default=[], metavar="EDN",
                       help=INPUT_HELP)

    tail = _command(commands, "tail", _tail, "print a query's current result (its rows "
                    "flagged as the snapshot), then every change committed after it")
    _kafka_options(tail)
    tail.add_argument("name")
    tail.add_argument("--view", action="store_true",
                      help="show the current result as a table (from the query's view topic)")
    tail.add_argument("--json", action="store_true",
                      help="one JSON object per row; store registration and tx_last of a row "
                           "flagged last as your position")
    tail.add_argument("--after", type=int, metavar="TX",
                      help="resume after this transaction (with --registration): only the "
                           "changes since, or the current result again (said on stderr) when "
                           "they are no longer retained")
    tail.add_argument("--registration", type=int, metavar="R",
                      help="the registration of the position --after names")
    tail.add_argument("--from-beginning", action="store_true",
                      help="the raw change stream from its first record instead; refused once "
                           "retention deleted its head")

    sink = commands.add_parser("sink", help="keep a query's view in a database table")
    sinks = sink.add_subparsers(dest="sink", required=True)
    postgres = _command(sinks, "postgres", _sink_postgres,
                        "keep a query's view in a PostgreSQL table, exactly once")
    _kafka_options(postgres)
    postgres.add_argument("name", help="the query")
    postgres.add_argument("--dsn", default=os.environ.get("DELTALOG_POSTGRES_DSN"),
                          help="libpq connection string or URL "
                               "(default: $DELTALOG_POSTGRES_DSN)")
    postgres.add_argument("--table", help="table or schema.table (default: the query's name)")
    postgres.add_argument("-v", "--verbose", action="store_true")

    status = _command(commands, "status", _status,
                      "the fleet: workers, the queries each owns, progress and lag")
    _kafka_options(status)
    status.add_argument("--json", action="store_true")

    explain = _command(commands, "explain", _explain, "print the plan of a query")
    explain.add_argument("query", help="EDN query text, e.g. '{:find [?a] :where [[?a :x]]}'")
    explain.add_argument("--strategy", choices=STRATEGIES, default="delta")
    explain.add_argument("--input", action="append", default=[], metavar="EDN",
                         help=INPUT_HELP)
    return parser


def _command(commands: argparse._SubParsersAction, name: str, handler: Handler,  # type: ignore[type-arg]
             help_text: str) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = commands.add_parser(name, help=help_text)
    command.set_defaults(handler=handler)
    command.add_argument("--log-format", choices=LOG_FORMATS,
                         help="text (default) or one JSON object per line "
                              "(default: $DELTALOG_LOG_FORMAT)")
    return command


def _kafka_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--config", type=Path, metavar="FILE",
                         help="a TOML settings file (default: $DELTALOG_CONFIG); variables and "
                              "flags override it")
    command.add_argument("--bootstrap-servers", help="Kafka bootstrap servers "
                         "(default: $DELTALOG_BOOTSTRAP_SERVERS or 127.0.0.1:9092)")


def _worker_options(command: argparse.ArgumentParser) -> None:
    """The flags that make a worker's settings (``worker`` and ``config`` share them)."""
    _kafka_options(command)
    command.add_argument("--worker-id")
    command.add_argument("--strategy", choices=STRATEGIES)
    command.add_argument("--executor", choices=EXECUTORS,
                         help="where plans run: local (default), spark, or auto (large ticks "
                              "and bootstraps on Spark)")
    command.add_argument("--spark-master", help="e.g. local[*] (default) or spark://host:7077")
    command.add_argument("--spark-state",
                         help="where Spark's tasks read the database: a directory or a "
                              "pyarrow.fs URL (s3://..., hdfs://...); default a temporary one")
    command.add_argument("--spark-sharing", choices=("worker", "fleet"),
                         help="worker: each worker writes a state of its own (default); "
                              "fleet: the workers share the one at --spark-state, written once")
    command.add_argument("--spark-memory-values", type=int,
                         help="values of the dictionary the driver keeps in memory (the "
                              "others are in files of its own); default 65536")
    command.add_argument("--tick-max-tx", type=int, help="transactions per tick at most")
    command.add_argument("--tick-max-wait-s", type=float,
                         help="longest an idle worker waits for a tick's first transaction (s)")
    command.add_argument("--snapshot-dir", type=Path)
    command.add_argument("--snapshot-url", help="the fleet's snapshot store, a URL (s3://, "
                         "gs://, hdfs://, file://) or a path; overrides --snapshot-dir")
    command.add_argument("--snapshot-interval-s", type=float, help="seconds between snapshots")
    command.add_argument("--metrics-port", type=int)


def _settings(args: argparse.Namespace) -> WorkerConfig:
    """The file, the variables, then the flags (``None``: not given).  A flag sets the
    setting it is named after (``--tick-max-tx`` sets ``tick_max_tx``), so the two cannot
    drift apart."""
    flags = {name: value for name, value in vars(args).items() if name in SETTINGS}
    return from_env(config_file=args.config, **flags)


def _connected(config: WorkerConfig) -> WorkerConfig:
    """``config`` once a broker answered and accepted its login (a refused one fails now)."""
    from workers.kafka.preflight import check_connection

    check_connection(config)
    return config


def _config(args: argparse.Namespace) -> WorkerConfig:
    """A client command's settings, checked against the broker."""
    return _connected(_settings(args))


# -- handlers ------------------------------------------------------------------------------

def _demo(args: argparse.Namespace) -> int:
    from workers.demo import run_demo, run_embedded_demo

    if args.embedded:
        run_embedded_demo(args.strategy, args.executor)
        return 0
    return run_demo(args.strategy, args.executor, args.spark_master)


def _broker(args: argparse.Namespace) -> int:
    from workers.kafka.broker import run_broker

    return run_broker(port=args.port, data_dir=args.dir)


def _worker(args: argparse.Namespace) -> int:
    from workers.collector import freeze_long_lived
    from workers.runtime.health import serve
    from workers.runtime.worker import Worker

    config = _connected(_settings(args))
    with Worker(config) as worker:
        if config.metrics_port is not None:
            serve(config.metrics_port, worker.readiness)
        freeze_long_lived()  # one worker per process: what it made lives as long as it
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        worker.run(stop)
    return 0


def _show_config(args: argparse.Namespace) -> int:
    shown = masked(_settings(args))
    sys.stdout.write(json.dumps(shown, indent=2) + "\n" if args.json else to_toml(shown))
    return 0


def _status(args: argparse.Namespace) -> int:
    from workers.runtime.status import fleet_status

    status = fleet_status(_config(args))
    print(json.dumps(dataclasses.asdict(status)) if args.json else status.text())
    return 0


def _tx(args: argparse.Namespace) -> int:
    from workers.kafka.clients import TxProducer
    from workers.kafka.reports import outcome
    from workers.progress import ProgressBar

    if args.file is None and args.edn is None:
        raise WorkersError("give a transaction as EDN text or --file data.edn",
                           code=ErrorCode.USAGE)
    config = _config(args)
    with TxProducer(config, source="deltalog tx") as producer:
        if args.file is not None:
            transactions = read_all(args.file.read_text())
            with ProgressBar(len(transactions), "tx") as bar:
                for tx in transactions:
                    producer.send(tx)
                    bar.advance()
            producer.flush()
            return 0
        sent = producer.send(args.edn)
        producer.flush()
    assert sent.offset is not None  # flushed: acknowledged
    if not sent.tempids:
        print(f"tx {sent.offset}")
        return 0
    # Its tempids' ids: the report the fleet commits (or its dead letter).
    result = outcome(config, sent.offset, sent.sent_ms, args.report_timeout)
    if result.code is not None:
        print(f"tx {sent.offset} refused ({result.code}): {result.reason}", file=sys.stderr)
        return 1
    print(f"tx {sent.offset} {dumps(result.tempids)}")
    return 0


def _query(args: argparse.Namespace) -> int:
    from workers.kafka.clients import QueryAdmin

    if args.action != "ls" and args.name is None:
        raise WorkersError(f"query {args.action} needs a NAME", code=ErrorCode.USAGE)
    if args.action == "add" and args.edn is None:
        raise WorkersError("query add needs NAME and the query as EDN text",
                           code=ErrorCode.USAGE)
    with QueryAdmin(_config(args)) as admin:
        if args.action == "ls":
            for name, registration in admin.list().items():
                inputs = " ".join(f"--input {text}" for text in registration.inputs)
                print(f"{name}	{registration.edn}	{inputs}".rstrip())
        elif args.action == "rm":
            admin.remove(args.name)
        else:
            admin.add(args.name, args.edn, args.input)
    return 0


def _tail(args: argparse.Namespace) -> int:
    from workers.kafka.clients import Position, follow
    from workers.zset import signed

    if (args.after is None) != (args.registration is None):
        raise WorkersError("--after TX and --registration R name a position together",
                           code=ErrorCode.USAGE)
    if args.view and (args.after is not None or args.from_beginning):
        raise WorkersError("--view starts from the view: no --after or --from-beginning",
                           code=ErrorCode.USAGE)
    if args.from_beginning and args.after is not None:
        raise WorkersError("--from-beginning or --after, not both", code=ErrorCode.USAGE)
    if args.view:
        return _tail_view(args)
    after = None if args.after is None else Position(args.registration, args.after)
    for change in follow(_config(args), args.name, after=after,
                         from_beginning=args.from_beginning):
        if args.json:
            print(json.dumps(change.as_json(args.name)), flush=True)
        elif change.weight == 0:  # an empty snapshot
            print(f"tx {change.tx_first}..{change.tx_last} no rows (snapshot)", flush=True)
        else:
            mark = " (snapshot)" if change.snapshot else ""
            print(f"tx {change.tx_first}..{change.tx_last} {signed(change.weight)} "
                  f"{dumps(change.row)}{mark}", flush=True)
    print(f"{args.name} was registered anew: run tail again", file=sys.stderr)
    return 0


def _tail_view(args: argparse.Namespace) -> int:
    """The query's view from its view topic, then kept current by the changes after it."""
    from workers.kafka.clients import Snapshot, subscribe
    from workers.zset import add_into

    view: dict[tuple[object, ...], int] = {}
    for item in subscribe(_config(args), args.name):
        if isinstance(item, Snapshot):
            view, tx = dict(item.rows), item.tx
        else:
            add_into(view, {item.row: item.weight})
            tx = item.tx_last
        print("\033[2J\033[H" + f"{args.name} @ tx {tx}: {sum(view.values())} rows")
        for row, copies in sorted((dumps(r), n) for r, n in view.items()):
            print(f"  {row}" + (f" x{copies}" if copies != 1 else ""))  # a bag's copies
        sys.stdout.flush()
    print(f"{args.name} was registered anew: run tail again", file=sys.stderr)
    return 0


def _sink_postgres(args: argparse.Namespace) -> int:
    from workers.sinks.postgres import PostgresSink

    if not args.dsn:
        raise WorkersError("sink postgres needs --dsn (or $DELTALOG_POSTGRES_DSN)",
                           code=ErrorCode.USAGE)
    sink = PostgresSink(_config(args), args.dsn, args.name, args.table)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    sink.run(stop)
    return 0


def _explain(args: argparse.Namespace) -> int:
    inputs = [read(text) for text in args.input]
    sys.stdout.write(Engine(strategy=args.strategy).explain(args.query, inputs))
    return 0
