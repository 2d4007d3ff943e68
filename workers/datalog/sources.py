"""Collections as data sources: ``:in $ $emails`` and ``[$emails ?name ?email]``.

Datomic and Datascript take any collection of tuples as a source: a data pattern prefixed
with its name matches the tuples position by position — a constant must equal the tuple's
value there (of one kind: ``1``, ``1.0`` and ``true`` are three values), a variable binds
it, a variable named twice needs equal values, and a tuple longer than the pattern matches
on its first positions.  A registered query's inputs are constants, so such a pattern is the
constant relation of the tuples it matches: parsed as a ``ground`` clause over a
:class:`SourceMatch` (:func:`source_pattern`), made the relation of its variables' values
when the inputs are bound (:func:`bind_sources`).

The database itself is ``$``; a query that names it otherwise (``:in $db ?e``) is given one
input fewer than its ``:in`` names after ``$``, and its first source is then the database
(:func:`database_source`): its patterns are ordinary data patterns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from workers.datalog.ast import (
    BindRel,
    Blank,
    Clause,
    Constant,
    FnBinding,
    InBinding,
    InSource,
    Not,
    Or,
    Pattern,
    Term,
    Variable,
    variables_of,
    walk,
)
from workers.edn import show
from workers.errors import ErrorCode, QueryError
from workers.zset.row import Row, same


@dataclass(frozen=True, slots=True)
class SourceMatch:
    """A data pattern on the collection source ``source``, until its tuples are known."""

    source: str
    terms: tuple[Term, ...]


def source_pattern(source: str, terms: tuple[Term, ...], form: Any) -> FnBinding:
    """``[$name term+]``: the tuples of ``$name`` it matches, bound to its variables (a
    pattern without variables is a test: one row of ``_`` when some tuple matches)."""
    variables = variables_of(terms)
    return FnBinding("ground", (Constant(SourceMatch(source, terms)),),
                     BindRel(variables or (Blank(),)), source=form)


def database_source(bindings: Sequence[InBinding], inputs: Sequence[Any]) -> str | None:
    """The name the query gives the database, when not ``$``: its first binding, a source,
    for which no input is given (Datascript's ``(d/q '[:in $db ?e ...] db 1)``)."""
    if len(inputs) == len(bindings) - 1 and bindings and isinstance(bindings[0], InSource):
        return bindings[0].name
    return None


def bind_sources(clauses: tuple[Clause, ...], sources: Mapping[str, Any],
                 database: str | None, substitute: Callable[[Term], Term],
                 scalar: Callable[[Variable, Any], Any]) -> tuple[Clause, ...]:
    """``clauses`` with each pattern on a source made the constant relation it matches (on
    ``database``, a data pattern); ``substitute`` gives an ``:in`` scalar's constant,
    ``scalar`` checks and freezes a value a variable binds."""

    def bound(clause: Clause) -> Clause:
        if isinstance(clause, Not):
            return replace(clause, clauses=tuple(map(bound, clause.clauses)))
        if isinstance(clause, Or):
            return replace(clause, branches=tuple(tuple(map(bound, b)) for b in clause.branches))
        if (written := _match_of(clause)) is None:
            return clause
        match = SourceMatch(written.source, tuple(map(substitute, written.terms)))
        if match.source == database:
            return _data_pattern(match, clause.source)
        if match.source not in sources:
            raise QueryError(f"{show(clause.source)}: {match.source} is not a source of the "
                             f":in clause", code=ErrorCode.QUERY_INPUTS, form=clause.source)
        rows = _matching(match.terms, sources[match.source], match.source, scalar)
        return FnBinding("ground", (Constant(rows),),
                         BindRel(variables_of(match.terms) or (Blank(),)), source=clause.source)

    return tuple(map(bound, clauses))


def unbound_source(clauses: tuple[Clause, ...]) -> Clause | None:
    """A pattern on a source left after binding (in a rule's body, which sees ``$`` only)."""
    return next((clause for clause, _ in _source_patterns(clauses)), None)


def database_variables(clauses: tuple[Clause, ...], database: str | None) -> set[Variable]:
    """The variables of the patterns on ``database``: data patterns match them."""
    return {v for _, match in _source_patterns(clauses) if match.source == database
            for v in variables_of(match.terms)}


def _source_patterns(clauses: tuple[Clause, ...]) -> Iterator[tuple[Clause, SourceMatch]]:
    for clause in walk(clauses):
        if (match := _match_of(clause)) is not None:
            yield clause, match


def _match_of(clause: Clause) -> SourceMatch | None:
    """The pattern on a source that ``clause`` is, if it is one (:func:`source_pattern`)."""
    if (isinstance(clause, FnBinding) and clause.args and isinstance(clause.args[0], Constant)
            and isinstance(match := clause.args[0].value, SourceMatch)):
        return match
    return None


def _data_pattern(match: SourceMatch, form: Any) -> Pattern:
    if not 1 <= len(match.terms) <= 3:
        raise QueryError(f"{show(form)}: a data pattern on the database has 1 to 3 elements "
                         "[e a v] (the transaction position is not supported)",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=form)
    e, a, v = (*match.terms, Blank(), Blank())[:3]
    return Pattern(e, a, v, source=form)


def _matching(terms: tuple[Term, ...], tuples: Any, name: str,
              scalar: Callable[[Variable, Any], Any]) -> tuple[tuple[Any, ...], ...]:
    """The values of ``terms``' variables in each tuple of ``tuples`` that matches them,
    each distinct row once (one row of ``True`` when there are no variables)."""
    if not isinstance(tuples, list | tuple | set | frozenset):
        raise QueryError(f"source {name} must be a collection of tuples, got {show(tuples)}",
                         code=ErrorCode.QUERY_INPUTS, form=tuples)
    variables = variables_of(terms)
    rows: dict[Any, tuple[Any, ...]] = {}
    for item in tuples:
        if not isinstance(item, list | tuple) or len(item) < len(terms):
            continue
        values: dict[Variable, Any] = {}
        if all(_matches(term, value, values) for term, value in zip(terms, item, strict=False)):
            row = tuple(scalar(v, values[v]) for v in variables) or (True,)
            rows.setdefault(Row(row), row)
    return tuple(rows.values())


def _matches(term: Term, value: Any, values: dict[Variable, Any]) -> bool:
    if isinstance(term, Constant):
        return same(term.value, value)
    if isinstance(term, Variable):
        if term in values:
            return same(values[term], value)
        values[term] = value
    return True
