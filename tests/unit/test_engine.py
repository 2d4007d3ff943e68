"""Classic queries as Datascript's and Datomic's documentation write them, with results
checked by hand (people, ages, friends, ancestors)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from workers.edn import keyword
from workers.engine import Engine
from workers.errors import ErrorCode, TransactionError

PEOPLE = """[{:db/id 1 :name "Ivan" :age 15 :sex :male :friend [2 3]}
             {:db/id 2 :name "Petr" :age 37 :sex :male :friend 3}
             {:db/id 3 :name "Ivan" :age 37 :sex :male}
             {:db/id 4 :name "Oleg" :age 15 :sex :male :parent 2}
             {:db/id 5 :name "Anna" :age 40 :sex :female :parent 4}
             {:db/id 6 :name "Kate" :age 8 :sex :female :parent 5}]"""
ANCESTOR = """[[(ancestor ?a ?d) [?d :parent ?a]]
               [(ancestor ?a ?d) [?m :parent ?a] (ancestor ?m ?d)]]"""


@pytest.fixture
def engine() -> Engine:
    engine = Engine()
    engine.transact(PEOPLE)
    return engine


CLASSICS: list[tuple[str, list[Any], set[tuple[Any, ...]]]] = [
    # Datascript README: names of people of age 37 (set semantics: one "Ivan")
    ('[:find ?n :where [?e :age 37] [?e :name ?n]]', [], {("Petr",), ("Ivan",)}),
    # pairs of people with the same name
    ("[:find ?e1 ?e2 :where [?e1 :name ?n] [?e2 :name ?n] [(< ?e1 ?e2)]]", [], {(1, 3)}),
    # :in scalar and collection
    ("[:find ?e :in $ ?n :where [?e :name ?n]]", ["Ivan"], {(1,), (3,)}),
    ("[:find ?e :in $ [?n ...] :where [?e :name ?n]]", [["Petr", "Oleg"]], {(2,), (4,)}),
    ("[:find ?n ?a :in $ [[?n ?a]] :where [?e :name ?n] [?e :age ?a]]",
     [[["Ivan", 15], ["Anna", 40], ["Kate", 9]]], {("Ivan", 15), ("Anna", 40)}),
    # predicates and a function binding
    ("[:find ?n :where [?e :name ?n] [?e :age ?a] [(>= ?a 18)] [(< ?a 40)]]", [],
     {("Petr",), ("Ivan",)}),
    ("[:find ?n ?next :where [?e :name ?n] [?e :age ?a] [(inc ?a) ?next] [(< ?a 10)]]", [],
     {("Kate", 9)}),
    ('[:find ?label :where [?e :name ?n] [?e :age 8] [(str ?n " is " 8) ?label]]', [],
     {("Kate is 8",)}),
    # not / not-join: people without friends; people nobody names as a friend
    ("[:find ?n :where [?e :name ?n] [?e :sex :male] (not [?e :friend _])]", [],
     {("Ivan",), ("Oleg",)}),
    ("[:find ?e :where [?e :name] (not-join [?e] [?x :friend ?e])]", [],
     {(1,), (4,), (5,), (6,)}),
    # or / or-join
    ("[:find ?n :where [?e :name ?n] (or [?e :age 8] [?e :age 40])]", [],
     {("Kate",), ("Anna",)}),
    ("[:find ?e :where [?e :name] (or-join [?e] [?e :friend 3] (and [?e :parent ?p] "
     "[?p :age 37]))]", [], {(1,), (2,), (4,)}),
    # get-else / missing?
    ("[:find ?n ?p :where [?e :name ?n] [?e :age 15] [(get-else $ ?e :parent :none) ?p]]", [],
     {("Ivan", keyword("none")), ("Oleg", 2)}),
    ("[:find ?e :where [?e :name] [(missing? $ ?e :parent)] [(missing? $ ?e :friend)]]", [],
     {(3,)}),
    # rules: Datomic's ancestor example (Petr's descendants)
    ("[:find ?n :in $ % :where [?a :name \"Petr\"] (ancestor ?a ?d) [?d :name ?n]]",
     [ANCESTOR], {("Oleg",), ("Anna",), ("Kate",)}),
    # aggregates (Datomic: grouped by the other find variables; :with keeps duplicates)
    ("[:find ?s (count ?e) :where [?e :sex ?s]]", [],
     {(keyword("male"), 4), (keyword("female"), 2)}),
    ("[:find (sum ?a) :where [?e :age ?a]]", [], {(15 + 37 + 40 + 8,)}),
    ("[:find (sum ?a) :with ?e :where [?e :age ?a]]", [], {(15 + 37 + 37 + 15 + 40 + 8,)}),
    ("[:find (min ?a) (max ?a) (count-distinct ?a) :where [?e :age ?a]]", [], {(8, 40, 4)}),
    ("[:find ?s (avg ?a) :with ?e :where [?e :sex ?s] [?e :age ?a]]", [],
     {(keyword("male"), 26.0), (keyword("female"), 24.0)}),
    ("[:find ?n (distinct ?a) :where [?e :name ?n] [?e :age ?a]]", [],
     {("Ivan", frozenset({15, 37})), ("Petr", frozenset({37})), ("Oleg", frozenset({15})),
      ("Anna", frozenset({40})), ("Kate", frozenset({8}))}),
]


@pytest.mark.parametrize(("query", "inputs", "expected"),
                         [pytest.param(q, i, e, id=q) for q, i, e in CLASSICS])
def test_classic_query_gives_the_documented_result(engine: Engine, query: str,
                                                   inputs: list[Any], expected: set[Any]) -> None:
    assert set(engine.query(query, inputs)) == expected
    assert set(engine.register("q", query, inputs)) == expected


def test_keys_return_maps_in_the_one_shot_api(engine: Engine) -> None:
    rows = engine.query("[:find ?n ?a :keys name age :where [?e :name ?n] [?e :age ?a] "
                        "[(> ?a 37)]]")
    assert rows == [{keyword("name"): "Anna", keyword("age"): 40}]
    strs = engine.query("[:find ?n :strs name :where [?e :age 8] [?e :name ?n]]")
    assert strs == [{"name": "Kate"}]


def test_max_survives_the_retraction_of_the_current_extreme(engine: Engine) -> None:
    engine.register("oldest", "[:find (max ?a) :where [?e :age ?a]]")
    assert engine.transact("[[:db/retractEntity 5]]") == {"oldest": {(40,): -1, (37,): 1}}


def test_ancestors_follow_a_broken_and_a_restored_link(engine: Engine) -> None:
    query = "[:find ?d :in $ % :where [?a :name \"Petr\"] (ancestor ?a ?d)]"
    assert set(engine.register("d", query, [ANCESTOR])) == {(4,), (5,), (6,)}
    assert engine.transact("[[:db/retract 5 :parent 4]]") == {"d": {(5,): -1, (6,): -1}}
    assert engine.transact("[[:db/add 5 :parent 2]]") == {"d": {(5,): 1, (6,): 1}}


REACH = "[[(reach ?a ?b) [?a :to ?b]] [(reach ?a ?b) [?a :to ?c] (reach ?c ?b)]]"
REACH_FROM_1 = "[:find ?b :in $ % :where (reach 1 ?b)]"


def test_a_cycle_cut_from_its_entry_is_deleted_although_it_derives_itself() -> None:
    """1 → 2 ⇄ 3, recursion on the left: each of reach(1, 2), reach(1, 3) has a derivation
    through the other; the delete's support check must not accept that circular support."""
    engine = Engine()
    engine.transact("[[:db/add 1 :to 2] [:db/add 2 :to 3] [:db/add 3 :to 2]]")
    left = "[[(reach ?a ?b) [?a :to ?b]] [(reach ?a ?b) (reach ?a ?c) [?c :to ?b]]]"
    assert set(engine.register("r", REACH_FROM_1, [left])) == {(2,), (3,)}
    assert engine.transact("[[:db/retract 1 :to 2]]") == {"r": {(2,): -1, (3,): -1}}


