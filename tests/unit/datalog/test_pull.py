"""workers.datalog.pull: Datomic's pull grammar → specs, as a table, and the refusals."""

import re
from typing import Any

import pytest

from workers.datalog import compile_query, parse_query
from workers.datalog.ast import DEFAULT_LIMIT, AttrSpec, Pull, PullPattern, Variable
from workers.datalog.pull import parse_pattern
from workers.edn import keyword
from workers.errors import ErrorCode, QueryError

NAME, FRIEND, AKA = keyword("name"), keyword("friend"), keyword("aka")


def spec(attribute: str, key: Any = None, reverse: bool = False, **options: Any) -> AttrSpec:
    return AttrSpec(keyword(attribute), reverse, keyword(attribute) if key is None else key,
                    **options)


def row(text: str, expected: Any) -> Any:
    return pytest.param(text, expected, id=text)


@pytest.mark.parametrize(("text", "expected"), [
    row("[:name :aka]", PullPattern(False, (spec("name"), spec("aka")))),
    row("[*]", PullPattern(True, ())),
    row("[:name *]", PullPattern(True, (spec("name"),))),
    row("[:db/id]", PullPattern(False, (spec("db/id"),))),
    row("[:_child]", PullPattern(False, (spec("child", keyword("_child"), True),))),
    row("[:release/_artists]",
        PullPattern(False, (spec("release/artists", keyword("release/_artists"), True),))),
    row("[{:friend [:name]}]",
        PullPattern(False, (spec("friend", pattern=PullPattern(False, (spec("name"),))),))),
    row("[* {:friend [:name] :_child [*]}]", PullPattern(True, (
        spec("friend", pattern=PullPattern(False, (spec("name"),))),
        spec("child", keyword("_child"), True, pattern=PullPattern(True, ())),
    ))),
    row('[[:name :as "Name"] [:aka :as :alias]]',
        PullPattern(False, (spec("name", "Name"), spec("aka", keyword("alias"))))),
    row("[[:aka :limit 500] (limit :friend 2) [:child :limit nil] (limit :x nil)]",
        PullPattern(False, (spec("aka", limit=500), spec("friend", limit=2),
                            spec("child", limit=None), spec("x", limit=None)))),
    row('[(default :foo "bar") [:foo2 :default false] [:x :as "N" :default "Nothing"]]',
        PullPattern(False, (spec("foo", has_default=True, default="bar"),
                            spec("foo2", has_default=True, default=False),
                            spec("x", "N", has_default=True, default="Nothing")))),
    row("[{(limit :friend 2) [:name]}]", PullPattern(False, (
        spec("friend", limit=2, pattern=PullPattern(False, (spec("name"),))),))),
    row('[("limit" :aka 3) (:name :as "n")]',
        PullPattern(False, (spec("aka", limit=3), spec("name", "n")))),
    row("[[:tags :default [1 2]]]",
        PullPattern(False, (spec("tags", has_default=True, default=[1, 2]),))),
], ids=str)
def test_pattern_parses_to_specs(text: str, expected: PullPattern) -> None:
    assert parse_pattern(text) == expected


def test_default_limit_is_datomics_thousand() -> None:
    assert parse_pattern("[:aka]").attrs[0].limit == DEFAULT_LIMIT == 1000


def test_pull_is_a_find_element_next_to_variables() -> None:
    query = parse_query("[:find ?e (pull ?e [:name]) ?a :where [?e :age ?a]]")
    e = Variable("?e")
    assert query.find == (e, Pull(e, parse_pattern("[:name]")), Variable("?a"))
    assert query.basis == (e, Variable("?a"))


def test_source_before_the_pulled_variable_may_be_the_database() -> None:
    """Datascript's ``(pull $ ?e pattern)``: ``$`` is the one database deltalog queries."""
    assert parse_query("[:find (pull $ ?e [:name]) :where [?e :age]]").find == \
        parse_query("[:find (pull ?e [:name]) :where [?e :age]]").find


