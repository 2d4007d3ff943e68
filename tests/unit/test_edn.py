"""workers.edn: interned keywords, EDN text → Python forms, and forms → EDN text."""

import datetime
import fcntl
import pickle
import re
import subprocess
import sys
import uuid
from typing import Any

import edn_format
import pytest

from workers import edn
from workers.edn import Keyword, Symbol, keyword
from workers.errors import EdnSyntaxError, ErrorCode

PLAIN = edn_format.Keyword
UUID_TEXT = "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"


def case(text: str, *rest: Any) -> Any:
    """A table row whose test id is its EDN text."""
    return pytest.param(text, *rest, id=text)


# -- interned keywords ---------------------------------------------------------------------

def test_keyword_of_the_same_name_is_the_same_object():
    assert keyword("person/name") is keyword("person/name")


def test_interned_keyword_equals_plain_keyword_both_ways():
    assert keyword("person/name") == PLAIN("person/name")
    assert PLAIN("person/name") == keyword("person/name")
    assert (keyword("person/name") != PLAIN("person/name")) is False


def test_interned_keyword_hashes_like_plain_keyword():
    assert hash(keyword("person/name")) == hash(PLAIN("person/name"))


def test_dict_keyed_by_interned_keyword_is_found_with_plain_keyword():
    assert {keyword("name"): "Ivan"}[PLAIN("name")] == "Ivan"


def test_dict_keyed_by_plain_keyword_is_found_with_interned_keyword():
    assert {PLAIN("name"): "Ivan"}[keyword("name")] == "Ivan"


@pytest.mark.parametrize("other", [PLAIN("age"), Symbol("name"), "name", ":name"], ids=repr)
def test_keyword_differs_from_other_names_symbols_and_strings(other):
    assert keyword("name") != other


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_round_trip_returns_the_interned_keyword(protocol):
    assert pickle.loads(pickle.dumps(keyword("name"), protocol)) is keyword("name")


def test_intern_replaces_a_plain_keyword_by_the_interned_one():
    assert edn.intern(PLAIN("name")) is keyword("name")


# -- read ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "form"), [
    case("[1 2]", [1, 2]),
    case("(1 2)", (1, 2)),
    case("{:a 1}", {keyword("a"): 1}),
    case("#{1 2}", frozenset({1, 2})),
    case("[[1] (2) {:a [3]}]", [[1], (2,), {keyword("a"): [3]}]),
    case("(not [?e :a])", (Symbol("not"), [Symbol("?e"), keyword("a")])),
    case('"Ivan"', "Ivan"),
    case("42", 42),
    case("1.5", 1.5),
    case("true", True),
    case("nil", None),
    case("?e", Symbol("?e")),
    case('#inst "2020-01-02T03:04:05Z"',
         datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)),
    case(f'#uuid "{UUID_TEXT}"', uuid.UUID(UUID_TEXT)),
])
def test_read_turns_edn_into_python_forms(text, form):
    got = edn.read(text)
    assert got == form
    assert type(got) is type(form)


def _keywords(form: Any) -> list[Any]:
    if isinstance(form, PLAIN):
        return [form]
    if isinstance(form, dict):
        return _keywords(list(form.keys())) + _keywords(list(form.values()))
    if isinstance(form, list | tuple | frozenset):
        return [k for x in form for k in _keywords(x)]
    return []


@pytest.mark.parametrize("text", [":k", "[:k]", "(:k)", "{:k 1}", "{1 :k}", "#{:k}",
                                  "[{:a [#{(:k)}]}]"])
def test_read_interns_keywords_at_every_depth(text):
    found = _keywords(edn.read(text))
    assert found
    assert all(type(k) is Keyword and k is keyword(k.name) for k in found)


def test_read_all_reads_every_top_level_form():
    assert edn.read_all('1 :a [2] "s"') == [1, keyword("a"), [2], "s"]


@pytest.mark.parametrize("text", ["[1 2", "{:a}", ")", '"abc', "#foo 1", "[:find ?e :where [?e"])
def test_read_of_bad_text_raises_edn_syntax_error_quoting_the_text(text):
    with pytest.raises(EdnSyntaxError, match=re.escape(text)) as info:
        edn.read(text)
    assert info.value.code is ErrorCode.EDN_SYNTAX
    assert info.value.form == text


def test_read_all_of_bad_text_raises_edn_syntax_error():
    with pytest.raises(EdnSyntaxError, match=re.escape("1 [2")):
        edn.read_all("1 [2")


def test_bad_text_longer_than_80_characters_is_quoted_as_an_excerpt():
    text = "[" + " ".join(["1"] * 100)
    with pytest.raises(EdnSyntaxError) as info:
        edn.read(text)
    assert str(info.value).endswith(": " + text[:77] + "...")


@pytest.mark.parametrize("text", ["#{[1 2]}", "{[1 2] :a}", "{{:a 1} 2}"])
def test_read_accepts_vectors_and_maps_as_set_elements_and_map_keys(text):
    edn.read(text)


# -- dumps and show ------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "form"), [
    case('[1 "Ivan"]', (1, "Ivan")),
    case("[1 [2 3]]", [1, (2, 3)]),
    case("[:a nil true 1.5]", (keyword("a"), None, True, 1.5)),
    case('"Ivan"', "Ivan"),
    case(":person/name", keyword("person/name")),
])
def test_dumps_prints_tuples_as_vectors(text, form):
    assert edn.dumps(form) == text


@pytest.mark.parametrize(("text", "form"), [
    case("(1 2)", (1, 2)),
    case("[1 (2 3)]", [1, (2, 3)]),
    case("(not [?e :a])", (Symbol("not"), [Symbol("?e"), keyword("a")])),
])
def test_show_keeps_lists_as_parentheses(text, form):
    assert edn.show(form) == text


def test_show_of_an_unprintable_value_falls_back_to_repr():
    value = object()
    assert edn.show(value) == repr(value)


@pytest.mark.parametrize(("text", "form"), [
    (r'[(re-find #"^I\d+" ?n)]', [(Symbol("re-find"), r"^I\d+", Symbol("?n"))]),
    (r'[#"a\"b" "#\"s" \" #"\\"]', ['a\\"b', '#"s', '"', "\\\\"]),  # strings, \" stay as read
    ('[#"x" ; #"comment"\n 1]', ["x", 1]),
], ids=str)
def test_regex_literals_read_as_their_pattern_in_queries(text: str, form: Any) -> None:
    """Clojure's #"..." keeps backslashes as written; EDN has no regex literal, so it is read
    only where asked (query text), as the pattern's string."""
    assert edn.read(text, regex_literals=True) == form


def test_regex_literal_is_not_edn() -> None:
    with pytest.raises(EdnSyntaxError):
        edn.read('[#"x"]')


def test_a_first_parse_waits_while_another_process_writes_the_parser_tables() -> None:
    """A process's first parse (at import) takes the machine's lock, so no process reads PLY's
    tables while another writes them: held here, a new process importing workers.edn waits
    (still running after 3 s, where it takes well under one), and parses once released."""
    script = "from workers import edn; print(edn.read('[1 :a]'))"
    with open(edn.TABLES_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                 text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=3)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0 and out.strip() == "[1, Keyword(a)]"
