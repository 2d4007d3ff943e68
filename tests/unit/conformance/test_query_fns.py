"""Datascript's test/datascript/test/query_fns.cljc: predicates, functions and their
bindings, get-else, get-some, missing?, and the errors they raise."""

from __future__ import annotations

from typing import Any

from tests.unit.conformance.datascript import (
    FUNCTION_INPUT,
    Case,
    check,
    check_refusal,
)
from workers.errors import ErrorCode

SOURCE = "query_fns.cljc"
FAMILY = ("[{:db/ident :parent :db/valueType :db.type/ref}]",
          '[{:db/id 1 :name "Ivan" :age 15} {:db/id 2 :name "Petr" :age 22 :height 240 '
          ':parent 1} {:db/id 3 :name "Slava" :age 37 :parent 2}]')
FOUR = ('[{:db/id 1 :name "Ivan" :age 10} {:db/id 2 :name "Ivan" :age 20} '
        '{:db/id 3 :name "Oleg" :age 10} {:db/id 4 :name "Oleg" :age 20}]',)
MIXED = ('[[:db/add 0 :v 1] [:db/add 1 :v 1] [:db/add "" :v 1]]',)  # the tuples [0] [1] [""]
MY_VALS = ("[[(my-vals ?x) [(identity 1) ?x]] [(my-vals ?x) [(identity 2) ?x]] "
           "[(my-vals ?x) [(identity 3) ?x]]]")
ACROSS_KINDS = ("<, <=, >, >= across kinds (a long and a string) are false: Datomic throws, "
                "Datascript orders by kind; a standing query must not stop on one odd value")


def fns(test: str, query: str, expected: str, inputs: str = "[]", **more: Any) -> Case:
    return Case(f"{SOURCE} {test}", FAMILY, query, expected, inputs, **more)