def test_recursive_map_specs_recurse_with_their_pattern() -> None:
    """``{:friend ...}`` recurses until an entity comes round again, ``{:friend 2}`` twice at
    most; either pulls with the pattern it is part of (no nested pattern of its own)."""
    (unbounded, limited) = parse_pattern("[:name {:friend ...} {:_child 2}]").attrs[1:]
    assert (unbounded.attribute, unbounded.reverse, unbounded.pattern) == (FRIEND, False, None)
    assert (unbounded.recursive, unbounded.recursion) == (True, None)
    assert (limited.key, limited.reverse, limited.recursive, limited.recursion) == (
        keyword("_child"), True, True, 2)
    assert not parse_pattern("[{:friend [:name]}]").attrs[0].recursive


def test_pattern_from_an_input_is_bound_with_the_inputs() -> None:
    text = "[:find (pull ?e ?p) :in $ ?p :where [?e :name]]"
    assert parse_query(text).find == (Pull(Variable("?e"), Variable("?p")),)
    for given in ("[:name {:friend [:name]}]", [NAME, {FRIEND: [NAME]}]):
        bound = compile_query(text, [given])
        assert bound.find == (Pull(Variable("?e"), parse_pattern("[:name {:friend [:name]}]")),)


@pytest.mark.parametrize(("text", "message"), [
    row("[:find (pull ?e [{:friend 0}]) :where [?e :a]]",
        ":find element 1: a recursion limit is a positive number or ..., got {:friend 0}"),
    row("[:find (pull $2 ?e [:a]) :where [?e :a]]",
        ":find element 1: pull from a source other than $ is not supported"),
    row("[:find (pull ?e $ [:a]) :where [?e :a]]", "expected (pull ?e [pattern])"),
    row("[:find (pull ?e [:a] :extra) :where [?e :a]]", "expected (pull ?e [pattern])"),
    row("[:find (pull ?e []) :where [?e :a]]", "a pull pattern is a vector [attr-spec+]"),
    row("[:find (pull ?e :name) :where [?e :a]]", "a pull pattern is a vector"),
    row('[:find (pull ?e ["name"]) :where [?e :a]]', '"name" is not an attribute spec'),
    row("[:find (pull ?e [[:a :limit 0]]) :where [?e :a]]",
        ":limit takes a positive number or nil, got 0"),
    row("[:find (pull ?e [[:a :sort 1]]) :where [?e :a]]", "unknown attribute option :sort"),
    row("[:find (pull ?e [[:a :as]]) :where [?e :a]]", "expected [:attr option value ...]"),
    row("[:find (pull ?e [:a [:b :as :a]]) :where [?e :a]]", "names a key twice"),
])
def test_malformed_or_unsupported_pattern_is_refused(text: str, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        parse_query(text)
    unsupported = "other than $" in message
    expected = ErrorCode.QUERY_UNSUPPORTED if unsupported else ErrorCode.QUERY_SHAPE
    assert info.value.code is expected


@pytest.mark.parametrize("text", [
    "[:find (pull ?e ?p) :where [?e :name ?p]]",
    "[:find (pull ?e ?p) :in $ ?p :where [?e :name ?p]]",
    "[:find (pull ?e ?p) (max ?p ?e) :in $ ?p :where [?e :name]]",
    "[:find (pull ?e ?p) :in $ [?p] :where [?e :name]]",
], ids=str)
def test_pattern_variable_must_be_an_input_used_by_pull_only(text: str) -> None:
    """(:find may return it: tests/unit/conformance/test_query_pull.py, test-var-pattern.)"""
    with pytest.raises(QueryError, match=r"the pattern \?p must be an :in scalar used by pull "
                                         "only") as info:
        compile_query(text, ["[:name]"] if ":in" in text else [])
    assert info.value.code is ErrorCode.QUERY_INPUTS


def test_pulled_variable_must_be_bound() -> None:
    with pytest.raises(QueryError, match=r"unsafe query: :find \?x") as info:
        compile_query("[:find (pull ?x [:a]) :where [?e :a]]")
    assert info.value.code is ErrorCode.QUERY_UNSAFE