def test_a_head_kept_through_a_new_edge_is_checked_again_when_its_premise_goes() -> None:
    """reach(4, 4) (level 5+, from a later tick) loses 5 → 4 and gains 4 → 7 in one tick; in
    the new state it has a derivation through 4 → 7 and reach(7, 4), of a lower level and
    not marked yet — but reach(7, 4) rests on 5 → 4 too, three steps away, and is marked
    later; a head derived from it through the new edge only must be checked again."""
    engine = Engine()
    engine.transact("[[:db/add 7 :to 8] [:db/add 8 :to 9] [:db/add 9 :to 5]"
                    " [:db/add 5 :to 4]]")
    everything = "[:find ?a ?b :in $ % :where (reach ?a ?b)]"
    engine.register("r", everything, [REACH])
    engine.transact("[[:db/add 4 :to 5]]")
    changes = engine.transact("[[:db/retract 5 :to 4] [:db/add 4 :to 7]]")["r"]
    assert changes.get((4, 4)) == -1
    assert set(engine.result("r")) == set(engine.query(everything, [REACH]))


def test_a_deleted_edge_with_another_path_changes_nothing() -> None:
    """1 → 2 → 4 and 1 → 3 → 4 → 5: removing 2 → 4 keeps every pair (proved through 3)."""
    engine = Engine()
    engine.transact("[[:db/add 1 :to 2] [:db/add 2 :to 4] [:db/add 1 :to 3] [:db/add 3 :to 4]"
                    " [:db/add 4 :to 5]]")
    assert set(engine.register("r", REACH_FROM_1, [REACH])) == {(2,), (3,), (4,), (5,)}
    assert engine.transact("[[:db/retract 2 :to 4]]") == {}
    assert engine.transact("[[:db/retract 3 :to 4]]") == {"r": {(4,): -1, (5,): -1}}


