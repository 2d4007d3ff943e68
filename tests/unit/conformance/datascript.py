"""Datascript's query tests as data, and the one way every case is checked.

A :class:`Case` is a fact from Datascript's suite (``test/datascript/test/<file>.cljc``):
the database as an EDN transaction deltalog accepts, the query text, its inputs (EDN text of
the arguments after the database) and the result as Datascript gives it (EDN text). Datascript
compares sets of vectors, vectors of values, scalars and maps; :func:`conforms` compares the
engine's result with it the same way (a relation is a multiset of rows, a collection a multiset
of values; numbers compare as Clojure's ``==``, booleans only with booleans).

Every case runs one-shot (``Engine.query``) and registered: the view at registration, then
the change stream integrated over a few transactions made from the case's own data (half of
its datoms retracted, a copy of each entity added, one entity retracted whole), must equal a
fresh evaluation after each — a new engine given the same transactions, and the independent
from-scratch oracle of :mod:`workers.testing`.

A case that shows a deliberate difference from Datascript carries ``differs`` (the reason,
listed in ``docs/semantics.md``) and is expected to fail; when deltalog refuses the form,
``refused`` names it and :func:`check_refusal` holds the refusal to ``query-unsupported``.
A module's cases are its ``CASES``; ``conftest.py`` hands them to its tests.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from edn_format.immutable_list import ImmutableList

from tests.property.pull_oracle import pulled_from_scratch
from workers import edn
from workers.engine import Engine
from workers.errors import ErrorCode, QueryError
from workers.zset import ZSet, add_into
from workers.zset.row import Row

Forms = list[list[Any]]
# Differences shared by several files' cases (docs/semantics.md, "Datascript's test suite").
FUNCTION_INPUT = ("functions passed as inputs: a query's inputs are data (EDN, Avro) and it "
                  "calls built-ins by name")
OTHER_SOURCE = ("a second database: deltalog queries its one database, and takes another source "
                "as a collection of tuples")
DB_ADD, DB_RETRACT_ENTITY = edn.keyword("db/add"), edn.keyword("db/retractEntity")
CARDINALITY, ONE = edn.keyword("db/cardinality"), edn.keyword("db.cardinality/one")
VALUE_TYPE, REF = edn.keyword("db/valueType"), edn.keyword("db.type/ref")
IS_COMPONENT = edn.keyword("db/isComponent")


@dataclass(frozen=True)
class Case:
    """One assertion of Datascript's suite: ``test`` names the source file and the test
    (``query.cljc test-joins``, plus its ``testing`` label where it has one)."""

    test: str
    db: Sequence[str]
    query: str
    expected: str = ""
    inputs: str = "[]"
    raises: tuple[ErrorCode | None, str] | None = None  # Datascript throws: code, message
    differs: str | None = None  # a deliberate difference: the case is expected to fail
    refused: str | None = None  # ... because deltalog refuses the form this names
    one_of: bool = False  # the result is any one element of ``expected`` ("Multiple results
    #                       get cut": a find-tuple or find-scalar over several rows)

    def arguments(self) -> list[Any]:
        return list(edn.read(self.inputs))


def params(cases: Iterable[Case]) -> list[Any]:
    """The cases as pytest parameters: readable ids, a strict xfail for each difference."""
    return [pytest.param(case, id=f"{case.test}: {case.query}",
                         marks=() if case.differs is None else
                         pytest.mark.xfail(strict=True, reason=case.differs))
            for case in cases]


def refusals(cases: Iterable[Case]) -> list[Any]:
    """The cases deltalog refuses, as parameters of :func:`check_refusal`."""
    return [pytest.param(case, id=f"{case.test}: {case.query}")
            for case in cases if case.refused is not None]


def loaded(transactions: Iterable[Any]) -> Engine:
    engine = Engine()
    for tx in transactions:
        engine.transact(tx)
    return engine


def check(case: Case) -> None:
    """The case's one-shot result, then its registered change stream against the oracle."""
    engine = loaded(case.db)
    if case.raises is not None:
        code, message = case.raises
        with pytest.raises(QueryError, match=re.escape(message)) as raised:
            engine.query(case.query, case.arguments())
        assert code is None or raised.value.code == code
        return
    expected, actual = edn.read(case.expected), engine.query(case.query, case.arguments())
    if case.one_of:
        assert any(conforms(e, actual) for e in expected)
    else:
        assert conforms(expected, actual)
    check_change_stream(case, engine)


