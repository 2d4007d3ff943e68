"""Datascript's test/datascript/test/query_aggregates.cljc: :with, grouping, keyword order,
aggregates with an argument, avg, median, variance, stddev."""

from __future__ import annotations

from typing import Any

from tests.unit.conformance.datascript import (
    FUNCTION_INPUT,
    Case,
    check,
    check_refusal,
)

SOURCE = "query_aggregates.cljc test-aggregates"
MONSTERS = '[["Cerberus" 3] ["Medusa" 1] ["Cyclops" 1] ["Chimera" 1]]'
COLORS = "[[:red 1] [:red 2] [:red 3] [:red 4] [:red 5] [:blue 7] [:blue 8]]"
NUMBERS = "[[10 15 20 35 75]]"


def of(test: str, query: str, expected: str, inputs: str, **more: Any) -> Case:
    return Case(f"{SOURCE} {test}", (), query, expected, inputs, **more)


CASES = [
    of("with", "[:find ?heads :with ?monster :in [[?monster ?heads]]]", "[[1] [1] [1]]",
       '[[["Medusa" 1] ["Cyclops" 1] ["Chimera" 1]]]'),
    of("Wrong grouping without :with", "[:find (sum ?heads) :in [[?monster ?heads]]]", "[[4]]",
       f"[{MONSTERS}]"),
    of("Multiple aggregates, correct grouping with :with",
       "[:find (sum ?heads) (min ?heads) (max ?heads) (count ?heads) (count-distinct ?heads) "
       ":with ?monster :in [[?monster ?heads]]]", "[[6 1 3 4 2]]", f"[{MONSTERS}]"),
    of("Min and max are using comparator instead of default compare",
       "[:find (min ?x) (max ?x) :in [?x ...]]", "[[:a/b :a-/b]]", "[[:a-/b :a/b]]"),
    of("Min and max are using comparator instead of default compare",
       "[:find (min 2 ?x) (max 2 ?x) :in [?x ...]]", "[[[:a/b :a/c] [:a/c :a-/b]]]",
       "[[:a/b :a-/b :a/c]]"),
    of("Grouping and parameter passing",
       "[:find ?color (max ?amount ?x) (min ?amount ?x) :in [[?color ?x]] ?amount]",
       "#{[:red [3 4 5] [1 2 3]] [:blue [7 8] [7 8]]}", f"[{COLORS} 3]"),
    of("avg aggregate", "[:find (avg ?x) :in [?x ...]]", "[[31]]", NUMBERS),
    of("median aggregate", "[:find (median ?x) :in [?x ...]]", "[[20]]", NUMBERS),
    of("variance aggregate", "[:find (variance ?x) :in [?x ...]]", "[[554]]", NUMBERS),
    of("stddev aggregate", "[:find (stddev ?x) :in [?x ...]]", "[[23.53720459187964]]", NUMBERS),
    of("Custom aggregates", "[:find ?color (aggregate ?agg ?x) :in [[?color ?x]] ?agg]",
       "#{[:red [5 4 3 2 1]] [:blue [8 7]]}", f"[{COLORS} reverse-sort]",
       differs=FUNCTION_INPUT, refused="aggregate"),
]


def test_datascript_case(case: Case) -> None:
    check(case)


def test_refusal_names_the_form(refused: Case) -> None:
    check_refusal(refused)
