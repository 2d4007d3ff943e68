"""Datascript's test/datascript/test/query_or.cljc: or, or-join (required bindings
included), and their errors."""

from __future__ import annotations

from tests.unit.conformance.datascript import (
    Case,
    check,
)
from workers.errors import ErrorCode

SOURCE = "query_or.cljc"
SIX = ('[{:db/id 1 :name "Ivan" :age 10} {:db/id 2 :name "Ivan" :age 20} '
       '{:db/id 3 :name "Oleg" :age 10} {:db/id 4 :name "Oleg" :age 20} '
       '{:db/id 5 :name "Ivan" :age 10} {:db/id 6 :name "Ivan" :age 20}]',)
TWO_DBS = ('[[:db/add 1 :name "Ivan"] [:db/add 2 :name "Oleg"]]',)


def entities(test: str, where: str, expected: str, inputs: str = "[]") -> Case:
    """Datascript's ``(concat '[:find ?e :where] clauses)`` cases: a set of entities."""
    rows = " ".join(f"[{e}]" for e in expected.split())
    query = f"[:find ?e {':in $ ?a ' if inputs != '[]' else ''}:where {where}]"
    return Case(f"{SOURCE} {test}", SIX, query, f"#{{{rows}}}", inputs)


def default_source(where: str) -> Case:
    """The second database is given as the collection of its datoms."""
    return Case(f"{SOURCE} test-default-source", TWO_DBS, f"[:find ?e :in $ $2 :where {where}]",
                "#{[1]}", "[[[1 :age 10] [2 :age 20]]]")


CASES = [
    entities("test-or intersecting results", '(or [?e :name "Oleg"] [?e :age 10])', "1 3 4 5"),
    entities("test-or one branch empty", '(or [?e :name "Oleg"] [?e :age 30])', "3 4"),
    entities("test-or both empty", '(or [?e :name "Petr"] [?e :age 30])', ""),
    entities("test-or join with 1 var", '[?e :name "Ivan"] (or [?e :name "Oleg"] [?e :age 10])',
             "1 5"),
    entities("test-or join with 2 vars", '[?e :age ?a] (or (and [?e :name "Ivan"] [1 :age ?a]) '
             '(and [?e :name "Oleg"] [2 :age ?a]))', "1 5 4"),
    entities("test-or OR introduces vars", '(or (and [?e :name "Ivan"] [1 :age ?a]) '
             '(and [?e :name "Oleg"] [2 :age ?a])) [?e :age ?a]', "1 5 4"),
    entities("test-or OR introduces vars in different order",
             '(or (and [?e :name "Ivan"] [1 :age ?a]) (and [2 :age ?a] [?e :name "Oleg"])) '
             "[?e :age ?a]", "1 5 4"),
    entities("test-or-join", "(or-join [?e] [?e :name ?n] (and [?e :age ?a] [?e :name ?n]))",
             "1 2 3 4 5 6"),
    entities("test-or-join", "[?e :name ?a] [?e2 :name ?a] "
             "(or-join [?e] (and [?e :age ?a] [?e2 :age ?a]))", "1 2 3 4 5 6"),
    entities("test-or-join #348", '(or [?e :age ?a] [?e :name "Oleg"])', "1 3 4 5", "[10]"),
    entities("test-or-join #348", '(or-join [?e ?a] [?e :age ?a] [?e :name "Oleg"])', "1 3 4 5",
             "[10]"),
    entities("test-or-join #348", '(or-join [[?a] ?e] [?e :age ?a] [?e :name "Oleg"])',
             "1 3 4 5", "[10]"),
    Case(f"{SOURCE} test-or-join", (),
         "[:find ?a ?b ?c :in $xs $ys :where [$xs ?a ?b ?c] (or-join [?a] [$ys ?a ?b ?d])]",
         "#{[:a1 :b1 :c1] [:a2 :b2 :c2]}",
         "[[[:a1 :b1 :c1] [:a2 :b2 :c2] [:a3 :b3 :c3]] "
         "[[:a1 :b1 :d1] [:a2 :b2* :d2] [:a4 :b4 :c4]]]"),
    Case(f"{SOURCE} test-or-join", (),
         "[:find ?a ?c :in $xs $ys :where (or-join [?a ?c] [$xs ?a ?b ?c] [$ys ?a ?c])]",
         "#{[:a1 :c1] [:a2 :c2]}", "[[[:a1 :b1 :c1]] [[:a2 :c2]]]"),
    default_source('[?e :name] (or [?e :name "Ivan"])'),
    default_source("[?e :name] (or [$2 ?e :age 10])"),
    default_source("[?e :name] ($2 or [?e :age 10])"),
    default_source('[?e :name] ($2 or [$ ?e :name "Ivan"])'),
    default_source("[?e :name] ($2 or (or [?e :age 10]))"),
    default_source('[?e :name] ($2 or ($ or [?e :name "Ivan"]))'),
    Case(f"{SOURCE} test-errors", SIX, "[:find ?e :where (or [?e :name _] [?e :age ?a])]",
         raises=(ErrorCode.QUERY_UNSAFE, "All clauses in 'or' must use same set of free vars")),
    Case(f"{SOURCE} test-errors", SIX, '[:find ?e :where (or-join [[?e]] [?e :name "Ivan"])]',
         raises=(ErrorCode.QUERY_UNSAFE, "Insufficient bindings: #{?e} not bound in "
                                         '(or-join [[?e]] [?e :name "Ivan"])')),
    entities("test-errors (required bound by a clause after the or-join)",
             '(or-join [[?e]] [?e :name "Ivan"]) [?e :age 10]', "1 5"),
    Case(f"{SOURCE} test-errors", SIX, "[:find ?e :where [(or ?e 1)]]",
         raises=(ErrorCode.QUERY_UNSUPPORTED, "Unknown predicate 'or in [(or ?e 1)]")),
]


def test_datascript_case(case: Case) -> None:
    check(case)
