"""Datascript's test/datascript/test/query.cljc: joins, inputs and binding forms."""

from __future__ import annotations

from tests.unit.conformance.datascript import (
    FUNCTION_INPUT,
    Case,
    check,
    check_refusal,
)
from workers.errors import ErrorCode

SOURCE = "query.cljc"
PEOPLE = ('[{:db/id 1 :name "Ivan" :age 15} {:db/id 2 :name "Petr" :age 37} '
          '{:db/id 3 :name "Ivan" :age 37} {:db/id 4 :age 15}]',)
THREE = ('[{:db/id 1 :name "Ivan" :age 15} {:db/id 2 :name "Petr" :age 37} '
         '{:db/id 3 :name "Ivan" :age 37}]',)
AKAS = ("[{:db/ident :aka :db/cardinality :db.cardinality/many}]",
        '[[:db/add 1 :name "Ivan"] [:db/add 1 :aka "ivolga"] [:db/add 1 :aka "pi"] '
        '[:db/add 2 :name "Petr"] [:db/add 2 :aka "porosenok"] [:db/add 2 :aka "pi"]]')
COLL = ('[[:db/add 1 :name "Ivan"] [:db/add 1 :age 19] [:db/add 1 :aka "dragon_killer_94"] '
        '[:db/add 1 :aka "-=autobot=-"]]',)
TWO_NAMES = ('[[:db/add 1 :name "Ivan"] [:db/add 2 :name "Petr"]]',)
TEN = ("[" + " ".join(f'[:db/add {n} {a} "{n}{a[1:]}"]' for n in range(1, 11)
                      for a in (":a", ":b", ":c")) + "]",)

