"""Every Datalog feature beyond data patterns, kept live incrementally: after every
transaction of a random stream (adds, retracts, retractEntity, cardinality-one updates),
the integrated changes equal the from-scratch oracle (:mod:`workers.testing`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings

from tests.property.strategies import (
    ADD,
    NAME,
    RETRACT,
    SCHEMA_TX,
    TO,
    reference_db,
    tx_streams,
)
from workers.edn import keyword
from workers.engine import Engine
from workers.errors import TransactionError
from workers.testing import evaluate_from_scratch
from workers.zset import add_into

REACH = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]"
SAME_GENERATION = ("[[(sg ?x ?y) [?p :g/to ?x] [?p :g/to ?y]]"
                   " [(sg ?x ?y) [?a :g/to ?x] [?b :g/to ?y] (sg ?a ?b)]]")
EVEN_ODD = ("[[(odd ?a ?b) [?a :g/to ?b]] [(odd ?a ?b) [?a :g/to ?c] (even ?c ?b)]"
            " [(even ?a ?b) [?a :g/to ?c] (odd ?c ?b)]]")
UNREACHABLE = REACH[:-1] + " [(cut ?a ?b) [?a :name] [?b :name] (not (reach ?a ?b))]]"
# Rules whose arguments the caller must bind (written [?a], or not bindable by the body):
# evaluated from the values the calls bind.
REACH_FROM = ("[[(reach [?a] ?b) [?a :g/to ?b]] [(reach [?a] ?b) [?a :g/to ?c] (reach ?c ?b)]"
              " [(big [?x]) [(> ?x 10)]] [(succ [?t] ?u) [(inc ?t) ?u]]"
              " [(cut ?a ?b) [?a :name] [?b :name] (not (reach ?a ?b))]"
              " [(small ?x) [(< ?x 3)]] [(pred ?u ?t) [(dec ?t) ?u]]]")

FEATURES: list[tuple[str, str, list[Any]]] = [
    ("predicate", "[:find ?e ?a :where [?e :age ?a] [(< ?a 30)]]", []),
    ("predicate on two variables", "[:find ?x ?y :where [?x :g/to ?y] [(< ?x ?y)]]", []),
    ("type predicates", '[:find ?e :where [?e :name ?n] [(not= ?n "x")] [(string? ?n)]]', []),
    ("str binding", '[:find ?e ?s :where [?e :name ?n] [?e :age ?a] [(str ?n "-" ?a) ?s]]',
     []),
    ("function result joined", "[:find ?x ?z :where [?x :tag ?t] [(inc ?t) ?u] [?z :tag ?u]]",
     []),
    ("tuple binding", "[:find ?e ?p :where [?e :age ?a] [(vector ?a 1) [?p _]]]", []),
    ("collection input", "[:find ?e :in $ [?n ...] :where [?e :name ?n]]", [["Ivan", "x"]]),
    ("relation input", "[:find ?e ?t :in $ [[?n ?t]] :where [?e :name ?n]]",
     [[["Ivan", 1], ["Petr", 2]]]),
    ("tuple input", "[:find ?e :in $ [?a ?b] :where [?e :age ?a] [?e :tag ?b]]", [[30, 1]]),
    ("input returned by find", "[:find ?e ?n :in $ ?n :where [?e :name ?n]]", ["Ivan"]),
    ("tuple input returned", "[:find ?e ?a ?t :in $ [?a ?t] :where [?e :age ?a] [?e :tag ?t]]",
     [[30, 1]]),
    ("inputs only, no where", "[:find ?a ?b :in ?a ?b]", [1, 2]),
    ("relation input with a blank", "[:find ?e ?t :in $ [[?n _ ?t]] :where [?e :name ?n]]",
     [[["Ivan", 0, 1], ["Petr", 0, 2]]]),
    ("nested collection input", "[:find ?e ?k :in $ [[?k [?n ...]] ...] :where [?e :name ?n]]",
     [{"a": ["Ivan", "x"], "b": ["Petr"]}]),
    ("nested function binding", "[:find ?e ?x :where [?e :tag ?t] [(vector ?e ?t) ?p] "
                                "[(vector ?p 1) [[?x _] _]]]", []),
    ("find-scalar streams its relation", "[:find ?e . :where [?e :age 30]]", []),
    ("find-coll over a rule", "[:find [?b ...] :in $ % :where (reach 1 ?b)]", [REACH]),
    ("find-tuple", "[:find [?e ?t] :where [?e :tag ?t] (not [?e :age 1])]", []),
    ("regex literal", '[:find ?e :where [?e :name ?n] [(re-find #"^[IP]" ?n)]]', []),
    ("get-else on a constant entity", "[:find ?a :where [(get-else $ 1 :age 0) ?a]]", []),
    ("not", "[:find ?e :where [?e :name] (not [?e :age 30])]", []),
    ("not over a join", "[:find ?x ?y :where [?x :g/to ?y] (not [?y :g/to ?x])]", []),
    ("not-join", "[:find ?e :where [?e :name] (not-join [?e] [?e :g/to ?y] [?y :tag 2])]", []),
    ("not of a predicate", "[:find ?e ?a :where [?e :age ?a] (not [(> ?a 10)])]", []),
    ("or", "[:find ?e :where (or [?e :tag 1] [?e :age 30])]", []),
    ("or-join with and", "[:find ?e :where [?e :name] "
                         "(or-join [?e] [?e :tag 2] (and [?e :g/to ?x] [?x :age 30]))]", []),
    ("or with a variable bound outside it",
     "[:find ?e ?t :where [?x :tag ?t] (or [?e :tag ?t] [?e :age 30])]", []),
    ("or with an :in variable in one branch",
     "[:find ?e :in $ ?a :where (or [?e :age ?a] [?e :tag 1])]", [30]),
    ("or of predicates", "[:find ?e ?a :where [?e :age ?a] (or [(< ?a 2)] [(> ?a 20)])]", []),
    ("or bound by another or", "[:find ?e :where (or [?e :tag 1] [?e :tag 2]) "
                               "(or-join [?e] [(> ?e 1)] [?e :age 30])]", []),
    ("not of a predicate over an or", "[:find ?e :where (or [?e :tag 1] [?e :tag 2]) "
                                      "(not [(> ?e 2)])]", []),
    ("or inside not-join", "[:find ?e :where [?e :tag ?t] "
                           "(not-join [?e] [?e :tag ?t] (or [(> ?t 1)] [(< ?t 0)]))]", []),
    ("not after a function", "[:find ?y :where [?e :tag ?x] [(inc ?x) ?y] (not [(> ?y 2)])]",
     []),
    ("get-else", "[:find ?e ?a :where [?e :name] [(get-else $ ?e :age 0) ?a]]", []),
    ("missing?", "[:find ?e :where [?e :name] [(missing? $ ?e :tag)]]", []),
    ("transitive closure", "[:find ?a ?b :in $ % :where (reach ?a ?b)]", [REACH]),
    ("closure from a constant", "[:find ?b :in $ % :where (reach 1 ?b)]", [REACH]),
    ("same generation", "[:find ?x ?y :in $ % :where (sg ?x ?y)]", [SAME_GENERATION]),
    ("mutual recursion", "[:find ?a ?b :in $ % :where (even ?a ?b)]", [EVEN_ODD]),
    ("stratified negation", "[:find ?a ?b :in $ % :where (cut ?a ?b)]", [UNREACHABLE]),
    ("rules section", "{:find [?a] :where [(reach ?a ?a)] :rules " + REACH + "}", []),
    ("count", "[:find ?e (count ?t) :where [?e :tag ?t]]", []),
    ("with without aggregate (a bag)", "[:find ?t :with ?e :where [?e :tag ?t] "
                                       "(not [?e :age 30])]", []),
    ("sum with", "[:find (sum ?a) :with ?e :where [?e :age ?a]]", []),
    ("min max", "[:find (min ?a) (max ?a) :where [?e :age ?a]]", []),
    ("avg count-distinct", "[:find ?t (avg ?a) (count-distinct ?a) :with ?e "
                           ":where [?e :tag ?t] [?e :age ?a]]", []),
    ("distinct", "[:find ?x (distinct ?y) :where [?x :g/to ?y]]", []),
    ("aggregate over a rule", "[:find ?a (count ?b) :in $ % :where (reach ?a ?b)]", [REACH]),
    ("median variance stddev", "[:find ?t (median ?a) (variance ?a) (stddev ?a) :with ?e "
                               ":where [?e :tag ?t] [?e :age ?a]]", []),
    ("min n max n", "[:find ?x (min 2 ?y) (max 2 ?y) :where [?x :g/to ?y]]", []),
    ("min n from :in", "[:find (min ?n ?a) (max ?n ?a) :in $ ?n :with ?e :where [?e :age ?a]]",
     [2]),
    ("aggregate that fails on some values", "[:find (sum ?v) (median ?v) :with ?e "
                                            ":where (or [?e :age ?v] [?e :name ?v])]", []),
    ("required rule with a body that needs its head",
     "[:find ?e :in $ % :where [?e :age ?a] (big ?a)]", [REACH_FROM]),
    ("required rule under not", "[:find ?e :in $ % :where [?e :age ?a] (not (big ?a))]",
     [REACH_FROM]),
    ("required rule of a function", "[:find ?x ?z :in $ % :where [?x :tag ?t] (succ ?t ?u) "
                                    "[?z :tag ?u]]", [REACH_FROM]),
    ("rule whose body needs its head bound, unmarked",
     "[:find ?e ?a :in $ % :where [?e :age ?a] (small ?a)]", [REACH_FROM]),
    ("rule needing its second argument", "[:find ?x ?z :in $ % :where [?x :tag ?t] "
                                         "(pred ?u ?t) [?z :tag ?u]]", [REACH_FROM]),
    ("required recursive rule", "[:find ?a ?b :in $ % :where [?a :name] (reach ?a ?b)]",
     [REACH_FROM]),
    ("required recursive rule from a constant", "[:find ?b :in $ % :where (reach 1 ?b)]",
     [REACH_FROM]),
    ("required rule under a negated rule", "[:find ?a ?b :in $ % :where (cut ?a ?b)]",
     [REACH_FROM]),
    ("get-some", "[:find ?e ?a ?v :where [?e :tag] [(get-some $ ?e :name :age) [?a ?v]]]", []),
    ("a function returning nil binds nothing", '[:find ?e ?m :where [?e :name ?n] '
                                               '[(re-find "[IP]" ?n) ?m]]', []),
    # Forms of both halves of issue 18 together.
    ("(max n) of a tuple input, returned", "[:find ?n (max ?n ?a) :in $ [?n ?t] "
                                           ":where [?e :age ?a] [?e :tag ?t]]", [[2, 1]]),
    ("find-scalar of (max n)", "[:find (max 2 ?a) . :where [?e :age ?a]]", []),
    ("required rule bound by a nested input",
     "[:find ?a ?b :in $ % [[?a _] ...] :where (reach ?a ?b)]", [REACH_FROM, [[1, 0], [2, 0]]]),
    ("get-some into a bag", "[:find ?v :with ?e :where [?e :tag] "
                            "[(get-some $ ?e :name :age) [_ ?v]]]", []),
    # Datascript's conformance cases (tests/unit/conformance)
    ("missing? of a reverse attribute", "[:find ?e :where [?e :name] [(missing? $ ?e :g/_to)]]",
     []),
    ("or-join with a required input", "[:find ?e :in $ ?a :where (or-join [[?a] ?e] "
                                      "[?e :age ?a] [?e :tag 1])]", [30]),
    ("map values of an input read by get", "[:find ?e ?x :in $ [[?n ?m] ...] "
                                           ":where [?e :name ?n] [(get ?m :x) ?x]]",
     [[["Ivan", {keyword("x"): 1}], ["Petr", {keyword("x"): 2}]]]),
    ("more built-ins", '[:find ?e ?k ?c ?r :where [?e :name ?n] [(clojure.string/lower-case ?n) '
                       '?l] [(keyword "p" ?l) ?k] [(compare ?n "Petr") ?c] '
                       '[(clojure.string/replace ?n "a" "o") ?r] [(name ?k) ?l]]', []),
]


def replay(query: str, inputs: list[Any], stream: list[list[Any]]) -> None:
    """Row at a time, and vectorised (every tick) when the vectorised executor takes the
    plan (data patterns only): both integrate to the oracle after every transaction."""
    reference = reference_db()
    engines = [Engine()]
    if not engines[0].plan(query, inputs).body.keeps_relations:
        engines.append(Engine(vector_datoms=0))
    views = []
    for engine in engines:
        engine.transact(SCHEMA_TX)
        views.append(engine.register("q", query, inputs))
    for tx in stream:
        accepted = reference.transact(tx)
        expected = evaluate_from_scratch(query, reference.datoms, inputs)
        for engine, view in zip(engines, views, strict=True):
            try:
                add_into(view, engine.transact(tx).get("q", {}))
            except TransactionError:
                assert not accepted, tx
            assert view == expected, tx


@pytest.mark.parametrize(("query", "inputs"), [pytest.param(q, i, id=name)
                                               for name, q, i in FEATURES])
@settings(max_examples=60)
@given(stream=tx_streams)
@example(stream=[[[ADD, 1, TO, 2], [ADD, 2, TO, 3]], [[ADD, 3, TO, 1]], [[RETRACT, 2, TO, 3]],
                 [[ADD, 2, TO, 3]]])
def test_feature_matches_recompute(query: str, inputs: list[Any],
                                   stream: list[list[Any]]) -> None:
    replay(query, inputs, stream)


@pytest.mark.parametrize(("query", "inputs"), [pytest.param(q, i, id=name)
                                               for name, q, i in FEATURES[::3]])
@settings(max_examples=25)
@given(before=tx_streams, after=tx_streams)
def test_registering_on_a_populated_db_starts_from_the_current_result(
        query: str, inputs: list[Any], before: list[list[Any]],
        after: list[list[Any]]) -> None:
    check_registered_midstream(query, inputs, before, after,
                               lambda datoms: evaluate_from_scratch(query, datoms, inputs))


def check_registered_midstream(query: str, inputs: list[Any], before: list[list[Any]],
                               after: list[list[Any]],
                               oracle: Callable[[Any], dict[Any, int]]) -> None:
    """A query registered after ``before`` starts from ``oracle`` of the database then, and
    its changes over ``after`` integrate to ``oracle`` of the database at the end."""
    engine, reference = Engine(), reference_db()
    engine.transact(SCHEMA_TX)
    for tx in before:
        if reference.transact(tx):
            engine.transact(tx)
    view = engine.register("q", query, inputs)
    assert view == oracle(reference.datoms)
    for tx in after:
        if reference.transact(tx):
            add_into(view, engine.transact(tx).get("q", {}))
    assert view == oracle(reference.datoms) == engine.result("q")


@pytest.mark.parametrize("seed", range(4))
def test_closure_follows_deletions_that_break_and_recreate_paths(seed: int) -> None:
    """A 9-node random graph, 120 single-edge ticks: deletes of present edges (often on a
    path) and re-inserts of deleted ones; the closure and the pairs it cannot reach match
    the oracle after every tick."""
    rng = random.Random(seed)
    edges = {(a, b) for a in range(9) for b in range(9) if a != b and rng.random() < 0.2}
    queries = {"reach": ("[:find ?a ?b :in $ % :where (reach ?a ?b)]", [REACH]),
               "cut": ("[:find ?a ?b :in $ % :where (cut ?a ?b)]", [UNREACHABLE])}
    engine, reference = Engine(), reference_db()
    names = [[ADD, n, NAME, f"n{n}"] for n in range(9)]
    initial = names + [[ADD, a, TO, b] for a, b in sorted(edges)]
    engine.transact(initial)
    reference.transact(initial)
    views = {name: engine.register(name, q, i) for name, (q, i) in queries.items()}
    removed: list[tuple[int, int]] = []
    for tick in range(120):
        present = sorted((d[0], d[2]) for d in reference.datoms if d[1] == TO)
        if removed and (not present or rng.random() < 0.5):
            edge = removed.pop(rng.randrange(len(removed)))
            tx = [[ADD, edge[0], TO, edge[1]]]
        else:
            edge = rng.choice(present)
            removed.append(edge)
            tx = [[RETRACT, edge[0], TO, edge[1]]]
        reference.transact(tx)
        changes = engine.transact(tx)
        for name, (query, inputs) in queries.items():
            add_into(views[name], changes.get(name, {}))
            assert views[name] == evaluate_from_scratch(query, reference.datoms, inputs), \
                (name, tick, tx)
