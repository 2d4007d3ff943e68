"""Datascript's test/datascript/test/lookup_refs.cljc, its query part
(test-lookup-refs-query): lookup refs as inputs and in patterns (joined in, so a registered
query follows the unique value: workers.datalog.lookup_refs), and plain ids next to values of
other kinds (#214)."""

from __future__ import annotations

from tests.unit.conformance.datascript import (
    OTHER_SOURCE,
    Case,
    check,
)

SOURCE = "lookup_refs.cljc test-lookup-refs-query"
FRIENDS = ("[{:db/ident :name :db/unique :db.unique/identity} "
           "{:db/ident :friend :db/valueType :db.type/ref}]",
           '[{:db/id 1 :id 1 :name "Ivan" :age 11 :friend 2} '
           '{:db/id 2 :id 2 :name "Petr" :age 22 :friend 3} {:db/id 3 :id 3 :name "Oleg" :age 33}]')
NOTHING_FOUND = ("a lookup ref naming no entity matches nothing: a registered query follows the "
                 "unique value, which may come later (Datascript throws)")
IVAN, PETR, OLEG = '[:name "Ivan"]', '[:name "Petr"]', '[:name "Oleg"]'


def lookup(query: str, expected: str, inputs: str) -> Case:
    return Case(SOURCE, FRIENDS, query, expected, inputs)


CASES = [
    lookup("[:find ?e ?v :in $ ?e :where [?e :age ?v]]", f"#{{[{IVAN} 11]}}", f"[{IVAN}]"),
    lookup("[:find [?v ...] :in $ [?e ...] :where [?e :age ?v]]", "[11 22]",
           f"[[{IVAN} {PETR}]]"),
    lookup("[:find [?e ...] :in $ ?v :where [?e :friend ?v]]", "[1]", f"[{PETR}]"),
    lookup("[:find [?e ...] :in $ [?v ...] :where [?e :friend ?v]]", "[1 2]",
           f"[[{PETR} {OLEG}]]"),
    lookup("[:find ?e ?v :in $ ?e ?v :where [?e :friend ?v]]", f"#{{[{IVAN} {PETR}]}}",
           f"[{IVAN} {PETR}]"),
    lookup("[:find ?e ?v :in $ [?e ...] [?v ...] :where [?e :friend ?v]]",
           f"#{{[{IVAN} {PETR}] [{PETR} {OLEG}]}}",
           f"[[{IVAN} {PETR} {OLEG}] [{IVAN} {PETR} {OLEG}]]"),
    Case(f"{SOURCE} issue-214", FRIENDS, "[:find ?e :in $ [?e ...] :where [?e :friend 3]]",
         "#{[2]}", '[[1 2 3 "A"]]'),
    Case(SOURCE, FRIENDS, "[:find ?e ?e1 ?e2 :in $1 $2 [?e ...] :where [$1 ?e :id ?e1] "
         "[$2 ?e :id ?e2]]", f"#{{[{IVAN} 1 3] [{PETR} 2 1] [{OLEG} 3 2]}}",
         f'[[[3 :name "Ivan"] [3 :id 3] [1 :name "Petr"] [1 :id 1] [2 :name "Oleg"] [2 :id 2]] '
         f"[{IVAN} {PETR} {OLEG}]]", differs=OTHER_SOURCE),
    lookup(f"[:find ?v :where [{IVAN} :friend ?v]]", "#{[2]}", "[]"),
    lookup(f"[:find ?e :where [?e :friend {PETR}]]", "#{[1]}", "[]"),
    Case(f"{SOURCE} inline refs", FRIENDS, '[:find ?e :where [[:name "Valery"] :friend ?e]]',
         raises=(None, 'Nothing found for entity id [:name "Valery"]'), differs=NOTHING_FOUND),
]


def test_datascript_case(case: Case) -> None:
    check(case)