@pytest.mark.parametrize("query", [
    "[:find ?s (count ?e) :where [?e :sex ?s]]",
    "[:find ?n :in $ % :where [?a :name \"Petr\"] (ancestor ?a ?d) [?d :name ?n]]",
])
def test_a_query_resumed_without_its_result_keeps_its_state(engine: Engine, query: str) -> None:
    """A worker resuming a query (``bootstrap=False``) emits nothing for the current result,
    but aggregate groups and derived relations must start from it, or the next tick's
    changes would be wrong; and after a snapshot restore too."""
    fresh = Engine()
    fresh.transact(PEOPLE)
    fresh.register("q", query, [ANCESTOR] if "%" in query else [])
    engine.register("q", query, [ANCESTOR] if "%" in query else [], bootstrap=False)
    tx = "[[:db/retractEntity 6] [:db/add 7 :name \"Ivo\"] [:db/add 7 :sex :male] " \
         "[:db/add 7 :parent 2]]"
    assert engine.transact(tx) == fresh.transact(tx) != {}
    state = copy.deepcopy(engine.state())  # a snapshot (the state shares the live tries)
    engine.transact("[[:db/retractEntity 7]]")
    engine.restore(state)
    fresh.restore(state)
    tx = "[[:db/add 8 :sex :male] [:db/retract 7 :name \"Ivo\"]]"
    assert engine.transact(tx) == fresh.transact(tx) != {}


