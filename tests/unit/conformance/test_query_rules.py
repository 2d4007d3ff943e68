"""Datascript's test/datascript/test/query_rules.cljc: rules, recursive and mutually
recursive, with inputs and built-ins, and their errors."""

from __future__ import annotations

from typing import Any

from tests.unit.conformance.datascript import (
    FUNCTION_INPUT,
    OTHER_SOURCE,
    Case,
    check,
    check_refusal,
)
from workers.errors import ErrorCode

SOURCE = "query_rules.cljc"
FOLLOW = ("[[:db/add 5 :follow 3] [:db/add 1 :follow 2] [:db/add 2 :follow 3] "
          "[:db/add 3 :follow 4] [:db/add 4 :follow 6] [:db/add 2 :follow 4]]",)
SYMMETRIC = ("[[(follow ?e1 ?e2) [?e1 :follow ?e2]] [(follow ?e1 ?e2) (follow ?e2 ?e1)]]")
F1_F2 = ("[[(f1 ?e1 ?e2) [?e1 :f1 ?e2]] [(f1 ?e1 ?e2) [?t :f1 ?e2] (f2 ?e1 ?t)] "
         "[(f2 ?e1 ?e2) [?e1 :f2 ?e2]] [(f2 ?e1 ?e2) [?t :f2 ?e2] (f1 ?e1 ?t)]]")
ATTR = ("[[:db/add 1 :attr true] [:db/add 2 :attr false]]",)
IS = "[[(is ?id ?val) [?id :attr ?val]]]"
ITEMS = ("[" + " ".join(f'[:db/add {i} :item/id {i}] [:db/add {i} :item/status "{status}"]'
                        for i, status in enumerate(["started", "pending", "stopped", "pending",
                                                    "pending", "started"], 1)) + "]",)


def rules(test: str, query: str, expected: str, inputs: str, **more: Any) -> Case:
    return Case(f"{SOURCE} {test}", FOLLOW, query, expected, inputs,
                **more)


