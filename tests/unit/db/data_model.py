"""Datomic's data model as a table: tempids, upserts, lookup refs, nested and reverse maps,
components, cas and the schema changes Datomic refuses — each case a few transactions and
what each must do, taken from Datomic's documentation and Datascript's test suite
(``test/datascript/test/upsert.cljc``, ``transact.cljc``, ``lookup_refs.cljc``,
``components.cljc``).

One checker runs a case on any engine (:func:`check`): after every transaction the database
holds the expected datoms (tempids written as ``#s.n`` for the ``n``-th new entity of
step ``s``), a refused transaction names its reason, and every registered query's integrated
change stream equals the query evaluated afresh and the independent oracle
(:mod:`workers.testing`).  The unit tests run it row at a time, in batches (the bulk path)
and the Spark integration tests under ``executor=spark``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from workers import edn
from workers.db.resolve import allocated_id
from workers.engine import Engine
from workers.errors import TransactionError
from workers.testing import evaluate_from_scratch
from workers.zset import add_into
from workers.zset.row import Row

SCHEMA = """[{:db/ident :p/email :db/valueType :db.type/string :db/unique :db.unique/identity
              :db/cardinality :db.cardinality/one}
             {:db/ident :p/ssn :db/unique :db.unique/value :db/cardinality :db.cardinality/one}
             {:db/ident :p/name :db/cardinality :db.cardinality/one}
             {:db/ident :p/age :db/cardinality :db.cardinality/one}
             {:db/ident :p/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :p/boss :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
             {:db/ident :o/line :db/valueType :db.type/ref :db/isComponent true
              :db/cardinality :db.cardinality/many}
             {:db/ident :l/part :db/valueType :db.type/ref :db/isComponent true}]"""
# Queries kept live through every case: each integrated stream must equal a fresh evaluation.
QUERIES = {
    "all": "[:find ?e ?a ?v :where [?e ?a ?v] [(namespace ?a) ?ns] [(not= ?ns \"db\")]]",
    "ivan": "[:find ?a ?v :where [[:p/email \"ivan@x\"] ?a ?v]]",
    "friends-of-ivan": "[:find ?n :where [?f :p/friend [:p/email \"ivan@x\"]] [?f :p/name ?n]]",
    "count": "[:find (count ?e) :where [?e :p/email]]",
}
NEW_ENTITY = re.compile(r"#(\d+)\.(\d+)")


@dataclass(frozen=True)
class Step:
    """A transaction and what it must do: ``datoms`` (EDN text of ``[e a v]`` vectors, the
    whole database's data datoms after it; ``#s.n`` step ``s``'s n-th new entity), or
    ``refused`` (a fragment of the refusal's message); ``tempids``: the report's
    ``{tempid: n}`` (None: upserted into an existing entity)."""

    tx: str
    datoms: str | None = None
    refused: str | None = None
    tempids: dict[Any, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    name: str
    steps: tuple[Step, ...]


def case(name: str, *steps: Step) -> Any:
    return pytest.param(Case(name, steps), id=name)


CASES = [
    case("a tempid is local to its transaction",
         Step('[{:db/id -1 :p/name "Ivan"}]', '[#1.0 :p/name "Ivan"]', tempids={-1: 0}),
         Step('[{:db/id -1 :p/name "Oleg"}]', '[#1.0 :p/name "Ivan"] [#2.0 :p/name "Oleg"]',
              tempids={-1: 0})),
    case("a string tempid names one entity in ops, maps and ref values",
         Step('[[:db/add "ivan" :p/name "Ivan"] {:db/id "oleg" :p/name "Oleg" '
              ':p/friend "ivan"}]',
              '[#1.0 :p/name "Ivan"] [#1.1 :p/name "Oleg"] [#1.1 :p/friend #1.0]',
              tempids={"ivan": 0, "oleg": 1})),
    case("a map without :db/id is a new entity",
         Step('[{:p/name "Ivan"} {:p/name "Oleg"}]',
              '[#1.0 :p/name "Ivan"] [#1.1 :p/name "Oleg"]')),
    case("a tempid upserts into the entity holding its unique identity",
         Step('[{:db/id 1 :p/email "ivan@x" :p/name "Ivan"}]',
              '[1 :p/email "ivan@x"] [1 :p/name "Ivan"]'),
         Step('[{:db/id -1 :p/email "ivan@x" :p/age 30}]',
              '[1 :p/email "ivan@x"] [1 :p/name "Ivan"] [1 :p/age 30]', tempids={-1: None}),
         Step('[{:p/email "ivan@x" :p/name "Ivan I."}]',
              '[1 :p/email "ivan@x"] [1 :p/name "Ivan I."] [1 :p/age 30]')),
    case("tempids asserting one identity in a transaction are one entity",
         Step('[{:db/id "a" :p/email "new@x"} {:db/id "b" :p/email "new@x" :p/age 3}]',
              '[#1.0 :p/email "new@x"] [#1.0 :p/age 3]', tempids={"a": 0, "b": 0})),
    case("an upsert naming two entities is refused",
         Step('[{:db/id 1 :p/email "ivan@x"} {:db/id 2 :p/email "oleg@x"}]',
              '[1 :p/email "ivan@x"] [2 :p/email "oleg@x"]'),
         Step('[{:db/id "t" :p/email "ivan@x"} {:db/id "t" :p/email "oleg@x"}]',
              refused='upsert conflict: tempid "t" names entity')),
    case("an explicit second owner of a unique identity or value is refused",
         Step('[{:db/id 1 :p/email "ivan@x" :p/ssn 7}]', '[1 :p/email "ivan@x"] [1 :p/ssn 7]'),
         Step('[[:db/add 2 :p/email "ivan@x"]]',
              refused='unique conflict: [:p/email "ivan@x"] is held by entity 1'),
         Step('[{:db/id -1 :p/ssn 7}]', refused='unique conflict: [:p/ssn 7] is held by entity 1'),
         Step('[[:db/retract 1 :p/ssn 7] [:db/add 2 :p/ssn 7]]',
              '[1 :p/email "ivan@x"] [2 :p/ssn 7]')),
    case("lookup refs name entities in ops, :db/id, refs and retractEntity",
         Step('[{:db/id 1 :p/email "ivan@x"} {:db/id 2 :p/email "oleg@x"}]',
              '[1 :p/email "ivan@x"] [2 :p/email "oleg@x"]'),
         Step('[[:db/add [:p/email "ivan@x"] :p/age 30] {:db/id [:p/email "oleg@x"] '
              ':p/friend [:p/email "ivan@x"] :p/name "Oleg"}]',
              '[1 :p/email "ivan@x"] [1 :p/age 30] [2 :p/email "oleg@x"] [2 :p/name "Oleg"] '
              '[2 :p/friend 1]'),
         Step('[[:db/add [:p/email "nobody@x"] :p/age 1]]',
              refused='lookup ref [:p/email "nobody@x"] names no entity'),
         Step('[[:db/add [:p/name "Oleg"] :p/age 1]]',
              refused="lookup ref [:p/name \"Oleg\"]: :p/name is not a unique attribute"),
         Step('[[:db/retractEntity [:p/email "ivan@x"]]]',
              '[2 :p/email "oleg@x"] [2 :p/name "Oleg"]')),
    case("a registered lookup ref follows its unique value",
         Step('[{:db/id 1 :p/email "ivan@x" :p/name "Ivan"} {:db/id 3 :p/name "Anna" '
              ':p/friend 1}]',
              '[1 :p/email "ivan@x"] [1 :p/name "Ivan"] [3 :p/name "Anna"] [3 :p/friend 1]'),
         Step('[[:db/retract 1 :p/email "ivan@x"] {:db/id 2 :p/email "ivan@x" :p/name "Ivan 2"}]',
              '[1 :p/name "Ivan"] [3 :p/name "Anna"] [3 :p/friend 1] [2 :p/email "ivan@x"] '
              '[2 :p/name "Ivan 2"]')),
    case("nested maps: a component, a unique identity, else refused",
         Step('[{:db/id 5 :o/line [{:l/sku 1} {:l/sku 2 :l/part {:l/sku 3}}]}]',
              '[5 :o/line #1.0] [5 :o/line #1.1] [#1.0 :l/sku 1] [#1.1 :l/sku 2] '
              '[#1.1 :l/part #1.2] [#1.2 :l/sku 3]'),
         Step('[{:db/id 6 :p/friend {:p/email "anna@x" :p/name "Anna"}}]',
              '[5 :o/line #1.0] [5 :o/line #1.1] [#1.0 :l/sku 1] [#1.1 :l/sku 2] '
              '[#1.1 :l/part #1.2] [#1.2 :l/sku 3] [6 :p/friend #2.0] '
              '[#2.0 :p/email "anna@x"] [#2.0 :p/name "Anna"]'),
         Step('[{:db/id 6 :p/friend {:p/name "Nobody"}}]', refused="must be a component"),
         Step('[{:db/id 6 :p/name {:p/name "Nested"}}]', refused="not a :db.type/ref")),
    case("a reverse attribute asserts the forward datom",
         Step('[{:db/id 2 :p/_friend 1} {:db/id 4 :p/_friend [3 5]}]',
              '[1 :p/friend 2] [3 :p/friend 4] [5 :p/friend 4]')),
    case("retractEntity retracts components, recursively, and refs to the entity",
         Step('[{:db/id 5 :o/line [{:db/id 6 :l/sku 1 :l/part {:db/id 7 :l/sku 9}}]} '
              '[:db/add 8 :p/friend 5] [:db/add 8 :p/friend 7] [:db/add 8 :p/name "x"]]',
              '[5 :o/line 6] [6 :l/sku 1] [6 :l/part 7] [7 :l/sku 9] [8 :p/friend 5] '
              '[8 :p/friend 7] [8 :p/name "x"]'),
         Step('[[:db.fn/retractEntity 5]]', '[8 :p/name "x"]')),
    case("cas swaps a value it finds, refuses one it does not",
         Step('[[:db/add 1 :p/age 30]]', '[1 :p/age 30]'),
         Step('[[:db/cas 1 :p/age 31 32]]',
              refused="compare-and-swap failed: [:db/cas 1 :p/age 31 32]: 1 :p/age is 30"),
         Step('[[:db/cas 1 :p/age 30 31]]', '[1 :p/age 31]'),
         Step('[[:db.fn/cas 1 :p/name nil "Ivan"]]', '[1 :p/age 31] [1 :p/name "Ivan"]'),
         Step('[[:db/cas 1 :p/name nil "Oleg"]]', refused='1 :p/name is "Ivan"')),
    case("schema changes the data breaks are refused",
         Step('[[:db/add 1 :x/tag :a] [:db/add 1 :x/tag :b] [:db/add 2 :x/code 1] '
              '[:db/add 3 :x/code 1] [:db/add 4 :x/n "four"]]',
              '[1 :x/tag :a] [1 :x/tag :b] [2 :x/code 1] [3 :x/code 1] [4 :x/n "four"]'),
         Step('[{:db/ident :x/tag :db/cardinality :db.cardinality/one}]',
              refused="entity 1 holds several values"),
         Step('[{:db/ident :x/code :db/unique :db.unique/identity}]',
              refused="cannot make :x/code unique: the value 1 is held by entities"),
         Step('[{:db/ident :x/n :db/valueType :db.type/long}]',
              refused='entity 4 holds "four" (string)'),
         Step('[{:db/ident :x/n :db/unique :db.unique/other}]', refused="unknown :db/unique"),
         Step('[{:db/ident :x/ab :db/tupleAttrs [:x/a :x/b]}]',
              refused=":db/tupleAttrs is not supported")),
    case("values of different kinds are different datoms in one transaction",
         Step("[[:db/add 1 :x/v 1] [:db/add 1 :x/v 1.0] [:db/add 1 :x/v true]]",
              "[1 :x/v 1] [1 :x/v 1.0] [1 :x/v true]"),
         Step("[[:db/retract 1 :x/v 1.0]]", "[1 :x/v 1] [1 :x/v true]")),
]


def check(made: Case, engine_of: Callable[[], Engine], batched: bool = False) -> None:
    """Run the case's steps on a new engine (each in a batch of one through
    ``transact_many`` when ``batched``: the bulk path, if the engine's ``bulk_datoms``
    allows), checking each step and the live queries after it."""
    engine = engine_of()
    engine.transact(SCHEMA)  # transaction 1: step s is transaction s + 1
    views = {name: engine.register(name, query) for name, query in QUERIES.items()}
    for number, step in enumerate(made.steps, 1):
        tx = number + 1
        if batched:
            changes, refused = engine.transact_many([(edn.read(step.tx), tx)])
            error = refused[0].error if refused else None
            tempids = engine.tempids.get(tx, {})
        else:
            try:
                report = engine.transact(step.tx)
            except TransactionError as raised:
                changes, error, tempids = {}, raised, {}
            else:
                changes, error, tempids = report, None, report.tempids
        if step.refused is not None:
            assert error is not None and step.refused in str(error), (step.tx, error)
        else:
            assert error is None, (step.tx, error)
            for name, n in step.tempids.items():
                expected = allocated_id(tx, n) if n is not None else None
                assert expected is None or tempids[name] == expected, (step.tx, tempids)
                assert expected is not None or tempids[name] < allocated_id(0, 0), tempids
            assert step.datoms is not None
            assert _data(engine) == expected_datoms(step.datoms), step.tx
        datoms = set(engine.query("[:find ?e ?a ?v :where [?e ?a ?v]]"))  # Rows: kinds apart
        for name, view in views.items():
            add_into(view, changes.get(name, {}))
            assert view == engine.query(QUERIES[name]), (name, step.tx)
            assert view == evaluate_from_scratch(QUERIES[name], datoms), (name, step.tx)


def expected_datoms(text: str) -> set[tuple[Any, ...]]:
    """``[e a v]`` vectors as datoms, ``#s.n`` as the ``n``-th new entity of step ``s``
    (transaction ``s + 1``)."""
    return {Row(d) for d in edn.read_all(NEW_ENTITY.sub(lambda m: str(allocated_id(
        int(m.group(1)) + 1, int(m.group(2)))), text))}


def _data(engine: Engine) -> set[tuple[Any, ...]]:
    """The database's data datoms (not the schema's)."""
    return set(engine.query(QUERIES["all"]))