CASES = [
    Case(f"{SOURCE} test-joins", PEOPLE, "[:find ?e :where [?e :name]]", "#{[1] [2] [3]}"),
    Case(f"{SOURCE} test-joins", PEOPLE, '[:find ?e ?v :where [?e :name "Ivan"] [?e :age ?v]]',
         "#{[1 15] [3 37]}"),
    Case(f"{SOURCE} test-joins", PEOPLE, "[:find ?e1 ?e2 :where [?e1 :name ?n] [?e2 :name ?n]]",
         "#{[1 1] [2 2] [3 3] [1 3] [3 1]}"),
    Case(f"{SOURCE} test-joins", PEOPLE,
         '[:find ?e ?e2 ?n :where [?e :name "Ivan"] [?e :age ?a] [?e2 :age ?a] '
         "[?e2 :name ?n]]", '#{[1 1 "Ivan"] [3 3 "Ivan"] [3 2 "Petr"]}'),
    Case(f"{SOURCE} test-q-many", AKAS,
         "[:find ?n1 ?n2 :where [?e1 :aka ?x] [?e2 :aka ?x] [?e1 :name ?n1] [?e2 :name ?n2]]",
         '#{["Ivan" "Ivan"] ["Petr" "Petr"] ["Ivan" "Petr"] ["Petr" "Ivan"]}'),
    Case(f"{SOURCE} test-q-coll", COLL,
         '[:find ?n ?a :where [?e :aka "dragon_killer_94"] [?e :name ?n] [?e :age ?a]]',
         '#{["Ivan" 19]}'),
    Case(f"{SOURCE} test-q-coll Query over long tuples",
         ('[[:db/add 1 :name "Ivan"] [:db/add 1 :age 39]]',),
         "[:find ?e ?v :where [?e :name ?v]]", '#{[1 "Ivan"]}'),
    Case(f"{SOURCE} test-q-coll Query over long tuples",
         ('[[:db/add 1 :name "Ivan"] [:db/add 1 :age 39]]',),
         "[:find ?e ?a ?v ?t :where [?e ?a ?v ?t :db/retract]]", "#{[1 :age 39 999]}",
         differs="a pattern's transaction and added positions: the engine keeps no "
                 "transaction per datom, and its database holds no retracted datoms",
         refused="transaction"),
    Case(f"{SOURCE} test-q-in", THREE, "{:find [?e] :in [$ ?attr ?value] "
         ":where [[?e ?attr ?value]]}", "#{[1] [3]}", inputs='[:name "Ivan"]'),
    Case(f"{SOURCE} test-q-in", THREE, "{:find [?e] :in [$ ?attr ?value] "
         ":where [[?e ?attr ?value]]}", "#{[2] [3]}", inputs="[:age 37]"),
    Case(f"{SOURCE} test-q-in Named DB", THREE, "[:find ?a ?v :in $db ?e :where [$db ?e ?a ?v]]",
         '#{[:name "Ivan"] [:age 15]}', inputs="[1]"),
    Case(f"{SOURCE} test-q-in DB join with collection", THREE,
         "[:find ?e ?email :in $ $b :where [?e :name ?n] [$b ?n ?email]]",
         '#{[1 "ivan@mail.ru"] [2 "petr@gmail.com"] [3 "ivan@mail.ru"]}',
         inputs='[[["Ivan" "ivan@mail.ru"] ["Petr" "petr@gmail.com"]]]'),
    Case(f"{SOURCE} test-q-in Query without DB", (), "[:find ?a ?b :in ?a ?b]", "#{[10 20]}",
         inputs="[10 20]"),
    Case(f"{SOURCE} test-bindings Relation binding", THREE,
         "[:find ?e ?email :in $ [[?n ?email]] :where [?e :name ?n]]",
         '#{[1 "ivan@mail.ru"] [2 "petr@gmail.com"] [3 "ivan@mail.ru"]}',
         inputs='[[["Ivan" "ivan@mail.ru"] ["Petr" "petr@gmail.com"]]]'),
    Case(f"{SOURCE} test-bindings Tuple binding", THREE,
         "[:find ?e :in $ [?name ?age] :where [?e :name ?name] [?e :age ?age]]", "#{[3]}",
         inputs='[["Ivan" 37]]'),
    Case(f"{SOURCE} test-bindings Collection binding", THREE,
         "[:find ?attr ?value :in $ ?e [?attr ...] :where [?e ?attr ?value]]",
         '#{[:name "Ivan"] [:age 15]}', inputs="[1 [:name :age]]"),
    Case(f"{SOURCE} test-bindings Empty coll handling", TWO_NAMES,
         "[:find ?id :in $ [?id ...] :where [?id :age _]]", "#{}", inputs="[[]]"),
    Case(f"{SOURCE} test-bindings Empty coll handling", TWO_NAMES,
         "[:find ?id :in $ [[?id]] :where [?id :age _]]", "#{}", inputs="[[]]"),
    Case(f"{SOURCE} test-bindings Placeholders", (), "[:find ?x ?z :in [?x _ ?z]]",
         "#{[:x :z]}", inputs="[[:x :y :z]]"),
    Case(f"{SOURCE} test-bindings Placeholders", (), "[:find ?x ?z :in [[?x _ ?z]]]",
         "#{[:x :z] [:a :c]}", inputs="[[[:x :y :z] [:a :b :c]]]"),
    Case(f"{SOURCE} test-bindings Error reporting", (), "[:find ?a ?b :in [?a ?b]]",
         inputs="[:a]", raises=(ErrorCode.QUERY_INPUTS, "Cannot bind value :a to tuple [?a ?b]")),
    Case(f"{SOURCE} test-bindings Error reporting", (), "[:find ?a :in [?a ...]]",
         inputs="[:a]",
         raises=(ErrorCode.QUERY_INPUTS, "Cannot bind value :a to collection [?a ...]")),
    Case(f"{SOURCE} test-bindings Error reporting", (), "[:find ?a ?b :in [?a ?b]]",
         inputs="[[:a]]", raises=(ErrorCode.QUERY_INPUTS, "Not enough elements in a collection "
                                  "[:a] to bind tuple [?a ?b]")),
    Case(f"{SOURCE} test-nested-bindings", (), "[:find ?k ?v :in [[?k ?v] ...] :where [(> ?v 1)]]",
         "#{[:b 2] [:c 3]}", inputs="[{:a 1 :b 2 :c 3}]"),
    Case(f"{SOURCE} test-nested-bindings", (),
         "[:find ?k ?x :in [[?k [?min ?max]] ...] ?range :where [(?range ?min ?max) [?x ...]] "
         "[(even? ?x)]]", "#{[:a 2] [:a 4] [:a 6] [:b 2]}", inputs="[{:a [1 7] :b [2 4]} range]",
         differs=FUNCTION_INPUT, refused="a function bound to a variable"),
    Case(f"{SOURCE} test-built-in-regex", (),
         "[:find ?name :in [?name ...] ?key :where [(re-pattern ?key) ?pattern] "
         "[(re-find ?pattern ?name)]]", '#{["abcX"] ["aXb"]}',
         inputs='[#{"abc" "abcX" "aXb"} "X"]'),
    Case(f"{SOURCE} test-built-in-get", (),
         "[:find ?m ?m-value :in [[?k ?m] ...] ?m-key :where [(get ?m ?m-key) ?m-value]]",
         "#{[{:d 2} 2]}", inputs="[{:a {:b 1} :c {:d 2}} :d]"),
    Case(f"{SOURCE} test-join-unrelated", ('[{:db/id 1 :person/name "Joe"}]',),
         "[:find ?name :in $ ?my-fn :where [?e :person/name ?name] [(?my-fn) ?result] "
         "[(< ?result 3)]]", "#{}", inputs="[constantly-5]", differs=FUNCTION_INPUT,
         refused="a function bound to a variable"),
    *(Case(f"{SOURCE} test-constant-substitution", TEN, query, expected, inputs=inputs)
      for query, inputs, expected in [
          ("[:find ?v :in $ ?eid :where [?eid :b ?v]]", "[5]", '#{["5b"]}'),
          ('[:find ?a :in $ ?eid :where [?eid ?a "5b"]]', "[5]", "#{[:b]}"),
          ('[:find ?e :where [?e :b "5b"]]', "[]", "#{[5]}"),
          ("[:find ?e ?a ?v :in $ ?e ?a :where [?e ?a ?v]]", "[5 :b]", '#{[5 :b "5b"]}'),
          ("[:find ?e2 ?a ?v :in $ ?a ?v :where [?e ?a ?v] [?e2 ?a ?v]]", '[:b "5b"]',
           '#{[5 :b "5b"]}'),
          ("[:find ?a ?v :in $ ?e :where [?e ?a ?v]]", "[5]",
           '#{[:a "5a"] [:b "5b"] [:c "5c"]}'),
          ('[:find ?e ?a :where [?e ?a "5b"]]', "[]", "#{[5 :b]}"),
          ("[:find ?e ?a :in $ ?v :where [?e ?a ?v]]", '["5b"]', "#{[5 :b]}"),
          ("[:find ?e ?a :in $ [?v ...] :where [?e ?a ?v]]", '[["5b"]]', "#{[5 :b]}"),
          ('[:find ?e ?a :where [(ground "5b") ?v] [?e ?a ?v]]', "[]", "#{[5 :b]}")]),
    Case(f"{SOURCE} test-symbol-comparison", ("[[:db/add 1 :s a] [:db/add 2 :s b]]",),
         "[:find [?e ...] :where [?e :s b]]", "[2]",
         differs="symbols are not values: a datom's value is a long, double, string, boolean, "
                 "keyword, instant or uuid (DESIGN.md §1)"),
]


def test_datascript_case(case: Case) -> None:
    check(case)


def test_refusal_names_the_form(refused: Case) -> None:
    check_refusal(refused)
