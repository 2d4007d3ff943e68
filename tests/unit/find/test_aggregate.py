"""workers.find (aggregates): Datomic's and Datascript's aggregates with the results their
documentation and test suites give, one-shot and kept live (``-old row +new row``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from workers.edn import keyword
from workers.engine import Engine
from workers.testing import evaluate_from_scratch

RED, BLUE = keyword("red"), keyword("blue")
# Datascript test_aggregates.cljc: [[:red 1] [:red 2] [:red 3] [:red 4] [:red 5] [:blue 7]
# [:blue 8]] as datoms, and the numbers [10 15 20 35 75].
COLORS = ("[" + " ".join(f"[:db/add {e} :color {c}] [:db/add {e} :x {x}]" for e, c, x in [
    (1, ":red", 1), (2, ":red", 2), (3, ":red", 3), (4, ":red", 4), (5, ":red", 5),
    (6, ":blue", 7), (7, ":blue", 8)]) + "]")
NUMBERS = "[" + " ".join(f"[:db/add {e} :n {n}]" for e, n in enumerate([10, 15, 20, 35, 75], 1)) \
    + "]"


def case(query: str, data: str, expected: set[tuple[Any, ...]], *inputs: Any) -> Any:
    return pytest.param(query, data, list(inputs), expected, id=query)


DOCUMENTED = [
    case("[:find ?color (max ?amount ?x) (min ?amount ?x) :in $ ?amount "
         ":where [?e :color ?color] [?e :x ?x]]", COLORS,
         {(RED, (3, 4, 5), (1, 2, 3)), (BLUE, (7, 8), (7, 8))}, 3),
    case("[:find (min 2 ?x) (max 2 ?x) :with ?e :where [?e :x ?x]]", COLORS, {((1, 2), (7, 8))}),
    case("[:find (median ?x) :where [_ :n ?x]]", NUMBERS, {(20,)}),
    case("[:find (variance ?x) :where [_ :n ?x]]", NUMBERS, {(554.0,)}),
    case("[:find (stddev ?x) :where [_ :n ?x]]", NUMBERS, {(math.sqrt(554),)}),
    case("[:find (median ?x) :where [?e :n ?x] [(< ?x 50)]]", NUMBERS, {(17.5,)}),
    case("[:find (median ?x) :where [?e :n ?x] [(< ?x 20)]]", NUMBERS, {(12.5,)}),
    case("[:find (median ?x) :where [?e :x ?x] [(< ?x 4)] [(> ?x 1)]]", COLORS, {(2.5,)}),
    case("[:find (median ?x) :where [?e :x ?x] [(< ?x 4)]]", COLORS, {(2,)}),
    case("[:find ?c (avg ?x) (count ?x) :where [?e :color ?c] [?e :x ?x]]", COLORS,
         {(RED, 3.0, 5), (BLUE, 7.5, 2)}),
    # an aggregate that cannot be computed (sum of keywords) leaves its group without a row
    case("[:find ?x (sum ?c) :where [?e :color ?c] [?e :x ?x]]", COLORS, set()),
    case("[:find (median ?c) :where [?e :color ?c]]", COLORS, set()),  # :blue and :red
    case("[:find (median ?c) :with ?e :where [?e :color ?c]]", COLORS, {(RED,)}),
]


@pytest.mark.parametrize(("query", "data", "inputs", "expected"), DOCUMENTED)
def test_aggregate_gives_the_documented_result(query: str, data: str, inputs: list[Any],
                                               expected: set[tuple[Any, ...]]) -> None:
    engine = Engine()
    engine.transact(data)
    assert set(engine.query(query, inputs)) == expected
    assert set(evaluate_from_scratch(query, engine.db.datoms(), inputs)) == expected


def test_min_n_is_kept_live_as_minus_old_plus_new_rows() -> None:
    engine = Engine()
    engine.transact(COLORS)
    query = "[:find ?c (min 2 ?x) (max 2 ?x) :where [?e :color ?c] [?e :x ?x]]"
    assert engine.register("q", query) == {(RED, (1, 2), (4, 5)): 1, (BLUE, (7, 8), (7, 8)): 1}
    assert engine.transact("[[:db/retract 1 :x 1] [:db/add 8 :color :blue]"
                           " [:db/add 8 :x 0]]") == {"q": {
        (RED, (1, 2), (4, 5)): -1, (RED, (2, 3), (4, 5)): 1,
        (BLUE, (7, 8), (7, 8)): -1, (BLUE, (0, 7), (7, 8)): 1}}


def test_a_group_whose_aggregate_starts_to_fail_leaves_the_result() -> None:
    engine = Engine()
    engine.transact("[[:db/add 1 :v 1] [:db/add 2 :v 2]]")
    assert engine.register("q", "[:find (sum ?v) :where [_ :v ?v]]") == {(3,): 1}
    assert engine.transact('[[:db/add 3 :v "x"]]') == {"q": {(3,): -1}}
    assert engine.transact('[[:db/retract 3 :v "x"]]') == {"q": {(3,): 1}}