def test_values_come_back_as_the_kind_they_were_written() -> None:
    """One dictionary numbers the values of every position: a boolean ``true`` or a double
    ``2.0`` stored where entity ids ``1`` and ``2`` exist comes back as written."""
    engine = Engine()
    engine.transact("[[:db/add 1 :g/to 2] [:db/add 2 :active true] [:db/add 2 :price 2.0]]")
    active = engine.query("[:find ?a :where [_ :active ?a]]")
    price = engine.query("[:find ?p :where [_ :price ?p]]")
    entity = engine.query("[:find ?e :where [?e :g/to _]]")
    assert [type(row[0]) for rows in (active, price, entity) for row in rows] == [
        bool, float, int]


def test_columns_of_different_lengths_are_refused() -> None:
    with pytest.raises(TransactionError, match="columns of different lengths: 2 entities, "
                                               "1 attributes, 2 values") as refused:
        Engine().transact_columns([1, 2], [keyword("g/to")], [3, 4])
    assert refused.value.code is ErrorCode.TX_SHAPE


def test_columns_take_one_attribute_and_retractions() -> None:
    engine = Engine()
    to = keyword("g/to")
    engine.register("edges", "[:find ?a ?b :where [?a :g/to ?b]]")
    assert engine.transact_columns([1, 2, 3], to, [2, 3, 1]) == {
        "edges": {(1, 2): 1, (2, 3): 1, (3, 1): 1}}
    assert engine.transact_columns([1, 3], to, [2, 1], added=[False, True]) == {
        "edges": {(1, 2): -1}}


ADD, RETRACT, AGE = keyword("db/add"), keyword("db/retract"), keyword("age")


@pytest.mark.parametrize("tx", [
    [[ADD, 1, AGE, 30], [ADD, 1]],  # malformed: the grammar refuses it
    [[ADD, 1, AGE, 30], [RETRACT, 1, AGE, 30]],  # adds and retracts one datom: refused
    [{keyword("db/ident"): keyword("score"), keyword("db/cardinality"):
      keyword("db.cardinality/one")}, [ADD, 1, keyword("score"), 3]],  # touches the schema
    [[ADD, 1, AGE, 30], [ADD, 2, AGE, 31]],  # the bulk path's own
])
def test_a_big_transaction_refuses_and_changes_as_op_by_op(tx: list[Any]) -> None:
    """``transact`` of ``bulk_datoms`` ops or more parses once; what the bulk path cannot
    take goes op by op from that parse, with the same error or the same datoms."""
    outcomes = []
    for engine in (Engine(), Engine(bulk_datoms=0)):
        try:
            engine.transact(tx)
            outcomes.append(sorted(map(repr, engine.db.datoms())))
        except TransactionError as error:
            outcomes.append([str(error)])
    assert outcomes[1] == outcomes[0]


def test_a_restore_copies_the_dictionary_unless_it_adopts_the_state() -> None:
    """A state may be restored again elsewhere, so its dictionary is copied; a snapshot
    just read is handed over (``adopt``) and numbered in as it is."""
    source = Engine()
    source.transact('[[:db/add 1 :name "Ivan"]]')
    state = source.state()
    size = state.values.size
    copied, adopted = Engine(), Engine()
    copied.restore(state)
    copied.transact('[[:db/add 2 :name "Oleg"]]')
    assert state.values.size == size and copied.db.ids is not state.values
    adopted.restore(state, adopt=True)
    adopted.transact('[[:db/add 3 :name "Petr"]]')
    assert adopted.db.ids is state.values and state.values.size > size
    assert adopted.query("[:find ?n :where [_ :name ?n]]") == {("Ivan",): 1, ("Petr",): 1}


def test_a_state_shares_the_dictionary_only_when_asked() -> None:
    """A snapshot written at once (the worker's) needs no copy of the dictionary; any other
    state must not change when the engine goes on numbering values."""
    engine = Engine()
    engine.transact('[[:db/add 1 :name "Ivan"]]')
    copied, shared = engine.state(), engine.state(shared=True)
    assert shared.values is engine.db.ids and copied.values is not engine.db.ids
    size = copied.values.size
    engine.transact('[[:db/add 2 :name "Oleg"]]')
    assert copied.values.size == size < shared.values.size
