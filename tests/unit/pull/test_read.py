"""workers.pull.read: pulling one entity, table-driven with the examples and expected maps of
Datascript's pull API tests (test/datascript/test/pull_api.cljc, which follow Datomic's pull
documentation), on the same data and schema — less ``:db/isComponent`` (not in deltalog's
schema model); recursion is in tests/unit/conformance/test_pull_api.py."""

from __future__ import annotations

from typing import Any

import pytest

from workers import edn
from workers.datalog.pull import parse_pattern
from workers.engine import Engine
from workers.pull import PullReader

SCHEMA = """[{:db/ident :name :db/cardinality :db.cardinality/one}
             {:db/ident :aka :db/cardinality :db.cardinality/many}
             {:db/ident :child :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :enemy :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
             {:db/ident :father :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]"""
DATA = """[[:db/add 1 :name "Petr"] [:db/add 1 :aka "Devil"] [:db/add 1 :aka "Tupen"]
           [:db/add 2 :name "David"] [:db/add 3 :name "Thomas"] [:db/add 4 :name "Lucy"]
           [:db/add 5 :name "Elizabeth"] [:db/add 6 :name "Matthew"] [:db/add 7 :name "Eunan"]
           [:db/add 8 :name "Kerri"] [:db/add 9 :name "Rebecca"]
           [:db/add 1 :child 2] [:db/add 1 :child 3]
           [:db/add 2 :father 1] [:db/add 3 :father 1] [:db/add 6 :father 3]
           [:db/add 4 :friend 5] [:db/add 4 :friend 6] [:db/add 4 :friend 7]
           [:db/add 4 :friend 8]]"""
AKAS = [[edn.keyword("db/add"), 8, edn.keyword("aka"), f"aka-{i}"] for i in range(2000)]


@pytest.fixture(scope="module")
def reader() -> PullReader:
    engine = Engine()
    for tx in (SCHEMA, DATA, AKAS):
        engine.transact(tx)
    return PullReader(engine.db, engine.schema)


def case(pattern: str, entity: int, expected: str) -> Any:
    return pytest.param(pattern, entity, expected, id=f"{pattern} {entity}")