CASES = [
    Case(f"{SOURCE} test-query-fns predicate without free variables", (),
         "[:find ?x :in [?x ...] :where [(> 2 1)]]", "#{[:a] [:b] [:c]}", "[[:a :b :c]]"),
    fns("test-query-fns ground", "[:find ?vowel :where [(ground [:a :e :i :o :u]) [?vowel ...]]]",
        "#{[:a] [:e] [:i] [:o] [:u]}"),
    fns("test-query-fns get-else",
        "[:find ?e ?age ?height :where [?e :age ?age] [(get-else $ ?e :height 300) ?height]]",
        "#{[1 15 300] [2 22 240] [3 37 300]}"),
    fns("test-query-fns get-else",
        "[:find ?e ?height :where [?e :age] [(get-else $ ?e :height nil) ?height]]", "",
        raises=(ErrorCode.QUERY_SHAPE, "get-else: nil default value is not supported")),
    fns("test-query-fns get-some",
        "[:find ?e ?a ?v :where [?e :name _] [(get-some $ ?e :height :age) [?a ?v]]]",
        "#{[1 :age 15] [2 :height 240] [3 :age 37]}"),
    fns("test-query-fns missing?",
        "[:find ?e ?age :in $ :where [?e :age ?age] [(missing? $ ?e :height)]]",
        "#{[1 15] [3 37]}"),
    fns("test-query-fns missing? back-ref",
        "[:find ?e :in $ :where [?e :age ?age] [(missing? $ ?e :_parent)]]", "#{[3]}"),
    fns("test-query-fns Built-ins",
        "[:find ?e1 ?e2 :where [?e1 :age ?a1] [?e2 :age ?a2] [(< ?a1 18 ?a2)]]",
        "#{[1 2] [1 3]}"),
    fns("test-query-fns Built-ins", "[:find ?a1 :where [_ :age ?a1] [(< ?a1 22)]]", "#{[15]}"),
    fns("test-query-fns Built-ins", "[:find ?a1 :where [_ :age ?a1] [(<= ?a1 22)]]",
        "#{[15] [22]}"),
    fns("test-query-fns Built-ins", "[:find ?a1 :where [_ :age ?a1] [(> ?a1 22)]]", "#{[37]}"),
    fns("test-query-fns Built-ins", "[:find ?a1 :where [_ :age ?a1] [(>= ?a1 22)]]",
        "#{[22] [37]}"),
    *(Case(f"{SOURCE} test-query-fns compare values of different types", MIXED,
           f"[:find ?e :where [?e] [({op} ?e 1)]]", expected, differs=differs)
      for op, expected, differs in [
          ("<", "#{[0]}", None), ("<=", "#{[0] [1]}", None),
          (">", '#{[""]}', ACROSS_KINDS), (">=", '#{[1] [""]}', ACROSS_KINDS)]),
    Case(f"{SOURCE} test-query-fns Built-ins", (),
         "[:find ?x ?c :in [?x ...] :where [(count ?x) ?c]]", '#{["a" 1] ["abc" 3]}',
         '[["a" "abc"]]'),
    fns("test-query-fns Built-in vector, hashmap",
        "[:find [?tx-data ...] :where [(ground :db/add) ?op] [(vector ?op -1 :attr 12) ?tx-data]]",
        "[[:db/add -1 :attr 12]]"),
    fns("test-query-fns Built-in vector, hashmap",
        '[:find [?tx-data ...] :where [(hash-map :db/id -1 :age 92 :name "Aaron") ?tx-data]]',
        '[{:db/id -1 :age 92 :name "Aaron"}]'),
    fns("test-query-fns Passing predicate as source",
        "[:find ?e :in $ ?adult :where [?e :age ?a] [(?adult ?a)]]", "#{[2] [3]}",
        "[adult?]", differs=FUNCTION_INPUT, refused="?adult"),
    fns("test-query-fns Calling a function",
        "[:find ?e1 ?e2 ?e3 :where [?e1 :age ?a1] [?e2 :age ?a2] [?e3 :age ?a3] "
        "[(+ ?a1 ?a2) ?a12] [(= ?a12 ?a3)]]", "#{[1 2 3] [2 1 3]}"),
    fns("test-query-fns Two conflicting function values for one binding.",
        "[:find ?n :where [(identity 1) ?n] [(identity 2) ?n]]", "#{}"),
    fns("test-query-fns Destructured conflicting function values for two bindings.",
        "[:find ?n ?x :where [(identity [3 4]) [?n ?x]] [(identity [1 2]) [?n ?x]]]", "#{}"),
    fns("test-query-fns Rule bindings interacting with function binding. (fn, rule)",
        "[:find ?n :in $ % :where [(identity 2) ?n] (my-vals ?n)]", "#{[2]}", f"[{MY_VALS}]"),
    fns("test-query-fns Rule bindings interacting with function binding. (rule, fn)",
        "[:find ?n :in $ % :where (my-vals ?n) [(identity 2) ?n]]", "#{[2]}", f"[{MY_VALS}]"),
    fns("test-query-fns Conflicting relational bindings with function binding. (rel, fn)",
        "[:find ?age :where [_ :age ?age] [(identity 100) ?age]]", "#{}"),
    fns("test-query-fns Conflicting relational bindings with function binding. (fn, rel)",
        "[:find ?age :where [(identity 100) ?age] [_ :age ?age]]", "#{}"),
    Case(f"{SOURCE} test-query-fns Function on empty rel",
         ("[[:db/add 0 :age 15] [:db/add 1 :age 35]]",),
         "[:find ?e ?y :where [?e :salary ?x] [(+ ?x 100) ?y]]", "#{}"),
    Case(f"{SOURCE} test-query-fns Returning nil from function filters out tuple from result",
         (), "[:find ?x :in [?in ...] ?f :where [(?f ?in) ?x]]", "#{[2] [4]}",
         "[[1 2 3 4] when-even]", differs=FUNCTION_INPUT, refused="?f"),
    Case(f"{SOURCE} test-query-fns Result bindings", (),
         "[:find ?a ?c :in ?in :where [(ground ?in) [?a _ ?c]]]", "#{[:a :c]}", "[[:a :b :c]]"),
    Case(f"{SOURCE} test-query-fns Result bindings", (),
         "[:find ?in :in ?in :where [(ground ?in) _]]", "#{[:a]}", "[:a]"),
    Case(f"{SOURCE} test-query-fns Result bindings", (),
         "[:find ?x ?z :in ?in :where [(ground ?in) [[?x _ ?z]...]]]", "#{[:a :c] [:d :f]}",
         "[[[:a :b :c] [:d :e :f]]]"),
    Case(f"{SOURCE} test-query-fns Result bindings", (),
         "[:find ?in :in [?in ...] :where [(ground ?in) _]]", "#{}", "[[]]"),
    *(Case(f"{SOURCE} test-predicates", FOUR, query, expected) for query, expected in [
        ("[:find ?e ?a :where [?e :age ?a] [(> ?a 10)]]", "#{[2 20] [4 20]}"),
        ("[:find ?e ?e2 :where [?e :name] [?e2 :name] [(< ?e ?e2)]]",
         "#{[1 2] [1 3] [1 4] [2 3] [2 4] [3 4]}"),
        ("[:find ?e ?e2 :where [?e :age ?a] [?e2 :age ?a2] [(< ?e ?e2)]]",
         "#{[1 2] [1 3] [1 4] [2 3] [2 4] [3 4]}"),
        ('[:find ?e ?e2 :where [?e :name "Ivan"] [?e2 :name "Oleg"] [(= ?e ?e2)]]', "#{}"),
        ('[:find ?e :where [?e :name "Ivan"] [?e :age 20] [(= ?e 2)]]', "#{[2]}"),
        ('[:find ?e :where [?e :name "Ivan"] [?e :age 20] [(= ?e 1)]]', "#{}")]),
    Case(f"{SOURCE} test-predicates", FOUR,
         "[:find ?e :in $ ?pred :where [?e :age ?a] [(?pred $ ?e 10)]]", "#{[1] [3]}",
         "[age-is?]", differs=FUNCTION_INPUT, refused="?pred"),
    Case(f"{SOURCE} test-exceptions", (), "[:find ?e :in [?e ...] :where [(fun ?e)]]",
         inputs="[[1]]", raises=(ErrorCode.QUERY_UNSUPPORTED,
                                 "Unknown predicate 'fun in [(fun ?e)]")),
    Case(f"{SOURCE} test-exceptions", (), "[:find ?e ?x :in [?e ...] :where [(fun ?e) ?x]]",
         inputs="[[1]]", raises=(ErrorCode.QUERY_UNSUPPORTED,
                                 "Unknown function 'fun in [(fun ?e) ?x]")),
    Case(f"{SOURCE} test-exceptions", (), "[:find ?x :where [(zero? ?x)]]",
         raises=(ErrorCode.QUERY_UNSAFE, "Insufficient bindings: #{?x} not bound in [(zero? ?x)]")),
    Case(f"{SOURCE} test-exceptions", (), "[:find ?x :where [(inc ?x) ?y]]",
         raises=(ErrorCode.QUERY_UNSAFE,
                 "Insufficient bindings: #{?x} not bound in [(inc ?x) ?y]")),
    Case(f"{SOURCE} test-exceptions", (), "[:find ?x :where [?x] [(zero? $2 ?x)]]",
         raises=(ErrorCode.QUERY_UNSUPPORTED, "$2")),
    Case(f"{SOURCE} test-exceptions", (), "[:find ?x :in $2 :where [$2 ?x] [(zero? $ ?x)]]",
         raises=(ErrorCode.QUERY_UNSUPPORTED, "a database ($) as a function argument")),
    Case(f"{SOURCE} test-issue-180", ("[{:db/id 1 :age 20}]",),
         "[:find ?e ?a :where [_ :pred ?pred] [?e :age ?a] [(?pred ?a)]]", "#{}",
         differs="a function bound to a variable: functions are called by name",
         refused="?pred"),
    Case(f"{SOURCE} test-symbol-resolution", (),
         "[:find ?x . :where [(datascript.test.query-fns/sample-query-fn) ?x]]", "42",
         differs="user functions: deltalog calls built-ins only (no eval)",
         refused="Unknown function 'datascript.test.query-fns/sample-query-fn"),
    Case(f"{SOURCE} test-issue-445 get-else using lookup ref",
         ("[{:db/ident :name :db/unique :db.unique/identity}]",
          '[{:db/id 1 :name "Ivan" :age 15} {:db/id 2 :name "Petr" :age 22 :height 240}]'),
         '[:find ?height . :in $ ?e :where [(get-else $ ?e :height "Unknown") ?height]]',
         '"Unknown"', '[[:name "Ivan"]]'),
    Case(f"{SOURCE} test-issue-445 get-some using lookup ref",
         ("[{:db/ident :name :db/unique :db.unique/identity}]",
          '[{:db/id 1 :name "Ivan" :age 15} {:db/id 2 :name "Petr" :age 22 :height 240}]'),
         "[:find ?e ?a ?v :in $ ?e :where [(get-some $ ?e :weight :age :height) [?a ?v]]]",
         '#{[[:name "Petr"] :age 22]}', '[[:name "Petr"]]'),
]


def test_datascript_case(case: Case) -> None:
    check(case)


def test_refusal_names_the_form(refused: Case) -> None:
    check_refusal(refused)
