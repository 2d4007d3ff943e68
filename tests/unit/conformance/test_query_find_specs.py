"""Datascript's test/datascript/test/query_find_specs.cljc: find-coll, find-tuple,
find-scalar, with aggregates."""

from __future__ import annotations

from tests.unit.conformance.datascript import Case, check

SOURCE = "query_find_specs.cljc test-find-specs"
PEOPLE = ('[[:db/add 1 :name "Petr"] [:db/add 1 :age 44] [:db/add 2 :name "Ivan"] '
          '[:db/add 2 :age 25] [:db/add 3 :name "Sergey"] [:db/add 3 :age 11]]',)

CASES = [
    Case(SOURCE, PEOPLE, "[:find [?name ...] :where [_ :name ?name]]", '["Ivan" "Petr" "Sergey"]'),
    Case(SOURCE, PEOPLE, "[:find [?name ?age] :where [1 :name ?name] [1 :age ?age]]",
         '["Petr" 44]'),
    Case(SOURCE, PEOPLE, "[:find ?name . :where [1 :name ?name]]", '"Petr"'),
    Case(f"{SOURCE} Multiple results get cut", PEOPLE,
         "[:find [?name ?age] :where [?e :name ?name] [?e :age ?age]]",
         '#{["Petr" 44] ["Ivan" 25] ["Sergey" 11]}', one_of=True),
    Case(f"{SOURCE} Multiple results get cut", PEOPLE, "[:find ?name . :where [_ :name ?name]]",
         '#{"Ivan" "Petr" "Sergey"}', one_of=True),
    Case(f"{SOURCE} Aggregates work with find specs", PEOPLE,
         "[:find [(count ?name) ...] :where [_ :name ?name]]", "[3]"),
    Case(f"{SOURCE} Aggregates work with find specs", PEOPLE,
         "[:find [(count ?name)] :where [_ :name ?name]]", "[3]"),
    Case(f"{SOURCE} Aggregates work with find specs", PEOPLE,
         "[:find (count ?name) . :where [_ :name ?name]]", "3"),
]


def test_datascript_case(case: Case) -> None:
    check(case)
