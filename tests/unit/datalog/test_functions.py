"""workers.datalog.functions: the built-ins' Clojure/Datomic semantics, and failures."""

from typing import Any

import pytest

from workers.datalog.functions import FUNCTIONS, CallFailed, call, canonical, truthy
from workers.edn import keyword


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
])
def test_builtin(name: str, args: tuple[Any, ...], result: Any) -> None:
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
])
def test_a_call_that_cannot_be_evaluated_fails_as_call_failed(name: str,
                                                              args: tuple[Any, ...]) -> None:
    with pytest.raises(CallFailed):
        call(FUNCTIONS[name], args)


def test_names_are_canonical_and_truth_is_clojure_truth() -> None:
    assert canonical("clojure.string/starts-with?") == "starts-with?"
    assert canonical("!=") == "not="
    assert [truthy(x) for x in (None, False, 0, "", ())] == [False, False, True, True, True]
