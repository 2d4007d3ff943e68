"""Datomic-style transactions beside plain ones: tempids and upserts, in datoms per second.

    python -m bench model [--entities 100000] [--tx-entities 1000]

The same people (4 datoms each: email, name, age, a friend) sent to an `Engine` through
`Engine.transact_many` in transactions of `--tx-entities` entities, three ways:

- **plain**: long entity ids, `[:db/add id :p/email ...]` (the bulk normaliser's case);
- **tempids**: entity maps `{:db/id "p7" :p/email ... :p/friend "p6"}` with `:p/email` a
  `:db.unique/identity` (each transaction resolved, then normalised op by op);
- **upserts**: the same maps again without `:db/id`, each resolving by its email to the
  entity the first load made (the ages change: half the datoms are replacements).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.harness import Results, log, markdown_table
from workers.edn import keyword
from workers.engine import Engine

ADD, DB_ID = keyword("db/add"), keyword("db/id")
EMAIL, NAME, AGE, FRIEND = (keyword(f"p/{a}") for a in ("email", "name", "age", "friend"))
SCHEMA = ("[{:db/ident :p/email :db/valueType :db.type/string :db/unique :db.unique/identity "
          ":db/cardinality :db.cardinality/one} {:db/ident :p/age :db/cardinality "
          ":db.cardinality/one} {:db/ident :p/friend :db/valueType :db.type/ref}]")


def plain(i: int) -> list[Any]:
    return [[ADD, i, EMAIL, f"e{i}"], [ADD, i, NAME, f"n{i}"], [ADD, i, AGE, i % 90],
            [ADD, i, FRIEND, max(i - 1, 0)]]


def tempids(i: int) -> list[Any]:
    return [{DB_ID: f"p{i}", EMAIL: f"e{i}", NAME: f"n{i}", AGE: i % 90,
             FRIEND: f"p{max(i - 1, 0)}"}]


def upserts(i: int) -> list[Any]:
    return [{EMAIL: f"e{i}", NAME: f"n{i}", AGE: (i + 1) % 90}]


def send(engine: Engine, make: Callable[[int], list[Any]], entities: int, per_tx: int,
         tx: int) -> tuple[float, int]:
    """Send ``entities`` as transactions of ``per_tx``; the seconds taken and the last tx."""
    started = time.perf_counter()
    for first in range(0, entities, per_tx):
        tx += 1
        forms = [op for i in range(first, min(first + per_tx, entities)) for op in make(i)]
        _, refused = engine.transact_many([(forms, tx)])
        assert not refused, refused[0].error
    return time.perf_counter() - started, tx


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--entities", type=int, default=100_000,
                        help="people sent each way (default 100000)")
    parser.add_argument("--tx-entities", type=int, default=1000,
                        help="people per transaction (default 1000)")
    args = parser.parse_args(argv)
    if min(args.entities, args.tx_entities) < 1:
        parser.error("--entities and --tx-entities must be positive")
    return args


def run(args: argparse.Namespace) -> None:
    """Send the people each way, print one table and write the results file."""
    output = Results("model", args)
    rows, result = [], {}
    for name in ("plain", "tempids"):
        engine = Engine()
        engine.transact(SCHEMA)
        log(f"{name}: {args.entities:,} people")
        seconds, tx = send(engine, {"plain": plain, "tempids": tempids}[name], args.entities,
                           args.tx_entities, engine.tx)
        runs = [(name, seconds, 4 * args.entities)]
        if name == "tempids":
            log(f"upserts: {args.entities:,} people again, by email")
            seconds, _ = send(engine, upserts, args.entities, args.tx_entities, tx)
            runs.append(("upserts", seconds, 3 * args.entities))
        for way, taken, datoms in runs:
            result[way] = {"seconds": taken, "datoms_per_s": datoms / taken}
            rows.append([way, f"{datoms:,}", f"{taken:.2f}", f"{datoms / taken:,.0f}"])
    print(markdown_table(["transactions", "datoms sent", "seconds", "datoms/s"], rows))
    output.write({"result": result})
