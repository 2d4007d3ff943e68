"""workers.datalog.parser: malformed queries (QUERY_SHAPE) and forms not evaluated yet
(QUERY_UNSUPPORTED) are refused with a message that says where."""

import re
from typing import Any

import pytest

from workers.datalog import compile_query, parse_query
from workers.errors import EdnSyntaxError, ErrorCode, QueryError


def row(text: str, message: str) -> Any:
    """A table row whose test id is the query's EDN text."""
    return pytest.param(text, message, id=text)


@pytest.mark.parametrize(("text", "message"), [
    row("[:find ?e :where []]", ":where clause 1 []: a data pattern has 1 to 3 elements [e a v]"),
    row("[:find ?e :where [$]]", ":where clause 1 [$]: a data pattern has 1 to 3 elements"),
    row("[:find ?e :where [?e :a] ?e]", ":where clause 2 ?e: expected a data pattern [e a v]"),
    row('[:find ?e :where [?e :a] "clause"]', ':where clause 2 "clause": expected a data pattern'),
    row("[:find ?e :where [?e :a #{1}]]", ":where clause 1 [?e :a #{1}]: #{1} is not a valid"),
    row("[:find ?e :in $ :x :where [?e :a]]", "unknown query section :x"),
    row("[:find ?e :select ?e :where [?e :a]]",
        "unknown query section :select; expected :find, :with, :in, :where, :rules"),
    row("[:where [?e :a]]", ":find needs at least one variable"),
    row("[:find :where [?e :a]]", ":find needs at least one variable"),
    row('[:find "e" :where [?e :a]]',
        ':find element 1: expected a variable or an aggregate, got "e"'),
    row("[:find (count) :where [?e :a]]", ":find element 1: (count ?x) takes one variable"),
    row("[:find (count 2 ?e) :where [?e :a]]", ":find element 1: (count ?x) takes one variable"),
    row("[:find (min -1 ?e) :where [?e :a]]",
        ":find element 1: (min n ?x) or (min ?x) takes one variable"),
    row("[:find (max 2 ?e ?x) :where [?e :a ?x]]", "(max n ?x) or (max ?x) takes one variable"),
    row("[:find ?e :where [?e :a] [(get-some $ ?e) ?v]]",
        "expected [(get-some $ ?e :attr+) [?attr ?v]]"),
    row("[:find ?e :where [?e :a] (and [?e :b])]",
        ":where clause 2 (and [?e :b]): (and ...) is only allowed as a branch of or/or-join"),
    row("[:find ?e :where (not-join ?e [?e :b])]",
        "not-join starts with a vector of variables, got ?e"),
    row("[:find ?e :where (or)]", ":where clause 1 (or): (or ...) needs at least one branch"),
    row("[:find ?e :where [?e :a ?v] [(str ?v) ?s ?t]]",
        "a function binding is [(fn arg*) binding]"),
    row("[:find ?e :where [?e :a ?v] [(str ?v) [?s []]]]", "[] is not a binding form"),
    row("[:find ?e :where [?e :a ?v] [(str ?v) [[]]]]", "[] is not a binding form"),
    row("[:find ?e . ?a :where [?e :a ?a]]", ":find element 2: . is a find specification"),
    row("[:find ?e [?a ...] :where [?e :a ?a]]",
        ":find element 2: [?a ...] is a find specification, allowed only as the whole :find"),
    row("[:find [?e ...] :keys e :where [?e :a]]", ":keys names the columns of a relation or a "
                                                   "tuple, not of a find-coll"),
    row("[:find ?e . :strs e :where [?e :a]]", "not of a find-scalar"),
    # Datomic and Datascript refuse a nil default ("get-else: nil default value is not supported")
    row("[:find ?e ?a :where [?e :name] [(get-else $ ?e :age nil) ?a]]",
        "get-else takes a non-nil default"),
    row("[:find ?e :keys a b :where [?e :a]]", ":keys names 2 key(s) for 1 :find element(s)"),
    row("{:find [?e] :rules [[r ?e]] :where [[?e :a]]}",
        "rule 1 [r ?e]: a rule is [(name ?var ...) clause+]"),
    row("[:find ?e ?e :where [?e :a]]", ":find element 2: ?e appears twice"),
    # Datascript's parser (parser_query.cljc) refuses both
    row("[:find ?e :with ?e :where [?e :a]]",
        ":find and :with should not use same variables: [?e]"),
    row("[:find ?e :in $ ?x ?x :where [?e :a ?x]]",
        ":in element 3: Vars used in :in should be distinct, ?x appears twice"),
    row("[:find ?e :where [?e :a] :find ?e]", ":find appears twice in the query"),
    row("[?e :find ?e :where [?e :a]]", "a vector query starts with a keyword such as :find"),
    row("{:find ?e :where [[?e :a]]}", ":find takes a vector, got ?e"),
    row('"query"', "a query is a map {:find [...] :where [...]} or a vector [:find ..."),
])
def test_malformed_query_is_refused_with_query_shape(text, message):
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        parse_query(text)
    assert info.value.code is ErrorCode.QUERY_SHAPE


