"""Datomic-style transactions against Datascript: random streams of entity maps with tempids,
upserts by a unique identity, nested component maps, lookup refs, retractions and
retractEntity.  After each transaction both refuse it or both take it, and the registered
queries — which name entities by their values, as entity ids differ between the two —
integrate to Datascript's results.  Where Datomic's rules and Datascript's part, deltalog
follows Datomic: the streams leave those cases out (a conflict of two values in one
transaction, a lookup ref to an entity the transaction creates) or allow the one that leaves
both databases as they were (:func:`_retracts_no_entity`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.differential.peer import Datascript, row_of
from workers import edn
from workers.engine import Engine
from workers.errors import TransactionError
from workers.zset import add_into

SCHEMA = {"email": {":db/unique": ":db.unique/identity"},
          "name": {":db/cardinality": ":db.cardinality/one"},
          "friend": {":db/valueType": ":db.type/ref", ":db/cardinality": ":db.cardinality/many"},
          "part": {":db/valueType": ":db.type/ref", ":db/cardinality": ":db.cardinality/many",
                   ":db/isComponent": True}}
DELTALOG_SCHEMA = """[{:db/ident :email :db/unique :db.unique/identity
                       :db/cardinality :db.cardinality/one}
                      {:db/ident :name :db/cardinality :db.cardinality/one}
                      {:db/ident :friend :db/valueType :db.type/ref
                       :db/cardinality :db.cardinality/many}
                      {:db/ident :part :db/valueType :db.type/ref :db/isComponent true
                       :db/cardinality :db.cardinality/many}]"""
QUERIES = [
    "[:find ?m ?n :where [?e :email ?m] [?e :name ?n]]",
    "[:find ?m ?f :where [?e :email ?m] [?e :friend ?x] [?x :email ?f]]",
    "[:find ?m ?p :where [?e :email ?m] [?e :part ?c] [?c :name ?p]]",
    "[:find (count ?e) :where [?e :name]]",
    "[:find ?n :where [?e :name ?n] (not [?e :email])]",
    "[:find (count ?c) :where [_ :part ?c]]",
    "[:find ?m :where [?e :email ?m] (not [?e :name])]",
]
EMAILS, NAMES = st.sampled_from(["a", "b", "c"]), st.sampled_from(["x", "y", "z"])

# An op, neutrally: ("map", tempid, email, name | None, friend email | None, part names),
# ("add name", email, name), ("retract name", email, name), ("befriend", email, email),
# ("retract entity", email).  Entities are named by tempids and lookup refs only.
ops = st.one_of(
    st.tuples(st.just("add name"), EMAILS, NAMES),
    st.tuples(st.just("retract name"), EMAILS, NAMES),
    st.tuples(st.just("befriend"), EMAILS, EMAILS),
    st.tuples(st.just("retract entity"), EMAILS),
)
maps = st.builds(lambda email, name, friend, parts: ("map", f"t-{email}", email, name, friend,
                                                     parts),
                 EMAILS, st.none() | NAMES, st.none() | EMAILS,
                 st.lists(NAMES, max_size=2, unique=True))
# A transaction of entity maps, or of one other op (a retraction of an entity no lookup ref
# names is a difference, below, only where it is the whole transaction).


@st.composite
def map_transactions(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """Entity maps of distinct emails (two values of a cardinality-one attribute for one
    entity are a conflict Datomic refuses and Datascript resolves by order), whose friends
    are looked up among the other emails (a lookup ref to an entity the transaction creates
    is another difference)."""
    ops = draw(st.lists(maps, min_size=1, max_size=3, unique_by=lambda op: op[2]))
    created = {op[2] for op in ops}
    return [(*op[:4], op[4] if op[4] not in created else None, op[5]) for op in ops]


streams = st.lists(map_transactions() | st.lists(ops, min_size=1, max_size=1),
                   min_size=1, max_size=5)


def js(op: tuple[Any, ...]) -> Any:
    """An op as Datascript's JavaScript API takes it."""
    kind, *args = op
    if kind == "map":
        tempid, email, name, friend, parts = args
        form: dict[str, Any] = {":db/id": tempid, "email": email}
        if name is not None:
            form["name"] = name
        if friend is not None:
            form["friend"] = ["email", friend]
        if parts:
            form["part"] = [{"name": part} for part in parts]
        return form
    if kind == "retract entity":
        return [":db/retractEntity", ["email", args[0]]]
    attribute = "friend" if kind == "befriend" else "name"
    value = ["email", args[1]] if kind == "befriend" else args[1]
    return [":db/retract" if kind == "retract name" else ":db/add", ["email", args[0]],
            attribute, value]


def forms(op: tuple[Any, ...]) -> Any:
    """The same op as deltalog's forms."""
    def keyed(value: Any) -> Any:
        if isinstance(value, dict):
            return {edn.keyword(k.lstrip(":")): keyed(v) for k, v in value.items()}
        if isinstance(value, list) and value and value[0] == "email":
            return [edn.keyword("email"), value[1]]  # a lookup ref
        if isinstance(value, list):
            return [keyed(v) for v in value]
        return value

    form = keyed(js(op))
    if isinstance(form, list):
        return [edn.keyword(form[0].lstrip(":")), *form[1:2],
                *([edn.keyword(form[2])] if len(form) > 2 else []), *form[3:]]
    return form


@pytest.fixture(scope="module")
def datascript() -> Iterator[Datascript]:
    peer = Datascript()
    yield peer
    peer.close()


@pytest.mark.parametrize("query", QUERIES)
@settings(max_examples=40, deadline=None)
@given(stream=streams)
def test_transactions_are_taken_as_datascript_takes_them(
        datascript: Datascript, query: str, stream: list[list[tuple[Any, ...]]]) -> None:
    steps = datascript.steps(SCHEMA, [[js(op) for op in tx] for tx in stream], query)
    engine = Engine()
    engine.transact(edn.read(DELTALOG_SCHEMA))
    view = engine.register("q", query)
    for tx, step in zip(stream, steps, strict=True):
        try:
            add_into(view, engine.transact([forms(op) for op in tx]).get("q", {}))
            refusal = None
        except TransactionError as error:
            refusal = str(error)
        if refusal is None or step.refused is not None or not _retracts_no_entity(tx, refusal):
            assert (refusal is None) == (step.refused is None), (tx, refusal, step.refused)
        assert step.rows is not None, step.error
        assert {row_of(row) for row, weight in view.items() if weight} == step.rows, tx


def _retracts_no_entity(tx: list[tuple[Any, ...]], refusal: str) -> bool:
    """A transaction of one retraction whose lookup ref names no entity: Datomic refuses it
    (deltalog does), Datascript retracts nothing — the database stays as it was in both."""
    return (len(tx) == 1 and tx[0][0] in ("retract name", "retract entity")
            and "names no entity" in refusal)