CASES = [
    rules("test-rules", "[:find ?e1 ?e2 :in $ % :where (follow ?e1 ?e2)]",
          "#{[1 2] [2 3] [3 4] [2 4] [5 3] [4 6]}", "[[[(follow ?x ?y) [?x :follow ?y]]]]"),
    rules("test-rules Joining regular clauses with rule",
          "[:find ?y ?x :in $ % :where [_ _ ?x] (rule ?x ?y) [(even? ?x)]]",
          "#{[3 2] [6 4] [4 2]}", "[[[(rule ?a ?b) [?a :follow ?b]]]]"),
    rules("test-rules Rule context is isolated from outer context",
          "[:find ?x :in $ % :where [?e _ _] (rule ?x)]", "#{[:follow]}",
          "[[[(rule ?e) [_ ?e _]]]]"),
    rules("test-rules Rule with branches", "[:find ?e2 :in $ ?e1 % :where (follow ?e1 ?e2)]",
          "#{[2] [3] [4]}", "[1 [[(follow ?e2 ?e1) [?e2 :follow ?e1]] "
          "[(follow ?e2 ?e1) [?e2 :follow ?t] [?t :follow ?e1]]]]"),
    rules("test-rules Recursive rules", "[:find ?e2 :in $ ?e1 % :where (follow ?e1 ?e2)]",
          "#{[2] [3] [4] [6]}", "[1 [[(follow ?e1 ?e2) [?e1 :follow ?e2]] "
          "[(follow ?e1 ?e2) [?e1 :follow ?t] (follow ?t ?e2)]]]"),
    Case(f"{SOURCE} test-rules Recursive rules",
         ("[[:db/add 1 :follow 2] [:db/add 2 :follow 3]]",),
         "[:find ?e1 ?e2 :in $ % :where (follow ?e1 ?e2)]", "#{[1 2] [2 3] [2 1] [3 2]}",
         f"[{SYMMETRIC}]"),
    Case(f"{SOURCE} test-rules Recursive rules",
         ("[[:db/add 1 :follow 2] [:db/add 2 :follow 3] [:db/add 3 :follow 1]]",),
         "[:find ?e1 ?e2 :in $ % :where (follow ?e1 ?e2)]",
         "#{[1 2] [2 3] [3 1] [2 1] [3 2] [1 3]}", f"[{SYMMETRIC}]"),
    Case(f"{SOURCE} test-rules Mutually recursive rules",
         ("[[:db/add 0 :f1 1] [:db/add 1 :f2 2] [:db/add 2 :f1 3] [:db/add 3 :f2 4] "
          "[:db/add 4 :f1 5] [:db/add 5 :f2 6]]",),
         "[:find ?e1 ?e2 :in $ % :where (f1 ?e1 ?e2)]",
         "#{[0 1] [0 3] [0 5] [1 3] [1 5] [2 3] [2 5] [3 5] [4 5]}", f"[{F1_F2}]"),
    rules("test-rules Passing ins to rule",
          "[:find ?x ?y :in $ % ?even :where (match ?even ?x ?y)]", "#{[4 6] [2 4]}",
          "[[[(match ?pred ?e ?e2) [?e :follow ?e2] [(?pred ?e)] [(?pred ?e2)]]] even?]",
          differs=FUNCTION_INPUT, refused="?pred"),
    rules("test-rules Using built-ins inside rule",
          "[:find ?x ?y :in $ % :where (match ?x ?y)]", "#{[4 6] [2 4]}",
          "[[[(match ?e ?e2) [?e :follow ?e2] [(even? ?e)] [(even? ?e2)]]]]"),
    Case(f"{SOURCE} test-rules Calling rule twice (#44)", ('[[:db/add 1 :attr "a"]]',),
         '[:find ?p :in $ % ?fn :where (rule ?p ?fn "a") (rule ?p ?fn "b")]', "#{}",
         '[[[(rule ?p ?fn ?x) [?p :attr ?x] [(?fn ?x)]]] constantly-true]',
         differs=FUNCTION_INPUT, refused="?fn"),
    Case(f"{SOURCE} test-rules Specifying db to rule", (),
         "[:find ?n :in $sexes $ages % :where ($sexes male ?n) ($ages adult ?n)]", '#{["Oleg"]}',
         '[[["Ivan" :male] ["Darya" :female] ["Oleg" :male] ["Igor" :male]] '
         '[["Ivan" 15] ["Oleg" 66] ["Darya" 32]] '
         "[[(male ?x) [?x :male]] [(adult ?y) [?y ?a] [(>= ?a 18)]]]]",
         differs=OTHER_SOURCE, refused="$sexes"),
    Case(f"{SOURCE} test-rules Rule name validation #319", (),
         "[:find ?x :in $ % :where (wat ?x)]", inputs="[[]]",
         raises=(ErrorCode.QUERY_SHAPE, "Unknown rule 'wat in (wat ?x)")),
    Case(f"{SOURCE} test-rules Rule vars validation", (), "[:find ?e :in $ % :where [?e]]",
         inputs="[[[(rule $e1 ?e2) [?e1 :ref ?e2]]]]",
         raises=(ErrorCode.QUERY_SHAPE,
                 "Cannot parse var, expected symbol starting with ?, got: $e1")),
    Case(f"{SOURCE} test-false-arguments", ATTR, "[:find ?id :in $ % :where (is ?id true)]",
         "#{[1]}", f"[{IS}]"),
    Case(f"{SOURCE} test-false-arguments", ATTR, "[:find ?id :in $ % :where (is ?id false)]",
         "#{[2]}", f"[{IS}]"),
    Case(f"{SOURCE} test-rule-performance-on-larger-datasets (inline)", ITEMS,
         '[:find ?e :where [?e :item/status ?status] [(ground "pending") ?status]]',
         "#{[2] [4] [5]}"),
    Case(f"{SOURCE} test-rule-performance-on-larger-datasets (rule)", ITEMS,
         "[:find ?e :in $ % :where [?e :item/status ?status] (pending? ?status)]",
         "#{[2] [4] [5]}", '[[[(pending? ?status) [(ground "pending") ?status]]]]'),
]


def test_datascript_case(case: Case) -> None:
    check(case)


def test_refusal_names_the_form(refused: Case) -> None:
    check_refusal(refused)
