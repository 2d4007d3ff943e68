"""deltalog against Datascript, a real Datalog implementation: random transaction streams
(additions and retractions, cardinality-one updates, refs), queries of every feature, and
after each transaction the registered query's integrated change stream must hold exactly the
rows Datascript's query returns on the same database.

Datascript is its npm build (:mod:`tests.differential.peer`), so values are longs, strings
and booleans (JavaScript has one kind of number and no keywords as values).  Left out, as
Datascript 1.8.1 gets them wrong: a variable twice in one pattern (``[?e :friend ?e]``
matches ``[1 :friend 2]``, binding ``?e`` to 2), and a rule whose head requires an argument
(``(older [?a] ?n)``) when its body's predicate reads it (refused: "Insufficient
bindings")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.differential.peer import ATTRIBUTES, Datascript, deltalog_schema, row_of
from workers import edn
from workers.engine import Engine
from workers.errors import QueryError
from workers.zset import add_into

REACH = "[[(reach ?a ?b) [?a :friend ?b]] [(reach ?a ?b) [?a :friend ?c] (reach ?c ?b)]]"
LINKED = ("[[(linked ?a ?b) [?a :friend ?b]] [(linked ?a ?b) [?b :friend ?a]] "
          "[(named ?e) [?e :name _]]]")

QUERIES: list[tuple[str, str, list[Any]]] = [
    ("pattern", "[:find ?e ?n :where [?e :name ?n]]", []),
    ("join", "[:find ?e ?n ?a :where [?e :name ?n] [?e :age ?a]]", []),
    ("ref join", '[:find ?e ?f :where [?e :friend ?f] [?f :name "a"]]', []),
    ("mutual", "[:find ?a ?b :where [?a :friend ?b] [?b :friend ?a]]", []),
    ("triangle", "[:find ?a ?b ?c :where [?a :friend ?b] [?b :friend ?c] [?a :friend ?c]]", []),
    ("three hops", "[:find ?a ?d :where [?a :friend ?b] [?b :friend ?c] [?c :friend ?d]]", []),
    ("constant entity", "[:find ?a :where [1 :friend ?f] [?f :age ?a]]", []),
    ("any attribute", "[:find ?e ?v :where [?e :tag ?v] [?e ?a ?v]]", []),
    ("predicate", "[:find ?n :where [?e :name ?n] [?e :age ?a] [(> ?a 2)]]", []),
    ("comparison of two", "[:find ?e ?f :where [?e :friend ?f] [(< ?e ?f)]]", []),
    ("not equal", "[:find ?a ?b :where [?a :age ?x] [?b :age ?x] [(!= ?a ?b)]]", []),
    ("function", "[:find ?e ?x :where [?e :age ?a] [(* ?a 2) ?x]]", []),
    ("function joined", "[:find ?e ?f :where [?e :age ?a] [(inc ?a) ?b] [?f :age ?b]]", []),
    ("str", '[:find ?s :where [?e :name ?n] [(str ?n "-" ?e) ?s]]', []),
    ("odd", "[:find ?e :where [?e :score ?s] [(odd? ?s)]]", []),
    ("not", "[:find ?e :where [?e :name] (not [?e :age])]", []),
    ("not with constant", '[:find ?e :where [?e :name] (not [?e :tag "x"])]', []),
    ("not two clauses", '[:find ?e :where [?e :name] (not [?e :friend ?f] [?f :tag "y"])]', []),
    ("not-join", "[:find ?e :where [?e :name ?n] (not-join [?e] [?e :friend ?f] [?f :name ?n])]",
     []),
    ("or", '[:find ?e :where (or [?e :tag "x"] [?e :age 1])]', []),
    ("or with and", '[:find ?e :where [?e :name] (or-join [?e] [?e :tag "z"] '
                    "(and [?e :age ?a] [(< ?a 2)]))]", []),
    ("or of different free variables (both refuse it)",
     '[:find ?e :where [?e :name] (or [?e :tag "z"] (and [?e :age ?a] [(< ?a 2)]))]', []),
    ("not binding nothing (both refuse it)", '[:find ?e :where [?e :name] (not [?a :age 1])]',
     []),
    ("or-join", "[:find ?e ?v :where (or-join [?e ?v] [?e :age ?v] (and [?e :score ?v] "
                "[(> ?v 2)]))]", []),
    ("missing?", "[:find ?e :where [?e :name] [(missing? $ ?e :age)]]", []),
    ("get-else", "[:find ?e ?a :where [?e :name] [(get-else $ ?e :age -1) ?a]]", []),
    ("ground", "[:find ?e :where [(ground [1 3]) [?x ...]] [?e :age ?x]]", []),
    ("count", "[:find ?n (count ?e) :where [?e :name ?n]]", []),
    ("count-distinct, min, max", "[:find (count-distinct ?a) (min ?a) (max ?a) "
                                 ":where [?e :age ?a]]", []),
    ("sum of the set", "[:find (sum ?s) :where [?e :score ?s]]", []),
    ("sum with", "[:find (sum ?s) :with ?e :where [?e :score ?s]]", []),
    ("avg by group", "[:find ?n (avg ?a) :with ?e :where [?e :name ?n] [?e :age ?a]]", []),
    ("max per entity", "[:find ?e (max ?s) :where [?e :score ?s]]", []),
    ("count per tag", "[:find ?t (count ?e) :where [?e :tag ?t]]", []),
    ("distinct", "[:find ?e (distinct ?t) :where [?e :tag ?t]]", []),
    ("median, variance", "[:find (median ?a) (variance ?a) :with ?e :where [?e :age ?a]]", []),
    ("friends counted", "[:find ?e (count ?f) :where [?e :friend ?f] [?f :name]]", []),
    ("scalar input", "[:find ?e :in $ ?n :where [?e :name ?n]]", ["b"]),
    ("collection input", "[:find ?e ?n :in $ [?n ...] :where [?e :name ?n]]", [["a", "c"]]),
    ("relation input", "[:find ?e ?t :in $ [[?n ?t]] :where [?e :name ?n]]",
     [[["a", 1], ["b", 2]]]),
    ("recursive rule", "[:find ?a ?b :in $ % :where (reach ?a ?b)]", [edn.read(REACH)]),
    ("rule and not", "[:find ?e :in $ % :where (named ?e) (not (linked ?e 1))]",
     [edn.read(LINKED)]),
    ("rule from a constant", "[:find ?b :in $ % :where (reach 1 ?b)]", [edn.read(REACH)]),
    ("blank attribute", "[:find ?e ?v :where [?e _ ?v] [?e :age]]", []),
    ("blank entity", '[:find ?f :where [_ :friend ?f] [?f :name "b"]]', []),
    ("values across attributes", "[:find ?e ?f :where [?e :age ?a] [?f :score ?a]]", []),
    ("booleans", "[:find ?e ?b :where [?e :flag ?b] [?e :name]]", []),
    ("boolean constant", "[:find ?e :where [?e :flag true] (not [?e :flag false])]", []),
    ("arithmetic", "[:find ?e ?c :where [?e :age ?a] [?e :score ?s] [(+ ?a ?s) ?b] "
                   "[(- ?b 1) ?c] [(pos? ?c)]]", []),
    ("mod, quot, zero?", "[:find ?e ?m :where [?e :score ?s] [(mod ?s 3) ?m] [(quot ?s 2) ?q] "
                         "[(zero? ?q)]]", []),
    ("function max and compare", "[:find ?e ?m ?c :where [?e :age ?a] [?e :score ?s] "
                                 "[(max ?a ?s) ?m] [(compare ?a ?s) ?c]]", []),
    ("tuple, untuple", "[:find ?x ?y :where [?e :age ?a] [?e :name ?n] [(tuple ?n ?a) ?t] "
                       "[(untuple ?t) [?x ?y]]]", []),
    ("ground relation", '[:find ?e ?k :where [(ground [["a" 1] ["b" 2]]) [[?n ?k]]] '
                        "[?e :name ?n]]", []),
    ("starts-with?", '[:find ?e :where [?e :tag ?t] [(clojure.string/starts-with? ?t "x")]]',
     []),
    ("not in or", '[:find ?e :where [?e :name] (or-join [?e] (not [?e :age]) [?e :tag "x"])]',
     []),
    ("or in not", '[:find ?e :where [?e :name] (not (or [?e :age 0] [?e :tag "y"]))]', []),
    ("not in not", '[:find ?e :where [?e :name] (not [?e :friend ?f] (not [?f :name "a"]))]',
     []),
    ("or-join required", "[:find ?e ?v :where [?e :name] (or-join [[?e] ?v] [?e :age ?v] "
                         "[?e :score ?v])]", []),
    ("with two variables", "[:find ?n (count ?a) :with ?e ?s :where [?e :name ?n] [?e :age ?a] "
                           "[?e :score ?s]]", []),
    ("min and max of strings", "[:find (min ?n) (max ?n) :where [?e :name ?n] [?e :tag]]", []),
    ("max n", "[:find ?t (max 2 ?s) (min 2 ?s) :where [?e :tag ?t] [?e :score ?s]]", []),
    ("aggregate of a function's value", "[:find ?n (sum ?d) :with ?e :where [?e :name ?n] "
                                        "[?e :age ?a] [(* ?a 2) ?d]]", []),
    ("count and count-distinct", "[:find ?e (count ?t) (count-distinct ?t) :with ?x "
                                 ":where [?e :tag ?t] [?e :score ?x]]", []),
    ("stddev", "[:find (stddev ?s) :with ?e :where [?e :score ?s]]", []),
    ("avg", "[:find (avg ?s) :where [?e :score ?s]]", []),
    ("pull", "[:find ?e (pull ?e [:name :age :tag]) :where [?e :score]]", []),
    ("pull nested", "[:find ?e (pull ?e [:name {:friend [:name :flag]}]) :where [?e :friend]]",
     []),
    ("pull wildcard", "[:find ?e (pull ?e [*]) :where [?e :age]]", []),
    ("pull reverse", "[:find ?e (pull ?e [:db/id {:_friend [:name]}]) :where [?e :name]]", []),
    ("pull recursive", "[:find ?e (pull ?e [:db/id :name {:friend ...}]) :where [?e :tag]]",
     []),
    ("pull recursion limited", "[:find ?e (pull ?e [:db/id {:friend 2} {:_friend 1}]) "
                               ":where [?e :name]]", []),
    ("pull limit and default", '[:find ?e (pull ?e [(limit :tag 2) [:age :default -1] '
                               '[:name :as "n"]]) :where [?e :score]]', []),
]

ENTITIES = st.integers(1, 6)
VALUES = {"name": st.sampled_from(["a", "b", "c"]), "age": st.integers(0, 4),
          "tag": st.sampled_from(["x", "y", "z"]), "friend": ENTITIES,
          "score": st.integers(-2, 5), "flag": st.booleans()}
ONE = {name for name, one, _ in ATTRIBUTES if one}


@st.composite
def transactions(draw: st.DrawFn, least: int = 1, most: int = 5) -> list[list[Any]]:
    """A transaction of ``least`` to ``most`` ops ``[op e attr v]``: at most one op a datom,
    and one a cardinality-one attribute of an entity (which Datomic would refuse as a
    conflict)."""
    ops: dict[tuple[Any, ...], list[Any]] = {}
    for _ in range(draw(st.integers(least, most))):
        attribute = draw(st.sampled_from(sorted(VALUES)))
        e, v = draw(ENTITIES), draw(VALUES[attribute])
        op = draw(st.sampled_from(["add", "add", "add", "retract"]))
        key = (e, attribute) if attribute in ONE else (e, attribute, v)
        ops.setdefault(key, [op, e, attribute, v])
    return list(ops.values())


streams = st.lists(transactions(), min_size=1, max_size=6)
# A random query joins random attributes: on the streams above its result is mostly empty.
dense_streams = st.lists(transactions(least=6, most=15), min_size=2, max_size=5)


@pytest.fixture(scope="module")
def datascript() -> Iterator[Datascript]:
    peer = Datascript()
    yield peer
    peer.close()


@pytest.mark.parametrize(("query", "inputs"), [pytest.param(q, i, id=name)
                                               for name, q, i in QUERIES])
@settings(max_examples=40, deadline=None)
@given(stream=streams)
def test_the_change_stream_integrates_to_datascripts_result(
        datascript: Datascript, query: str, inputs: list[Any], stream: list[list[Any]]) -> None:
    compare(datascript, query, inputs, stream)


def compare(datascript: Datascript, query: str, inputs: list[Any], stream: list[list[Any]]
            ) -> None:
    """After each transaction of ``stream``, the registered query's integrated changes hold
    Datascript's rows — until Datascript throws on the data, where deltalog's query matches
    nothing; a query deltalog refuses, Datascript never answers with rows."""
    expected = datascript.results(stream, query, inputs)
    engine = Engine()
    engine.transact(deltalog_schema())
    try:
        view = engine.register("q", query, inputs)
    except QueryError as refusal:
        # Datascript refuses such a query when it evaluates the clause, so only where the
        # clauses before it found rows: it must never have answered with rows.
        assert not any(isinstance(step, set) and step for step in expected), refusal
        return
    for tx, wanted in zip(stream, expected, strict=True):
        forms = [[edn.keyword(f"db/{op}"), e, edn.keyword(a), v] for op, e, a, v in tx]
        add_into(view, engine.transact(forms).get("q", {}))
        if isinstance(wanted, str):  # Datascript threw on this data ("Expected number or
            return  # lookup ref for entity id, got "a"": a string where an entity is joined)
        assert {row_of(row) for row, weight in view.items() if weight} == wanted, tx
    assert set(map(row_of, engine.query(query, inputs))) == expected[-1]


CONSTANTS = {"name": '"a"', "age": "1", "tag": '"x"', "friend": "2", "score": "3",
             "flag": "true"}


# A query's variables hold one kind of value each, so that its patterns can join: entities,
# strings (names and tags), longs (ages and scores).
KINDS = {"?a": "entity", "?b": "entity", "?c": "string", "?d": "long"}
VALUE_KINDS = {"name": "string", "tag": "string", "age": "long", "score": "long",
               "friend": "entity", "flag": "boolean"}


@st.composite
def patterns(draw: st.DrawFn) -> tuple[str, set[str]]:
    """A data pattern of an entity variable and a variable of its attribute's kind, a
    constant or ``_``; its variables.  (A variable twice in one pattern is a case Datascript
    1.8.1 gets wrong.)"""
    attribute = draw(st.sampled_from(sorted(VALUES)))
    e = draw(st.sampled_from(["?a", "?b"]))
    fitting = [x for x, kind in KINDS.items() if kind == VALUE_KINDS[attribute] and x != e]
    v = draw(st.sampled_from([*fitting, CONSTANTS[attribute], "_"]))
    return f"[{e} :{attribute} {v}]", {x for x in (e, v) if x.startswith("?")}


@st.composite
def queries(draw: st.DrawFn) -> tuple[str, list[Any]]:
    """A random query: patterns, perhaps a call of the recursive rule ``reach``, then
    perhaps a comparison, a not, an or-join, a negated call; some of the bound variables
    found, perhaps with an aggregate; its inputs.  Clauses that bind come first: Datascript
    binds in the order written (a not before the clause binding its variable has it free),
    deltalog over the whole conjunction."""
    clauses, bound = [], set()
    for _ in range(draw(st.integers(1, 3))):
        clause, variables = draw(patterns())
        clauses.append(clause)
        bound |= variables
    entities = [x for x in sorted(bound) if KINDS[x] == "entity"] or ["1"]
    inputs: list[Any] = []
    call = draw(st.none() | st.sampled_from(["reach", "not reach"]))
    if call is not None:
        start = draw(st.sampled_from(entities))
        end = draw(st.sampled_from([x for x in ("?a", "?b") if x != start]))
        if call == "reach":
            clauses.append(f"(reach {start} {end})")
            bound.add(end)
        inputs = [edn.read(REACH)]
    names = sorted(bound)
    numbers = [x for x in names if KINDS[x] != "string"]
    if draw(st.booleans()):
        # < and > of values of two kinds are false here, ordered in JavaScript (1 > false)
        op = draw(st.sampled_from(["!=", "="] + (["<", ">"] if numbers else [])))
        among = numbers if op in ("<", ">") else names
        x, y = draw(st.sampled_from(among)), draw(st.sampled_from(among))
        clauses.append(f"[({op} {x} {y})]")
    if draw(st.booleans()):
        clause, _ = draw(patterns())
        clauses.append(f"(not {clause})")
    if draw(st.booleans()):
        join = draw(st.sampled_from(names))
        first, _ = draw(patterns())
        second, _ = draw(patterns())
        clauses.append(f"(or-join [{join}] {first} {second})")
    if call == "not reach":
        clauses.append(f"(not (reach {start} {end}))")
    found = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    aggregate = draw(st.none() | st.sampled_from(["count", "count-distinct", "max", "min"]))
    rest = [x for x in names if x not in found]
    if aggregate and rest:
        found.append(f"({aggregate} {draw(st.sampled_from(rest))})")
    source = " :in $ %" if inputs else ""
    return f"[:find {' '.join(found)}{source} :where {' '.join(clauses)}]", inputs


@settings(max_examples=300, deadline=None)
@given(query=queries(), stream=dense_streams)
def test_random_queries_integrate_to_datascripts_result(
        datascript: Datascript, query: tuple[str, list[Any]], stream: list[list[Any]]) -> None:
    compare(datascript, query[0], query[1], stream)
