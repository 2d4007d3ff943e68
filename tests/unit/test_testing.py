"""workers.testing: the oracle itself, on hand-checked queries, and the check of a committed
change stream against it."""

from dataclasses import dataclass
from typing import Any

import pytest

from workers.edn import keyword
from workers.testing import ChangeStreamMismatch, check_change_stream, evaluate_from_scratch
from workers.zset import ZSet
from workers.zset.row import Row

NAME, AGE, FRIEND = keyword("name"), keyword("age"), keyword("friend")

# alice(30) -> bob(25) -> carol(35) -> dave(25); dave has no friend.
PEOPLE = [
    (1, NAME, "alice"), (1, AGE, 30), (1, FRIEND, 2),
    (2, NAME, "bob"), (2, AGE, 25), (2, FRIEND, 3),
    (3, NAME, "carol"), (3, AGE, 35), (3, FRIEND, 4),
    (4, NAME, "dave"), (4, AGE, 25),
]

REACH = """[[(reach ?a ?b) [?a :friend ?b]]
            [(reach ?a ?b) [?a :friend ?c] (reach ?c ?b)]]"""


def rows(*found: Any) -> ZSet[Row]:
    return {row if isinstance(row, tuple) else (row,): 1 for row in found}


def case(text: str, expected: ZSet[Row], *inputs: Any) -> Any:
    return pytest.param(text, list(inputs), expected, id=text)


@pytest.mark.parametrize(("text", "inputs", "expected"), [
    # patterns and predicates, in any order
    case("[:find ?n :where [?e :name ?n]]", rows("alice", "bob", "carol", "dave")),
    case("[:find ?n :where [?e :name ?n] [?e :age ?a] [(> ?a 28)]]", rows("alice", "carol")),
    case("[:find ?n :where [(> ?a 28)] [?e :age ?a] [?e :name ?n]]", rows("alice", "carol")),
    case("[:find ?n :where [?e :name ?n] [(< ?n 3)]]", rows()),  # a failed call is false
    case("[:find ?n :where [?e :name ?n] [(clojure.string/starts-with? ?n \"c\")]]",
         rows("carol")),
    # function bindings
    case("[:find ?n ?b :where [?e :name ?n] [?e :age ?a] [(+ ?a 1) ?b] [(> ?b 31)]]",
         rows(("carol", 36))),
    case("[:find ?x ?y :where [1 :name ?n] [1 :age ?a] [(vector ?n ?a) [?x ?y]]]",
         rows(("alice", 30))),
    case("[:find ?x :where [(vector 1 2 2) [?x ...]]]", rows(1, 2)),
    case("[:find ?x :where [(ground [[1 2] [3 4] [5]]) [[?x _]]]]", rows(1, 3)),
    case("[:find ?e :where [?e :age ?a] [(identity ?a) ?a]]", rows(1, 2, 3, 4)),
    case("[:find ?e :where [?e :age ?a] [(inc ?a) ?a]]", rows()),
    case("[:find ?e :where [?e :age ?a] [(identity ?a) [?x ?y]]]", rows()),  # wrong shape
    case("[:find ?e :where [?e :name ?n] [(+ ?n 1) ?b]]", rows()),  # failed call
    case('[:find ?n ?x :where [?e :name ?n] [?e :age ?a] [(get {25 "young"} ?a) ?x]]',
         rows(("bob", "young"), ("dave", "young"))),  # a map constant stays a map
    # not, not-join, missing?
    case("[:find ?n :where [?e :name ?n] (not [?e :friend _])]", rows("dave")),
    case("[:find ?n :where [?e :name ?n] (not [?e :age 25])]", rows("alice", "carol")),
    case("[:find ?n :where [?e :name ?n] (not-join [?e] [?e :friend ?f] [?f :age 25])]",
         rows("bob", "dave")),
    case("[:find ?n :where [?e :name ?n] [(missing? $ ?e :friend)]]", rows("dave")),
    # or, or-join, get-else
    case("[:find ?e :where (or [?e :age 25] [?e :name \"alice\"])]", rows(1, 2, 4)),
    case("[:find ?n :where [?e :name ?n] "
         "(or-join [?e] [?e :age 35] (and [?e :friend ?f] [?f :name \"bob\"]))]",
         rows("alice", "carol")),
    case("[:find ?n ?f :where [?e :name ?n] [(get-else $ ?e :friend 0) ?f]]",
         rows(("alice", 2), ("bob", 3), ("carol", 4), ("dave", 0))),
    # get-some (Datomic): the first of the attributes the entity has, as [attribute value]
    case("[:find ?n ?a ?v :where [?e :name ?n] [(get-some $ ?e :friend :age) [?a ?v]]]",
         rows(("alice", FRIEND, 2), ("bob", FRIEND, 3), ("carol", FRIEND, 4),
              ("dave", AGE, 25))),
    case("[:find ?p :where [4 :name] [(get-some $ 4 :friend :name) ?p]]",
         {((NAME, "dave"),): 1}),
    # rules: recursion, and negation of a lower stratum
    case("[:find ?n :in $ % :where [?e :name \"alice\"] (reach ?e ?f) [?f :name ?n]]",
         rows("bob", "carol", "dave"), REACH),
    case("[:find ?a ?b :in $ % :where (reach ?a ?b) [?a :age 25]]",
         rows((2, 3), (2, 4)), REACH),
    case("[:find ?n :in $ % :where [?e :name ?n] (not (reached ?e))]", rows("alice"),
         REACH[:-1] + " [(reached ?b) (reach _ ?b)]]"),
    case("{:find [?n] :where [[?e :name ?n] (adult ?e)] "
         ":rules [[(adult ?p) [?p :age ?a] [(>= ?a 30)]]]}", rows("alice", "carol")),
    # aggregates, with and without :with
    case("[:find (count ?e) :where [?e :name]]", rows(4)),
    case("[:find ?a (count ?e) :where [?e :age ?a]]", rows((30, 1), (25, 2), (35, 1))),
    case("[:find (sum ?a) :where [_ :age ?a]]", rows(90)),
    case("[:find (sum ?a) :with ?e :where [?e :age ?a]]", rows(115)),
    case("[:find (count ?a) (count-distinct ?a) :with ?e :where [?e :age ?a]]", rows((4, 3))),
    case("[:find (min ?a) (max ?a) (avg ?a) :with ?e :where [?e :age ?a]]",
         rows((25, 35, 28.75))),
    case("[:find (avg ?a) :where [?e :age ?a]]", rows(30.0)),
    case("[:find (min ?n) (max ?n) :where [_ :name ?n]]", rows(("alice", "dave"))),
    case("[:find (distinct ?a) :with ?e :where [?e :age ?a]]", rows(frozenset({25, 30, 35}))),
    case("[:find (count ?e) ?a :where [?e :age ?a] [(< ?a 30)]]", rows((2, 25))),
    case("[:find (count ?e) :where [?e :age 99]]", rows()),
    # inputs
    case("[:find ?e :in $ ?n :where [?e :name ?n]]", rows(2), "bob"),
    case("[:find ?e :in $ [?n ...] :where [?e :name ?n]]", rows(1, 4), ["alice", "dave", "x"]),
    case("[:find ?e ?x :in $ [[?n ?x]] :where [?e :name ?n]]", rows((1, 10), (2, 20)),
         [["alice", 10], ["bob", 20], ["zed", 30]]),
    case("[:find ?n :in $ [?lo ?hi] :where [?e :age ?a] [(<= ?lo ?a ?hi)] [?e :name ?n]]",
         rows("alice", "carol"), [30, 40]),
])
def test_oracle(text: str, inputs: list[Any], expected: ZSet[Row]) -> None:
    assert evaluate_from_scratch(text, PEOPLE, inputs) == expected


