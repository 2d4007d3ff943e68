"""Datascript's test/datascript/test/query_not.cljc: not, not-join, nested negation and its
safety errors."""

from __future__ import annotations

from tests.unit.conformance.datascript import (
    Case,
    check,
)
from workers.errors import ErrorCode

SOURCE = "query_not.cljc"
SIX = ('[{:db/id 1 :name "Ivan" :age 10} {:db/id 2 :name "Ivan" :age 20} '
       '{:db/id 3 :name "Oleg" :age 10} {:db/id 4 :name "Oleg" :age 20} '
       '{:db/id 5 :name "Ivan" :age 10} {:db/id 6 :name "Ivan" :age 20}]',)
TWO_DBS = ('[[:db/add 1 :name "Ivan"] [:db/add 2 :name "Oleg"]]',)
ORDER = ("clause order: deltalog checks safety over the whole conjunction and orders clauses "
         "itself, so a not before the clause binding its variable is accepted")


def entities(test: str, where: str, expected: str) -> Case:
    """Datascript's ``(concat '[:find ?e :where] clauses)`` cases: a set of entities."""
    rows = " ".join(f"[{e}]" for e in expected.split())
    return Case(f"{SOURCE} {test}", SIX, f"[:find ?e :where {where}]", f"#{{{rows}}}")


def default_source(where: str, expected: str) -> Case:
    """The second database is given as the collection of its datoms."""
    return Case(f"{SOURCE} test-default-source", TWO_DBS,
                f"[:find ?e :in $ $2 :where {where}]", f"#{{[{expected}]}}",
                '[[[1 :age 10] [2 :age 20]]]')


CASES = [
    entities("test-not", '[?e :name] (not [?e :name "Ivan"])', "3 4"),
    entities("test-not", '[?e :name] (not [?e :name "Ivan"] [?e :age 10])', "2 3 4 6"),
    entities("test-not", '[?e :name] (not [?e :name "Ivan"]) (not [?e :age 10])', "4"),
    entities("test-not full exclude", "[?e :name] (not [?e :age])", ""),
    entities("test-not not-intersecting rels", '[?e :name "Ivan"] (not [?e :name "Oleg"])',
             "1 2 5 6"),
    entities("test-not exclude empty set",
             '[?e :name] (not [?e :name "Ivan"] [?e :name "Oleg"])', "1 2 3 4 5 6"),
    entities("test-not nested excludes", '[?e :name] (not [?e :name "Ivan"] (not [?e :age 10]))',
             "1 3 4 5"),
    Case(f"{SOURCE} test-not-join", SIX, "[:find ?e ?a :where [?e :name] [?e :age ?a] "
         '(not-join [?e] [?e :name "Oleg"] [?e :age ?a])]', "#{[1 10] [2 20] [5 10] [6 20]}"),
    Case(f"{SOURCE} test-not-join", SIX, "[:find ?e ?a :where [?e :name] [?e :age ?a] "
         '[?e :age 10] (not-join [?e] [?e :name "Oleg"] [?e :age 10] [?e :age ?a])]',
         "#{[1 10] [5 10]}"),
    Case(f"{SOURCE} test-default-source NOT inherits default source", TWO_DBS,
         '[:find ?e :in $ $2 :where [?e :name] (not [?e :name "Ivan"])]', "#{[2]}",
         "[[[1 :age 10] [2 :age 20]]]"),
    default_source("[?e :name] (not [$2 ?e :age 10])", "2"),
    default_source("[?e :name] ($2 not [?e :age 10])", "2"),
    default_source('[?e :name] ($2 not [$ ?e :name "Ivan"])', "2"),
    default_source("[?e :name] ($2 not (not [?e :age 10]))", "1"),
    default_source('[?e :name] ($2 not ($ not [?e :name "Ivan"]))', "1"),
    entities("test-impl-edge-cases const \\ empty",
             '[?e :name "Oleg"] [?e :age 10] (not [?e :age 20])', "3"),
    entities("test-impl-edge-cases const \\ const",
             '[?e :name "Oleg"] [?e :age 10] (not [?e :age 10])', ""),
    entities("test-impl-edge-cases rel \\ const", '[?e :name "Oleg"] (not [?e :age 10])', "4"),
    Case(f"{SOURCE} test-impl-edge-cases 2 rels \\ 2 rels", SIX,
         '[:find ?e ?e2 :where [?e :name "Ivan"] [?e2 :name "Ivan"] '
         "(not [?e :age 10] [?e2 :age 20])]",
         "#{[2 1] [6 5] [1 1] [2 2] [5 5] [6 6] [2 5] [1 5] [2 6] [6 1] [5 1] [6 2]}"),
    Case(f"{SOURCE} test-impl-edge-cases 2 rels \\ rel + const", SIX,
         '[:find ?e ?e2 :where [?e :name "Ivan"] [?e2 :name "Oleg"] '
         "(not [?e :age 10] [?e2 :age 20])]", "#{[2 3] [1 3] [2 4] [6 3] [5 3] [6 4]}"),
    Case(f"{SOURCE} test-impl-edge-cases 2 rels \\ 2 consts", SIX,
         '[:find ?e ?e2 :where [?e :name "Oleg"] [?e2 :name "Oleg"] '
         "(not [?e :age 10] [?e2 :age 20])]", "#{[4 3] [3 3] [4 4]}"),
    Case(f"{SOURCE} test-insufficient-bindings", SIX,
         '[:find ?e :where (not [?e :name "Ivan"]) [?e :name]]',
         raises=(ErrorCode.QUERY_UNSAFE,
                 'Insufficient bindings: none of #{?e} is bound in (not [?e :name "Ivan"])'),
         differs=ORDER),
    Case(f"{SOURCE} test-insufficient-bindings", SIX,
         "[:find ?e :where [?e :name] (not-join [?e] (not [1 :age ?a]) [?e :age ?a])]",
         raises=(ErrorCode.QUERY_UNSAFE, "Insufficient bindings: none of #{?a} is bound in "
                                         "(not [1 :age ?a])"), differs=ORDER),
    Case(f"{SOURCE} test-insufficient-bindings", SIX,
         '[:find ?e :where [?e :name] (not [?a :name "Ivan"])]',
         raises=(ErrorCode.QUERY_UNSAFE,
                 'Insufficient bindings: none of #{?a} is bound in (not [?a :name "Ivan"])')),
    # Not Datascript's suite: a variable the clauses around a not do not bind is its own.
    Case(f"{SOURCE} test-insufficient-bindings", SIX,
         "[:find ?e :where [?e :name] (not [?e :age ?a] [(> ?a 15)])]", "#{[1] [3] [5]}"),
]


def test_datascript_case(case: Case) -> None:
    check(case)
