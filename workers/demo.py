"""The embedded demo: a small social graph streamed through live queries, changes printed.

It runs the same engine the worker runs, in-process and on embedded defaults, so a fresh
checkout shows deltalog working in seconds: every transaction prints, for each query it
changed, the rows that entered (+) and left (-) the result.
"""

from __future__ import annotations

from collections.abc import Callable

from workers.edn import dumps
from workers.engine import Engine

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


def run_demo(strategy: str = "delta", out: Callable[[str], None] = print) -> Engine:
    """Register the demo queries, replay the demo transactions and print every change."""
    engine = Engine(strategy=strategy)
    for name, text in QUERIES.items():
        engine.register(name, text)
        out(f"registered {name}: {text}")
    for text in TRANSACTIONS:
        changes = engine.transact(text)
        out(f"\ntx {engine.tx}: {text}")
        for name, rows in sorted(changes.items()):
            for row, weight in sorted(rows.items(), key=lambda item: (-item[1], repr(item[0]))):
                out(f"  {name:<20} {'+' if weight > 0 else '-'} {dumps(row)}")
    out("\ncurrent results:")
    for name in QUERIES:
        shown = sorted(dumps(row) for row in engine.result(name))
        out(f"  {name:<20} {' '.join(shown) or '(empty)'}")
    return engine
