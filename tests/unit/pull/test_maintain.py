"""workers.pull.maintain through the engine: pull in one-shot queries (Datascript's
query_pull.cljc examples) and in registered ones, whose rows change as ``-old +new`` pairs
when a datom the pull reads changes; and :meth:`PullReader.roots`, which says which
entities a tick re-pulls."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from workers import edn
from workers.datalog.pull import frozen, parse_pattern
from workers.engine import Engine
from workers.pull import PullReader
from workers.zset import ZSet
from workers.zset.row import Row

PEOPLE = """[{:db/id 1 :name "Petr" :age 44} {:db/id 2 :name "Ivan" :age 25}
             {:db/id 3 :name "Oleg" :age 11}]"""
ONE = """[{:db/ident :name :db/cardinality :db.cardinality/one}
          {:db/ident :age :db/cardinality :db.cardinality/one}
          {:db/ident :friend :db/valueType :db.type/ref}]"""
ADULTS = "[:where [?e :age ?a] [(>= ?a 18)]]"


def rows(text: str) -> ZSet[Row]:
    """Expected rows written as an EDN vector of row vectors, each of weight 1."""
    return {tuple(row): 1 for row in m(text)}


def m(text: str) -> Any:
    """An EDN value as a row holds it (hashable maps and vectors)."""
    return frozen(edn.read(text))


@pytest.fixture
def people() -> Engine:
    engine = Engine()
    engine.transact(ONE)
    engine.transact(PEOPLE)
    return engine


@pytest.mark.parametrize(("find", "expected"), [
    ("[(pull ?e [:name])]", '[[{:name "Ivan"}] [{:name "Petr"}]]'),
    ("[(pull ?e [*])]", '[[{:db/id 2 :age 25 :name "Ivan"}] [{:db/id 1 :age 44 :name "Petr"}]]'),
    ("[?e (pull ?e [:name])]", '[[2 {:name "Ivan"}] [1 {:name "Petr"}]]'),
    ("[?e ?a (pull ?e [:name])]", '[[2 25 {:name "Ivan"}] [1 44 {:name "Petr"}]]'),
    ("[?e (pull ?e [:name]) ?a]", '[[2 {:name "Ivan"} 25] [1 {:name "Petr"} 44]]'),
], ids=str)
def test_one_shot_rows_hold_the_pulled_map(people: Engine, find: str, expected: str) -> None:
    assert people.query(f"[:find {find[1:-1]} {ADULTS[1:-1]}]") == rows(expected)


def test_pattern_given_as_an_input(people: Engine) -> None:
    query = "[:find (pull ?e ?pattern) :in $ ?pattern :where [?e :age ?a] [(>= ?a 18)]]"
    assert people.query(query, [[edn.keyword("name")]]) == rows(
        '[[{:name "Ivan"}] [{:name "Petr"}]]')


def test_pull_next_to_aggregates() -> None:
    engine = Engine()
    engine.transact("[{:db/ident :name :db/cardinality :db.cardinality/one}]")
    engine.transact('[{:db/id 1 :name "Petr" :value [10 20 30 40]} '
                    '{:db/id 2 :name "Ivan" :value [14 16]} {:db/id 3 :name "Oleg" :value 1}]')
    assert engine.query("[:find ?e (pull ?e [:name]) (min ?v) (max ?v) :where [?e :value ?v]]") \
        == rows('[[1 {:name "Petr"} 10 40] [2 {:name "Ivan"} 14 16] [3 {:name "Oleg"} 1 1]]')


def test_equal_maps_of_two_entities_count_twice(people: Engine) -> None:
    people.transact('[[:db/add 3 :name "Ivan"]]')
    assert people.query("[:find (pull ?e [:name]) :where [?e :age]]") == {
        (m('{:name "Ivan"}'),): 2, (m('{:name "Petr"}'),): 1}


def test_changed_datom_under_the_pull_gives_old_and_new_row(people: Engine) -> None:
    people.register("q", "[:find ?e (pull ?e [:name]) :where [?e :age ?a] [(>= ?a 18)]]")
    assert people.transact('[[:db/add 2 :name "Ivanov"]]') == {"q": {
        (2, m('{:name "Ivan"}')): -1, (2, m('{:name "Ivanov"}')): 1}}
    assert people.transact('[[:db/add 3 :name "Olga"]]') == {}  # 3 is not in the result


def test_nested_and_reverse_pulls_follow_the_referenced_entities(people: Engine) -> None:
    people.transact("[[:db/add 1 :friend 2]]")
    people.register("q", "[:find (pull ?e [:name {:friend [:name]} {:_friend [:age]}]) "
                         ":where [?e :age]]")
    assert people.transact('[[:db/add 2 :name "Vanya"]]') == {"q": {
        (m('{:name "Petr" :friend [{:name "Ivan"}]}'),): -1,
        (m('{:name "Petr" :friend [{:name "Vanya"}]}'),): 1,
        (m('{:name "Ivan" :_friend [{:age 44}]}'),): -1,
        (m('{:name "Vanya" :_friend [{:age 44}]}'),): 1}}
    assert people.transact("[[:db/add 1 :age 45]]") == {"q": {
        (m('{:name "Vanya" :_friend [{:age 44}]}'),): -1,
        (m('{:name "Vanya" :_friend [{:age 45}]}'),): 1}}


def test_row_leaving_takes_its_map_as_last_emitted(people: Engine) -> None:
    people.register("q", "[:find (pull ?e [:name]) :where [?e :age ?a] [(>= ?a 18)]]")
    assert people.transact('[[:db/add 1 :name "P"] [:db/add 1 :age 3]]') == {"q": {
        (m('{:name "Petr"}'),): -1}}


def test_schema_change_re_pulls_every_held_entity() -> None:
    engine = Engine()
    engine.transact('[[:db/add 1 :nick "a"] [:db/add 1 :boss 2]]')
    engine.register("q", "[:find (pull ?e [:nick :boss]) :where [?e :nick]]")
    changes = engine.transact("[{:db/ident :nick :db/cardinality :db.cardinality/one} "
                              "{:db/ident :boss :db/valueType :db.type/ref}]")
    assert changes == {"q": {(m('{:nick ["a"] :boss [2]}'),): -1,
                             (m('{:nick "a" :boss [{:db/id 2}]}'),): 1}}


def test_wildcard_query_is_stepped_for_any_attribute(people: Engine) -> None:
    people.register("q", "[:find (pull ?e [*]) :where [?e :name \"Oleg\"]]")
    assert people.transact("[[:db/add 3 :shoe 42]]") == {"q": {
        (m('{:db/id 3 :name "Oleg" :age 11}'),): -1,
        (m('{:db/id 3 :name "Oleg" :age 11 :shoe [42]}'),): 1}}


@pytest.mark.parametrize(("pattern", "tx", "roots"), [
    ("[:name]", '[[:db/add 3 :name "x"] [:db/add 4 :age 1]]', {3}),
    ("[{:friend [:name]}]", '[[:db/add 3 :name "x"]]', {1}),  # 1 -> 3; 3 reads no name
    ("[{:friend [:age]}]", '[[:db/add 3 :name "x"]]', set()),
    ("[{:_friend [:name]}]", '[[:db/add 1 :name "x"]]', {3}),  # 1 -> 3: 3's referrer
    ("[{:friend [{:friend [:name]}]}]", '[[:db/add 2 :name "x"]]', {1}),  # 1 -> 3 -> 2
    ("[:age {:friend [*]}]", "[[:db/add 3 :shoe 1]]", {1}),
    ("[* {:friend [:name]}]", '[[:db/add 3 :name "x"]]', {1, 3}),
    ("[:age]", "[{:db/ident :age :db/cardinality :db.cardinality/many}]", None),
    ("[:age]", "[{:db/ident :shoe :db/cardinality :db.cardinality/many}]", set()),
    ("[*]", "[{:db/ident :shoe :db/cardinality :db.cardinality/many}]", None),
], ids=str)
def test_roots_are_the_entities_whose_pull_reads_a_changed_datom(
        pattern: str, tx: str, roots: set[int] | None) -> None:
    engine = Engine()
    engine.transact(ONE)
    engine.transact("[[:db/add 1 :friend 3] [:db/add 3 :friend 2]]")
    delta = engine.db.encode({datom: 1 for datom in _datoms(engine, tx)})
    engine.db.apply(delta)
    assert PullReader(engine.db, engine.schema).roots(parse_pattern(pattern), delta) == roots


def _datoms(engine: Engine, tx: str) -> list[tuple[Any, Any, Any]]:
    """The datoms ``tx`` adds, as the engine would (normalised against its database)."""
    from workers.db import normalise, parse_tx
    normalised = normalise(parse_tx(edn.read(tx)), engine.db, engine.schema, engine.tx + 1)
    return [d for d, w in normalised.delta.items() if w > 0]


def test_query_resumed_without_its_result_still_retracts_the_old_map(people: Engine) -> None:
    """A worker resuming a query (``bootstrap=False``) after a restore: its first change
    must retract the map its committed stream holds."""
    restored = Engine()
    restored.restore(people.state())
    restored.register("q", "[:find (pull ?e [:name]) :where [?e :age 25]]", bootstrap=False)
    assert restored.transact('[[:db/add 2 :name "Vanya"]]') == {"q": {
        (m('{:name "Ivan"}'),): -1, (m('{:name "Vanya"}'),): 1}}


def test_pulled_rows_named_by_keys(people: Engine) -> None:
    assert people.query("[:find ?e (pull ?e [:name]) :keys id person :where [?e :age 25]]") \
        == [{edn.keyword("id"): 2, edn.keyword("person"): m('{:name "Ivan"}')}]


def test_with_variables_are_not_shown_and_count_the_rows(people: Engine) -> None:
    people.transact("[[:db/add 2 :tag 1] [:db/add 2 :tag 2]]")
    assert people.query("[:find (pull ?e [:name]) :with ?t :where [?e :tag ?t]]") == {
        (m('{:name "Ivan"}'),): 2}


def test_a_value_changing_kind_changes_the_map() -> None:
    """1, 1.0 and true are three values (docs/semantics.md), so maps holding them are three
    maps, although Python finds them equal: rows do not merge, and a change shows."""
    engine = Engine()
    engine.transact("[[:db/add 1 :x 1] [:db/add 2 :x true] [:db/add 3 :x 1.0] "
                    "[:db/add 4 :friend 1]]")
    engine.register("xs", "[:find (pull ?e [:x]) :where [?e :x]]")
    assert engine.result("xs") == {(m("{:x [1]}"),): 1, (m("{:x [true]}"),): 1,
                                   (m("{:x [1.0]}"),): 1}
    engine.register("friends", "[:find (pull ?e [{:friend [:x]}]) :where [?e :friend]]")
    assert engine.transact("[[:db/retract 4 :friend 1] [:db/add 4 :friend 2]]") == {
        "friends": {(m("{:friend [{:x [1]}]}"),): -1, (m("{:friend [{:x [true]}]}"),): 1}}
    assert engine.transact("[[:db/retract 4 :friend 2] [:db/add 4 :friend 3]]") == {
        "friends": {(m("{:friend [{:x [true]}]}"),): -1, (m("{:friend [{:x [1.0]}]}"),): 1}}


def test_with_variables_count_the_rows_of_a_registered_pull(people: Engine) -> None:
    """``:with`` alone projects the basis to a bag before the pull: weights follow it."""
    people.register("q", "[:find (pull ?e [:name]) :with ?t :where [?e :tag ?t]]")
    assert people.transact("[[:db/add 2 :tag 1] [:db/add 2 :tag 2]]") == {"q": {
        (m('{:name "Ivan"}'),): 2}}
    assert people.transact('[[:db/retract 2 :tag 1] [:db/add 2 :name "Vanya"]]') == {"q": {
        (m('{:name "Ivan"}'),): -2, (m('{:name "Vanya"}'),): 1}}


IVAN = m('{:name "Ivan"}')


@pytest.mark.parametrize(("find", "expected"), [
    ("(pull ?e [:name]) .", IVAN),
    ("[(pull ?e [:name]) ...]", [IVAN]),
    ("[?e (pull ?e [:name])]", (2, IVAN)),
], ids=str)
def test_find_specifications_shape_pulled_maps(people: Engine, find: str, expected: Any) -> None:
    assert people.query(f"[:find {find} :where [?e :age 25]]") == expected


def test_an_input_entity_is_pulled(people: Engine) -> None:
    """An ``:in`` entity is returned by ``:find`` like any input, so it can be pulled, with or
    without a ``:where``; a registered pull of it changes with its datoms."""
    assert people.query("[:find (pull ?e [:name]) :in $ ?e]", [2]) == rows(
        '[[{:name "Ivan"}]]')
    young = people.query("[:find [(pull ?e [:name :age]) ...] :in $ [?e ...] :where "
                         "[?e :age ?a] [(< ?a 30)]]", [[1, 2, 3]])
    assert Counter(young) == Counter([m('{:name "Ivan" :age 25}'), m('{:name "Oleg" :age 11}')])
    people.register("q", "[:find ?e (pull ?e [:name]) :in $ ?e]", [3])
    assert people.transact('[[:db/add 3 :name "Olga"] [:db/add 2 :name "Vanya"]]') == {"q": {
        (3, m('{:name "Oleg"}')): -1, (3, m('{:name "Olga"}')): 1}}