def check_change_stream(case: Case, engine: Engine) -> None:
    """Registered on the case's database, then a few transactions later: the integrated
    change stream equals a fresh evaluation after each transaction."""
    history: list[Any] = list(case.db)
    view = engine.register("q", case.query, case.arguments())
    assert view == fresh(case, history)
    for tx in perturbations(engine):
        history.append(tx)
        add_into(view, engine.transact(tx).get("q", {}))
        assert view == fresh(case, history), f"after {edn.dumps(tx)}"
        assert view == from_scratch(case, list(engine.db.datoms()))


def fresh(case: Case, history: Sequence[Any]) -> ZSet[Row]:
    """The oracle: the query's rows evaluated from scratch on a new engine given the same
    transactions."""
    return loaded(history).register("q", case.query, case.arguments())


def from_scratch(case: Case, datoms: list[tuple[Any, Any, Any]]) -> ZSet[Row]:
    """The independent oracle (:mod:`workers.testing`, and a plain walk for pulls), which
    shares no code with the engine: the schema it needs is read from the datoms."""
    one = {e for e, a, v in datoms if (a, v) == (CARDINALITY, ONE)}
    refs = {e for e, a, v in datoms if (a, v) == (VALUE_TYPE, REF)}
    components = {e for e, a, v in datoms if a == IS_COMPONENT and v is True}
    return pulled_from_scratch(case.query, datoms, one, refs, case.arguments(), components)


def perturbations(engine: Engine) -> list[Forms]:
    """Transactions made from the database's own data datoms: retract every other one; add
    them back with a copy of every entity (its id + 100, or its name primed, and so are its
    values of unique attributes, which a copy may not share); retract the first entity
    whole."""
    datoms = sorted((d for d in engine.db.datoms() if not d[1].name.startswith("db/")),
                    key=repr)  # not the schema's
    if not datoms:
        return []
    half = [[edn.keyword("db/retract"), *d] for d in datoms[::2]]
    unique = engine.schema.unique_attributes()
    copies = [[DB_ADD, _copy(e), a, _copy(v) if a in unique else v] for e, a, v in datoms]
    restore = [[DB_ADD, *d] for d in datoms[::2]]
    return [half, restore + copies, [[DB_RETRACT_ENTITY, datoms[0][0]]]]


def _copy(entity: Any) -> Any:
    return entity + 100 if isinstance(entity, int) else f"{entity}'"


def check_refusal(case: Case) -> None:
    """A form deltalog decided against is refused with ``query-unsupported`` naming it."""
    assert case.refused is not None
    with pytest.raises(QueryError, match=re.escape(case.refused)) as raised:
        loaded(case.db).query(case.query, case.arguments())
    assert raised.value.code == ErrorCode.QUERY_UNSUPPORTED


def conforms(expected: Any, actual: Any) -> bool:
    """Whether the engine's result is the one Datascript gives: a set or vector of rows
    against a relation (a multiset), of values against a collection or a list of maps;
    anything else value against value."""
    if isinstance(actual, Mapping) and not _is_value_map(actual):
        actual = Counter({_canonical(row): weight for row, weight in actual.items()})
    elif isinstance(actual, list):
        actual = Counter(map(_canonical, actual))
    else:
        return _canonical(expected) == _canonical(actual)
    if isinstance(expected, frozenset | set | list | tuple | ImmutableList):
        return Counter(map(_canonical, expected)) == actual
    return False


def _is_value_map(result: Mapping[Any, Any]) -> bool:
    """A map as a value (a pulled map, a ``:keys`` tuple) rather than ``{row: weight}``."""
    return not all(isinstance(row, tuple) for row in result)


def _canonical(x: Any) -> Any:
    """``x`` comparable across EDN's and the engine's representations: vectors, lists and
    tuples alike, maps by their items, booleans apart from numbers."""
    if isinstance(x, Mapping):
        return ("map", frozenset((_canonical(k), _canonical(v)) for k, v in x.items()))
    if isinstance(x, list | tuple | ImmutableList):
        return ("vector", tuple(map(_canonical, x)))
    if isinstance(x, set | frozenset):
        return ("set", frozenset(map(_canonical, x)))
    if isinstance(x, bool):
        return ("boolean", x)
    return x
