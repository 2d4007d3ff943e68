"""EDN forms → query AST.  The grammar production sits above each parse function.

Parse functions raise :class:`QueryError` naming the form and where it stands (``:where``
clause 2, ``:find`` element 1, ...).  Forms of the Datalog language that deltalog does not
evaluate yet are refused with ``ErrorCode.QUERY_UNSUPPORTED`` and the form's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import edn_format
from edn_format import Symbol

from workers.datalog.ast import Blank, Constant, Pattern, Query, Term, Variable
from workers.edn import Keyword, intern, keyword, read
from workers.edn import show as _show
from workers.errors import ErrorCode, QueryError

FIND, IN, WHERE = keyword("find"), keyword("in"), keyword("where")
KNOWN_LATER = {keyword(k): f":{k}" for k in ("with", "keys", "strs", "syms", "rules",
                                               "timeout", "limit", "offset", "order-by")}
CLAUSE_NAMES = {"not": "negation (not ...)", "not-join": "negation (not-join ...)",
                "or": "disjunction (or ...)", "or-join": "disjunction (or-join ...)",
                "and": "(and ...)"}


def parse_query(query: Any) -> Query:
    """Parse EDN text or an already-read form (map or vector) into a :class:`Query`."""
    form = read(query) if isinstance(query, str) else intern(query)
    # query = {:find [find-elem+] :in [in-binding*]? :where [clause+]}
    #       | [:find find-elem+ (:in in-binding*)? :where clause+]
    sections = _sections(form)
    find = _parse_find(sections.get(FIND))
    inputs = _parse_inputs(sections.get(IN, [Symbol("$")]))
    where = _parse_where(sections.get(WHERE))
    return Query(find=find, where=where, inputs=inputs, source=query)


def _sections(form: Any) -> dict[Any, list[Any]]:
    if isinstance(form, Mapping):
        sections = {k: v for k, v in form.items()}
    elif isinstance(form, list):
        sections = _split_vector_form(form)
    else:
        raise QueryError(f"a query is a map {{:find [...] :where [...]}} or a vector "
                         f"[:find ... :where ...], got {_show(form)}", form=form)
    for key, value in sections.items():
        if key in KNOWN_LATER:
            raise QueryError(f"{KNOWN_LATER[key]} is not supported yet (in {_show(value)})",
                             code=ErrorCode.QUERY_UNSUPPORTED, form=value)
        if key not in (FIND, IN, WHERE):
            raise QueryError(f"unknown query section {_show(key)}; expected :find, :in, :where",
                             form=key)
        if not isinstance(value, list):
            raise QueryError(f"{_show(key)} takes a vector, got {_show(value)}", form=value)
    return sections


def _split_vector_form(form: list[Any]) -> dict[Any, list[Any]]:
    sections: dict[Any, list[Any]] = {}
    current = None
    for element in form:
        if isinstance(element, Keyword):
            if element in sections:
                raise QueryError(f"{_show(element)} appears twice in the query", form=element)
            current = sections[element] = []
        elif current is None:
            raise QueryError(f"a vector query starts with a keyword such as :find, got "
                             f"{_show(element)}", form=element)
        else:
            current.append(element)
    return sections


# find-spec = [ variable+ ]          (aggregates, pull and find-scalar/coll come later)
def _parse_find(elements: list[Any] | None) -> tuple[Variable, ...]:
    if not elements:
        raise QueryError(":find needs at least one variable", form=elements)
    found: list[Variable] = []
    for i, element in enumerate(elements, 1):
        variable = _parse_variable(element)
        if variable is None:
            raise _unsupported_find(element, i)
        if variable in found:
            raise QueryError(f":find element {i}: {variable} appears twice", form=element)
        found.append(variable)
    return tuple(found)


def _unsupported_find(element: Any, position: int) -> QueryError:
    if isinstance(element, tuple) and element and isinstance(element[0], Symbol):
        name = element[0].name
        what = "pull" if name == "pull" else f"aggregate ({name} ...)"
        return QueryError(f":find element {position}: {what} is not supported yet: "
                          f"{_show(element)}", code=ErrorCode.QUERY_UNSUPPORTED, form=element)
    if isinstance(element, list):
        what = "find-coll [?x ...]" if Symbol("...") in element else "find-tuple [?x ?y]"
        return QueryError(f":find element {position}: {what} is not supported yet: "
                          f"{_show(element)}", code=ErrorCode.QUERY_UNSUPPORTED, form=element)
    if isinstance(element, Symbol) and element.name in (".", "..."):
        return QueryError(f":find element {position}: find-scalar/find-coll {element.name!r} "
                          "is not supported yet", code=ErrorCode.QUERY_UNSUPPORTED, form=element)
    return QueryError(f":find element {position}: expected a variable, got {_show(element)}",
                      form=element)


# in-binding = src-var ('$') | variable           (tuple/coll/relation bindings, rules later)
def _parse_inputs(elements: list[Any]) -> tuple[Variable, ...]:
    inputs: list[Variable] = []
    for i, element in enumerate(elements, 1):
        if element == Symbol("$"):
            continue
        variable = _parse_variable(element)
        if variable in inputs:
            raise QueryError(f":in element {i}: {variable} appears twice", form=element)
        if variable is not None:
            inputs.append(variable)
        elif element == Symbol("%"):
            raise QueryError(f":in element {i}: rules (%) are not supported yet",
                             code=ErrorCode.QUERY_UNSUPPORTED, form=element)
        elif isinstance(element, list):
            raise QueryError(f":in element {i}: tuple/collection/relation binding "
                             f"{_show(element)} is not supported yet",
                             code=ErrorCode.QUERY_UNSUPPORTED, form=element)
        else:
            raise QueryError(f":in element {i}: expected $ or a variable, got {_show(element)}",
                             form=element)
    return tuple(inputs)


# where = [ clause+ ];  clause = data-pattern            (predicates, not, or, rules later)
def _parse_where(clauses: list[Any] | None) -> tuple[Pattern, ...]:
    if not clauses:
        raise QueryError(":where needs at least one clause", form=clauses)
    return tuple(_parse_clause(clause, i) for i, clause in enumerate(clauses, 1))


def _parse_clause(clause: Any, position: int) -> Pattern:
    where = f":where clause {position} {_show(clause)}"
    if isinstance(clause, tuple) and clause and _parse_variable(clause[0]) is not None \
            and clause[0].name.startswith("?"):
        raise QueryError(f"{where}: a data pattern is a vector [e a v], not a list", form=clause)
    if isinstance(clause, tuple) and clause and isinstance(clause[0], Symbol):
        name = clause[0].name
        what = CLAUSE_NAMES.get(name, f"rule call ({name} ...)")
        raise QueryError(f"{where}: {what} is not supported yet",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=clause)
    if not isinstance(clause, list):
        raise QueryError(f"{where}: expected a data pattern [e a v]", form=clause)
    if clause and isinstance(clause[0], tuple):
        what = "predicate" if len(clause) == 1 else "function binding"
        raise QueryError(f"{where}: {what} {_show(clause[0])} is not supported yet",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=clause)
    pattern = _parse_pattern(clause, where)
    if pattern is None:
        raise QueryError(f"{where}: a data pattern has 1 to 3 elements [e a v]", form=clause)
    return pattern


# data-pattern = [ src-var? (variable | constant | '_'){1,3} ]
def _parse_pattern(clause: list[Any], where: str) -> Pattern | None:
    elements = clause[1:] if clause and clause[0] == Symbol("$") else clause
    if len(elements) == 4:
        raise QueryError(f"{where}: the transaction position (4th element) is not supported",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=clause)
    if not 1 <= len(elements) <= 3:
        return None
    terms = [_parse_term(element, where) for element in elements]
    terms += [Blank()] * (3 - len(terms))
    return Pattern(terms[0], terms[1], terms[2], source=clause)


def _parse_term(element: Any, where: str) -> Term:
    if element == Symbol("_"):
        return Blank()
    variable = _parse_variable(element)
    if variable is not None:
        return variable
    if isinstance(element, Symbol):
        raise QueryError(f"{where}: {element.name} is not allowed in a data pattern "
                         "(only the default source $ is supported)", form=element)
    if element is None or isinstance(element, list | tuple | Mapping | frozenset):
        raise QueryError(f"{where}: {_show(element)} is not a valid pattern constant",
                         form=element)
    return Constant(element)


def _parse_variable(element: Any) -> Variable | None:
    """``?x`` or a plain symbol such as ``name`` (as XTDB accepts); not ``_``, ``$``, ``%``."""
    if not isinstance(element, Symbol) or isinstance(element, edn_format.Keyword):
        return None
    name = element.name
    if name in ("_", ".", "...") or name.startswith(("$", "%")):
        return None
    return Variable(name)