@pytest.mark.parametrize(("text", "message"), [
    row("[:find ?e :where [?e :age ?a] [(eval ?a)]]",
        ":where clause 2 [(eval ?a)]: Unknown predicate 'eval in [(eval ?a)]; deltalog "
        "evaluates only built-in predicates"),
    row("[:find ?e :where [?e :age ?a] [(slurp ?a) ?b]]",
        "Unknown function 'slurp in [(slurp ?a) ?b]"),
    row("[:find ?e :where [?e :age ?a] [(inc (inc ?a)) ?b]]",
        "nested calls such as (inc ?a) are not supported"),
    row("[:find ?e :where [?e :a] [(fulltext $ :a \"x\") [[?e]]]]", "fulltext is not supported"),
    row("[:find ?e :where ($db adult ?e)]", "a source before a rule call is not supported"),
    row("[:find (percentile ?e) :where [?e :a]]",
        ":find element 1: aggregate (percentile ...) is not supported: (percentile ?e); "
        "supported: count, count-distinct, sum, min, max, avg, median, variance, stddev, "
        "distinct"),
    row("[:find (sample 2 ?e) :where [?e :a]]",
        ":find element 1: aggregate (sample ...) is not supported: it is not deterministic"),
    row("[:find (rand ?e) :where [?e :a]]", "aggregate (rand ...) is not supported: it is not "
                                            "deterministic"),
    row("[:find ?e :where [?e :a ?v] [(rand-int ?v) ?r]]",
        "rand-int is not supported: it is not deterministic"),
    row("[:find ?e :where [?e :a ?v] [(rand) ?r]]", "rand is not supported: it is not "
                                                    "deterministic"),
    row("[:find ?e :limit 10 :where [?e :a]]", ":limit is not supported"),
    row("[:find ?e :where [?e :a ?v ?tx]]",
        ":where clause 1 [?e :a ?v ?tx]: the transaction position (4th element) is not supported"),
    row("[:find ?e :where [$ ?e :a ?v ?tx]]", ":where clause 1 [$ ?e :a ?v ?tx]: the transaction"),
    row("[:find ?e :where [?e :a] [?e :a ?v ?t ?op]]",
        ":where clause 2 [?e :a ?v ?t ?op]: the transaction position (4th element) is not "
        "supported nor the added flag (5th)"),
    row("[:find ?e :where [?e :a [1 2]]]", ":where clause 1 [?e :a [1 2]]: [1 2] in a data "
                                          "pattern (a tuple value) is not supported; a lookup "
                                          "ref is [attribute value]"),
    row("[:find ?e :where [?e $db :a]]", ":where clause 1 [?e $db :a]: $db is not allowed in a "
                                         "data pattern (only the default source $ is supported)"),
    row("[:find ?e :where [?e :a nil]]",
        ":where clause 1 [?e :a nil]: nil in a data pattern is not supported"),
    row("[:find ?x :where [?e :a] [(identity $) ?x]]",
        "a database ($) as a function argument is not supported"),
])
def test_form_deltalog_does_not_evaluate_is_refused_with_query_unsupported_naming_it(text, message):
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        parse_query(text)
    assert info.value.code is ErrorCode.QUERY_UNSUPPORTED


@pytest.mark.parametrize("text", ["[:find ?e :where]", "{:find [?e] :where []}", "[:find ?e]"],
                         ids=lambda text: text)
def test_a_query_without_where_parses_and_is_unsafe_when_nothing_binds_its_variables(text):
    """Datomic and Datascript accept a query with no :where (its :in bindings alone); here
    nothing binds ?e, so the check refuses it — as unsafe, not as malformed."""
    assert parse_query(text).where == ()
    with pytest.raises(QueryError, match=re.escape("unsafe query: :find ?e")) as info:
        compile_query(text)
    assert info.value.code is ErrorCode.QUERY_UNSAFE


@pytest.mark.parametrize("text", ["[:find ?e :where [?e :a", "{:find [?e] :where}"])
def test_unparsable_query_text_raises_edn_syntax_error(text):
    with pytest.raises(EdnSyntaxError, match=re.escape(text)) as info:
        parse_query(text)
    assert info.value.code is ErrorCode.EDN_SYNTAX