def test_rules_negating_a_recursive_relation_are_refused() -> None:
    query = """{:find [?x] :where [(p ?x)]
                :rules [[(p ?x) [?x :name] (not (q ?x))] [(q ?x) [?x :name] (not (p ?x))]]}"""
    with pytest.raises(ValueError, match="not stratified"):
        evaluate_from_scratch(query, PEOPLE)


@dataclass(frozen=True)
class Change:
    row: tuple[Any, ...]
    weight: int
    tx_first: int
    tx_last: int
    snapshot: bool = False


NAMES = "[:find ?n :where [?e :name ?n]]"
# tx 0 adds alice, tx 1 adds bob, tx 2 renames alice to ann.
NAME_STATES = [{(1, NAME, "alice")}, {(1, NAME, "alice"), (2, NAME, "bob")},
               {(1, NAME, "ann"), (2, NAME, "bob")}]
NAME_STREAM = [Change(("alice",), 1, 0, 0), Change(("bob",), 1, 1, 1),
               Change(("alice",), -1, 2, 2), Change(("ann",), 1, 2, 2)]


def test_an_exact_change_stream_passes_tick_by_tick() -> None:
    assert check_change_stream(NAMES, NAME_STREAM, NAME_STATES) == 3
    grouped = [Change(("alice",), 1, 0, 1), Change(("bob",), 1, 0, 1), *NAME_STREAM[2:]]
    assert check_change_stream(NAMES, grouped, NAME_STATES) == 2  # any tick split


@pytest.mark.parametrize(("stream", "error"), [
    pytest.param(NAME_STREAM[:2] + NAME_STREAM[3:], "lacks", id="a change lost"),
    pytest.param(NAME_STREAM + NAME_STREAM[3:], "has", id="a change committed twice"),
    pytest.param([*NAME_STREAM, Change(("bob",), 1, 1, 2)], "overlaps", id="a tick twice"),
])
def test_a_lost_doubled_or_overlapping_change_fails(stream: list[Change], error: str) -> None:
    with pytest.raises(ChangeStreamMismatch, match=error):
        check_change_stream(NAMES, stream, NAME_STATES)


def test_a_bag_change_stream_carries_weights_other_than_one() -> None:
    """Two people named bob arrive in one tick: the bag's row ``("bob",)`` gains weight 2."""
    bag = "[:find ?n :with ?e :where [?e :name ?n]]"
    states = [{(1, NAME, "alice")}, {(1, NAME, "alice"), (2, NAME, "bob"), (3, NAME, "bob")}]
    stream = [Change(("alice",), 1, 0, 0), Change(("bob",), 2, 1, 1)]
    assert check_change_stream(bag, stream, states) == 2
    with pytest.raises(ChangeStreamMismatch, match="lacks"):
        check_change_stream(bag, [*stream[:1], Change(("bob",), 1, 1, 1)], states)
