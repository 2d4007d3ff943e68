"""Datascript's test/datascript/test/query_pull.cljc: pull in :find, with variables,
aggregates, find specifications and a pattern given as an input."""

from __future__ import annotations

from tests.unit.conformance.datascript import (
    OTHER_SOURCE,
    Case,
    check,
    check_refusal,
)

SOURCE = "query_pull.cljc"
# Datascript's attributes are cardinality one unless declared; deltalog's, many.
ONE = ("[{:db/ident :name :db/cardinality :db.cardinality/one} "
       "{:db/ident :age :db/cardinality :db.cardinality/one}]")
PEOPLE = (ONE, '[{:db/id 1 :name "Petr" :age 44} {:db/id 2 :name "Ivan" :age 25} '
               '{:db/id 3 :name "Oleg" :age 11}]')
ADULTS = ":where [?e :age ?a] [(>= ?a 18)]]"
VALUES = (ONE, "[{:db/ident :value :db/cardinality :db.cardinality/many}]",
          '[{:db/id 1 :name "Petr" :value [10 20 30 40]} {:db/id 2 :name "Ivan" :value [14 16]} '
          '{:db/id 3 :name "Oleg" :value 1}]')


def basics(find: str, expected: str) -> Case:
    return Case(f"{SOURCE} test-basics", PEOPLE, f"[:find {find} {ADULTS}", expected)


CASES = [
    basics("(pull ?e [:name])", '#{[{:name "Ivan"}] [{:name "Petr"}]}'),
    basics("(pull ?e [*])",
           '#{[{:db/id 2 :age 25 :name "Ivan"}] [{:db/id 1 :age 44 :name "Petr"}]}'),
    basics("?e (pull ?e [:name])", '#{[2 {:name "Ivan"}] [1 {:name "Petr"}]}'),
    basics("?e ?a (pull ?e [:name])", '#{[2 25 {:name "Ivan"}] [1 44 {:name "Petr"}]}'),
    basics("?e (pull ?e [:name]) ?a", '#{[2 {:name "Ivan"} 25] [1 {:name "Petr"} 44]}'),
    Case(f"{SOURCE} test-var-pattern", PEOPLE, f"[:find (pull ?e ?pattern) :in $ ?pattern {ADULTS}",
         '#{[{:name "Ivan"}] [{:name "Petr"}]}', "[[:name]]"),
    Case(f"{SOURCE} test-var-pattern", PEOPLE,
         f"[:find ?e ?a ?pattern (pull ?e ?pattern) :in $ ?pattern {ADULTS}",
         '#{[2 25 [:name] {:name "Ivan"}] [1 44 [:name] {:name "Petr"}]}', "[[:name]]"),
    Case(f"{SOURCE} test-multiple-sources", (ONE, '[{:db/id 1 :name "Ivan" :age 25}]'),
         "[:find ?e (pull $1 ?e [:name]) :in $1 $2 :where [$1 ?e :age 25]]",
         '#{[1 {:name "Ivan"}]}', '[[[1 :name "Petr"] [1 :age 25]]]', differs=OTHER_SOURCE,
         refused="$1"),
    Case(f"{SOURCE} test-multiple-sources", (ONE, '[{:db/id 1 :name "Ivan" :age 25}]'),
         "[:find ?e (pull $2 ?e [:name]) :in $1 $2 :where [$2 ?e :age 25]]",
         '#{[1 {:name "Petr"}]}', '[[[1 :name "Petr"] [1 :age 25]]]', differs=OTHER_SOURCE,
         refused="source other than $"),
    Case(f"{SOURCE} test-multiple-sources $ is default source",
         (ONE, '[{:db/id 1 :name "Petr" :age 25}]'),
         "[:find ?e (pull ?e [:name]) :in $1 $ :where [$ ?e :age 25]]",
         '#{[1 {:name "Petr"}]}', '[[[1 :name "Ivan"] [1 :age 25]]]'),
    Case(f"{SOURCE} test-find-spec", PEOPLE, "[:find (pull ?e [:name]) . :where [?e :age 25]]",
         '{:name "Ivan"}'),
    Case(f"{SOURCE} test-find-spec", PEOPLE,
         "[:find [(pull ?e [:name]) ...] :where [?e :age ?a]]",
         '#{{:name "Ivan"} {:name "Petr"} {:name "Oleg"}}'),
    Case(f"{SOURCE} test-find-spec", PEOPLE, "[:find [?e (pull ?e [:name])] :where [?e :age 25]]",
         '[2 {:name "Ivan"}]'),
    Case(f"{SOURCE} test-aggregates", VALUES,
         "[:find ?e (pull ?e [:name]) (min ?v) (max ?v) :where [?e :value ?v]]",
         '#{[1 {:name "Petr"} 10 40] [2 {:name "Ivan"} 14 16] [3 {:name "Oleg"} 1 1]}'),
    Case(f"{SOURCE} test-lookup-refs",
         ("[{:db/ident :name :db/unique :db.unique/identity}]", *PEOPLE),
         "[:find ?ref ?a (pull ?ref [:db/id :name]) :in $ [?ref ...] :where [?ref :age ?a] "
         "[(>= ?a 18)]]", '#{[[:name "Petr"] 44 {:db/id 1 :name "Petr"}] '
         '[[:name "Ivan"] 25 {:db/id 2 :name "Ivan"}]}',
         '[[[:name "Ivan"] [:name "Oleg"] [:name "Petr"]]]'),
]


def test_datascript_case(case: Case) -> None:
    check(case)


def test_refusal_names_the_form(refused: Case) -> None:
    check_refusal(refused)
