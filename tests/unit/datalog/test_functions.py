"""workers.datalog.functions: the built-ins' Clojure/Datomic semantics, and failures."""

import re
from typing import Any

import pytest
from edn_format.immutable_dict import ImmutableDict

from workers.datalog.functions import FUNCTIONS, CallFailed, call, canonical, truthy
from workers.edn import keyword
from workers.zset.row import ValueSet


@pytest.mark.parametrize(("name", "args", "result"), [
    ("<", (1, 2.5), True),
    ("<", (1, 2, 2), False),
    ("<=", (1, 2, 2), True),
    (">", ("b", "a"), True),
    (">=", (keyword("b"), keyword("a")), True),
    # Clojure orders keywords by namespace, then name: (< :a/b :a-/b), (< :z :a/a)
    ("<", (keyword("a/b"), keyword("a-/b")), True),
    ("<", (keyword("z"), keyword("a/a")), True),
    ("<", (keyword("a/z"), keyword("b/a")), True),
    ("=", (1, 1, 1), True),
    ("not=", (1, 2), True),
    # Clojure's = : values of one kind (1, 1.0 and true are three); == : numbers' values
    ("=", (1, 1.0), False),
    ("=", (1, True), False),
    ("=", (0, False), False),
    ("=", (0.0, 0.0), True),
    ("=", (True, True), True),
    ("=", ((1, 2), (1.0, 2)), False),
    ("=", ((1, 2), (1, 2)), True),
    ("not=", (1, 1.0), True),
    ("not=", (False, 0), True),
    ("not=", (1.0, 1.0), False),
    ("==", (1, 1.0), True),
    ("==", (0, 0.0, -0.0), True),
    ("==", (1, 2.0), False),
    ("+", (1, 2, 3), 6),
    ("-", (5,), -5),
    ("-", (5, 1, 1), 3),
    ("*", (2, 2.5), 5.0),
    ("/", (6, 3), 2),
    ("/", (7, 2), 3.5),
    ("quot", (-7, 2), -3),
    ("rem", (-7, 2), -1),
    ("mod", (-7, 2), 1),
    ("inc", (41,), 42),
    ("dec", (1,), 0),
    ("max", (1, 5, 3), 5),
    ("str", ("a", 1, keyword("k"), None, True), "a1:ktrue"),
    ("subs", ("hello", 1, 3), "el"),
    ("upper-case", ("ab",), "AB"),
    ("count", ("abc",), 3),
    ("re-find", ("[0-9]+", "ab12cd"), "12"),
    ("re-find", ("(a)(b)", "xab"), ("ab", "a", "b")),
    ("re-matches", ("a.c", "abc"), "abc"),
    ("starts-with?", ("Ivan", "Iv"), True),
    ("even?", (4,), True),
    ("string?", ("x",), True),
    ("number?", (True,), False),
    ("keyword", ("k",), keyword("k")),
    ("ground", ((1, 2),), (1, 2)),
    # the rest of Datomic's list, as clojure.core/clojure.string document them
    ("compare", (1, 2), -1),
    ("compare", (2.5, 2.5), 0),
    ("compare", ("b", "a"), 1),
    ("compare", ("abc", "ab"), 1),
    ("compare", (None, 1), -1),
    ("name", (keyword("g/to"),), "to"),
    ("name", (keyword("to"),), "to"),
    ("namespace", (keyword("g/to"),), "g"),
    ("keyword", ("g", "to"), keyword("g/to")),
    ("keyword", (keyword("k"),), keyword("k")),
    ("re-seq", ("[0-9]+", "a1b22c333"), ("1", "22", "333")),
    ("re-seq", ("(.)=(.)", "a=b c=d"), (("a=b", "a", "b"), ("c=d", "c", "d"))),
    ("re-find", (re.compile("[a-z]+"), "12ab"), "ab"),
    ("list", (1, "a"), (1, "a")),
    ("set", ((1, 2, 2),), ValueSet([1, 2])),  # a frozenset that keeps kinds apart
    ("set", ((1, 1.0, True),), ValueSet([1, 1.0, True])),
    ("vec", (frozenset({1}),), (1,)),
    ("vec", (ImmutableDict({keyword("a"): 1}),), ((keyword("a"), 1),)),
    ("get", (ImmutableDict({keyword("a"): 1}), keyword("a")), 1),
    ("get", ((10, 20, 30), 1), 20),
    ("get", ((10, 20), 5, 0), 0),
    ("get", (frozenset({1, 2}), 2), 2),
    ("contains?", (frozenset({1, 2}), 2), True),
    ("contains?", ((10, 20), 1), True),
    ("contains?", ((10, 20), 2), False),
    ("count", (None,), 0),
    ("empty?", ((),), True),
    ("not-empty", ("",), None),
    ("not", (None,), True),
    ("not", (0,), False),
    ("range", (3,), (0, 1, 2)),
    ("range", (1, 7, 2), (1, 3, 5)),
    ("hash-map", (keyword("a"), 1), ImmutableDict({keyword("a"): 1})),
    ("pr-str", ("a", keyword("k"), None, (1, 2)), '"a" :k nil [1 2]'),
    ("print-str", ("a", keyword("k"), None), "a :k nil"),
    ("prn-str", ("a",), '"a"\n'),
    ("println-str", ("a", 1), "a 1\n"),
    ("join", (", ", (1, "a", keyword("k"))), "1, a, :k"),
    ("join", (("a", "b"),), "ab"),
    ("split", ("a,b,,c,,", ","), ("a", "b", "", "c")),
    ("split", ("a1b22c", re.compile("[0-9]+")), ("a", "b", "c")),
    ("split", ("a,b,c", ",", 2), ("a", "b,c")),
    ("split-lines", ("a\nb\r\nc",), ("a", "b", "c")),
    ("replace", ("The color is red", "red", "blue"), "The color is blue"),
    ("replace", ("a.b.c", ".", "-"), "a-b-c"),
    ("replace", ("fabulous fodder", re.compile("f(o+)"), "F$1"), "fabulous Fodder"),
    ("replace-first", ("aaa", "a", "b"), "baa"),
    ("capitalize", ("hELLO",), "Hello"),
    ("reverse", ("abc",), "cba"),
    ("index-of", ("abcabc", "c"), 2),
    ("index-of", ("abc", "z"), None),
    ("last-index-of", ("abcabc", "c"), 5),
    ("triml", ("  a ",), "a "),
    ("trimr", ("  a ",), "  a"),
    ("trim-newline", ("a\r\n",), "a"),
])
def test_builtin(name: str, args: tuple[Any, ...], result: Any) -> None:
    """Each row as Clojure's documentation (clojure.core, clojure.string) gives it."""
    value = call(FUNCTIONS[name], args)
    assert value == result
    assert type(value) is type(result)


@pytest.mark.parametrize(("name", "args"), [
    ("<", ("a", 1)),
    ("/", (1, 0)),
    ("inc", ("x",)),
    ("+", (True, 1)),
    ("subs", ("ab", 1, 5)),
    ("upper-case", (1,)),
    ("+", (2**62, 2**62)),
    ("compare", (1, "a")),
    ("namespace", ("a/b",)),
    ("range", ()),
    ("range", (0, 5, 0)),
    ("hash-map", (1,)),
    ("join", (",", 1)),
    ("==", (1, True)),  # Clojure: a boolean is not a number
    ("==", ("a", "a")),
])
def test_a_call_that_cannot_be_evaluated_fails_as_call_failed(name: str,
                                                              args: tuple[Any, ...]) -> None:
    with pytest.raises(CallFailed):
        call(FUNCTIONS[name], args)


def test_names_are_canonical_and_truth_is_clojure_truth() -> None:
    assert canonical("clojure.string/starts-with?") == "starts-with?"
    assert canonical("!=") == "not="
    assert canonical("==") == "=="  # numeric equality, not an alias of =
    assert [truthy(x) for x in (None, False, 0, "", ())] == [False, False, True, True, True]