@pytest.mark.parametrize(("pattern", "entity", "expected"), [
    # test-pull-attr-spec
    case("[:name :aka]", 1, '{:name "Petr" :aka ["Devil" "Tupen"]}'),
    case("[:name :father :db/id]", 6, '{:name "Matthew" :father {:db/id 3} :db/id 6}'),
    case("[:name]", 5, '{:name "Elizabeth"}'),
    # test-pull-reverse-attr-spec
    case("[:name :_child]", 2, '{:name "David" :_child [{:db/id 1}]}'),
    case("[:name {:_child [:name]}]", 2, '{:name "David" :_child [{:name "Petr"}]}'),
    case("[:name :_father]", 3, '{:name "Thomas" :_father [{:db/id 6}]}'),
    case("[:name :_father]", 1, '{:name "Petr" :_father [{:db/id 2} {:db/id 3}]}'),
    case("[:name {:_father [:name]}]", 3, '{:name "Thomas" :_father [{:name "Matthew"}]}'),
    case("[:name {:_father [:name]}]", 1,
         '{:name "Petr" :_father [{:name "David"} {:name "Thomas"}]}'),
    # test-pull-wildcard
    case("[*]", 1,
         '{:db/id 1 :name "Petr" :aka ["Devil" "Tupen"] :child [{:db/id 2} {:db/id 3}]}'),
    case("[* :_child]", 2, '{:db/id 2 :name "David" :_child [{:db/id 1}] :father {:db/id 1}}'),
    case("[:name *]", 1,
         '{:aka ["Devil" "Tupen"], :child [{:db/id 2} {:db/id 3}], :name "Petr", :db/id 1}'),
    case("[:aka :child :name *]", 1,
         '{:aka ["Devil" "Tupen"], :child [{:db/id 2} {:db/id 3}], :name "Petr", :db/id 1}'),
    case("[[:aka :as :alias] [:name :as :first-name] *]", 1,
         '{:alias ["Devil" "Tupen"], :child [{:db/id 2} {:db/id 3}], :first-name "Petr", '
         ':db/id 1}'),
    # test-pull-limit
    case("[:name {(limit :friend 2) [:name]}]", 4,
         '{:name "Lucy" :friend [{:name "Elizabeth"} {:name "Matthew"}]}'),
    # test-pull-default
    case("[:foo]", 1, "nil"),
    case('[(default :foo "bar")]', 1, '{:foo "bar"}'),
    case('[[:foo :default "bar"]]', 1, '{:foo "bar"}'),
    case("[[:foo :default false]]", 1, "{:foo false}"),
    case("[[:foo :as :bar :default false]]", 1, "{:bar false}"),
    case("[:db/id [:child :default 1]]", 2, "{:child 1 :db/id 2}"),
    case("[:db/id [:_child :default 2]]", 1, "{:_child 2 :db/id 1}"),
    # test-pull-as, test-pull-attr-with-opts
    case('[[:name :as "Name"] [:aka :as :alias]]', 1, '{"Name" "Petr", :alias ["Devil" "Tupen"]}'),
    case('[[:x :as "Name" :default "Nothing"]]', 1, '{"Name" "Nothing"}'),
    # test-pull-map
    case("[:name {:father [:name]}]", 6, '{:name "Matthew" :father {:name "Thomas"}}'),
    case("[:name {:child [:name]}]", 1, '{:name "Petr" :child [{:name "David"} {:name "Thomas"}]}'),
    case("[:name {:father [:name]}]", 1, '{:name "Petr"}'),
    case("[:name {:child [:foo]}]", 1, '{:name "Petr"}'),
    # Datomic: an entity pulled with * shows :db/id even when it holds nothing else
    case("[*]", 99, "{:db/id 99}"),
    case("[:db/id :name]", 99, "{:db/id 99}"),
])
def test_pull_gives_the_documented_map(reader: PullReader, pattern: str, entity: int,
                                       expected: str) -> None:
    assert reader.pull(parse_pattern(pattern), entity) == edn.read(expected)


@pytest.mark.parametrize(("pattern", "count"), [
    ("[:aka]", 1000),  # without an explicit limit, the default is 1000
    ("[(limit :aka 500)]", 500),
    ("[[:aka :limit 500]]", 500),
    ("[(limit :aka 1500)]", 1500),
    ("[(limit :aka nil)]", 2000),
], ids=str)
def test_limit_bounds_a_collection(reader: PullReader, pattern: str, count: int) -> None:
    pulled = reader.pull(parse_pattern(pattern), 8)
    assert pulled is not None
    assert len(pulled[edn.keyword("aka")]) == count


def test_values_of_a_collection_come_in_value_order(reader: PullReader) -> None:
    pulled = reader.pull(parse_pattern("[[:aka :limit 3]]"), 8)
    assert pulled == {edn.keyword("aka"): ["aka-0", "aka-1", "aka-10"]}


def test_undeclared_attribute_is_cardinality_many_and_nested_follows_its_values() -> None:
    """deltalog's schema: an undeclared attribute may hold several values, so it pulls as a
    vector; a nested pattern follows its values as entity ids (XTDB style)."""
    engine = Engine()
    engine.transact('[[:db/add 1 :g/to 2] [:db/add 2 :label "b"] [:db/add 1 :label "a"]]')
    reader = PullReader(engine.db, engine.schema)
    assert reader.pull(parse_pattern("[:label {:g/to [:label]} :g/_to]"), 1) == edn.read(
        '{:label ["a"] :g/to [{:label ["b"]}]}')
    assert reader.pull(parse_pattern("[* :g/_to]"), 2) == edn.read(
        '{:db/id 2 :label ["b"] :g/_to [{:db/id 1}]}')
