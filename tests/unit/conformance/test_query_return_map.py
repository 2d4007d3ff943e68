"""Datascript's test/datascript/test/query_return_map.cljc: :keys, :syms, :strs."""

from __future__ import annotations

from tests.unit.conformance.datascript import Case, check

SOURCE = "query_return_map.cljc test-find-specs"
PEOPLE = ('[[:db/add 1 :name "Petr"] [:db/add 1 :age 44] [:db/add 2 :name "Ivan"] '
          '[:db/add 2 :age 25] [:db/add 3 :name "Sergey"] [:db/add 3 :age 11]]',)
WHERE = ":where [?e :name ?name] [?e :age ?age]]"

CASES = [
    Case(SOURCE, PEOPLE, f"[:find ?name ?age :keys n a {WHERE}",
         '#{{:n "Petr" :a 44} {:n "Ivan" :a 25} {:n "Sergey" :a 11}}'),
    Case(SOURCE, PEOPLE, f"[:find ?name ?age :syms n a {WHERE}",
         '#{{n "Petr" a 44} {n "Ivan" a 25} {n "Sergey" a 11}}'),
    Case(SOURCE, PEOPLE, f"[:find ?name ?age :strs n a {WHERE}",
         '#{{"n" "Petr" "a" 44} {"n" "Ivan" "a" 25} {"n" "Sergey" "a" 11}}'),
    Case(SOURCE, PEOPLE, '[:find [?name ?age] :keys n a :where [?e :name ?name] '
         '[(= ?name "Ivan")] [?e :age ?age]]', '{:n "Ivan" :a 25}'),
]


def test_datascript_case(case: Case) -> None:
    check(case)
