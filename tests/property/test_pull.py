"""``pull`` kept live: after every transaction of a random stream (adds, retracts,
retractEntity, cardinality-one updates), the integrated change stream equals the
from-scratch oracle (:mod:`tests.property.pull_oracle`), row at a time and vectorised."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings

from tests.property.pull_oracle import pulled_from_scratch
from tests.property.strategies import (
    ADD,
    AGE,
    CARDINALITY_ONE,
    NAME,
    RETRACT,
    RETRACT_ENTITY,
    SCHEMA_TX,
    TAG,
    TO,
    reference_db,
    tx_streams,
)
from tests.property.test_datalog_features import check_registered_midstream
from workers.engine import Engine
from workers.errors import TransactionError
from workers.zset import add_into

QUERIES: list[tuple[str, str, list[Any]]] = [
    ("wildcard", "[:find (pull ?e [*]) :where [?e :name]]", []),
    ("attributes with limit", "[:find ?e (pull ?e [:name :age (limit :tag 1)]) "
                              ":where [?e :g/to]]", []),
    ("nested", "[:find (pull ?e [:name {:g/to [:name :tag]}]) :where [?e :tag]]", []),
    ("two levels", "[:find ?e (pull ?e [{:g/to [:age {:g/to [:name]}]}]) :where [?e :name]]",
     []),
    ("reverse", "[:find ?e (pull ?e [:db/id [:g/_to :as :in] {:g/_to [:age]}]) "
                ":where [?e :tag]]", []),
    ("wildcard with nesting", "[:find ?a (pull ?b [* {:g/to [:name]}]) :where [?a :g/to ?b]]",
     []),
    ("defaults and as", '[:find (pull ?e [[:age :default 0] [:name :as "n"]]) '
                        ':where [?e :g/to ?x]]', []),
    ("two pulls", "[:find (pull ?a [:name]) (pull ?b [:tag :g/_to]) :where [?a :g/to ?b]]",
     []),
    ("with aggregates", "[:find ?e (pull ?e [:name]) (min ?t) (count ?t) :where [?e :tag ?t]]",
     []),
    ("pattern input", "[:find (pull ?e ?p) :in $ ?p :where [?e :name]]",
     ["[:name {:g/_to [:age (default :tag 9)]}]"]),
    ("with, a bag", "[:find (pull ?e [:name]) :with ?t :where [?e :tag ?t]]", []),
    ("input entities", "[:find ?e (pull ?e [* {:g/to [:name]}]) :in $ [?e ...]]", [[1, 2, 5]]),
    ("input entity", "[:find (pull ?e [:name :g/_to]) :in $ ?e :where [?e :g/to ?x]]", [2]),
    ("recursive", "[:find ?e (pull ?e [:name {:g/to ...}]) :where [?e :tag]]", []),
    ("recursive, limited, reverse and nested",
     "[:find (pull ?e [:db/id {:g/_to 2} {:g/to [:age {:g/to 1}]}]) :where [?e :name]]", []),
]


def replay(query: str, inputs: list[Any], stream: list[list[Any]]) -> None:
    reference = reference_db()
    engines = {"row": Engine(), "vector": Engine(vector_datoms=0)}
    views = {}
    for name, engine in engines.items():
        engine.transact(SCHEMA_TX)
        views[name] = engine.register("q", query, inputs)
    for tx in stream:
        accepted = reference.transact(tx)
        changes = {}
        for name, engine in engines.items():
            try:
                changes[name] = engine.transact(tx).get("q", {})
            except TransactionError:
                assert not accepted, tx
                changes[name] = {}
            add_into(views[name], changes[name])
        expected = pulled_from_scratch(query, reference.datoms, CARDINALITY_ONE, (), inputs)
        assert changes["vector"] == changes["row"], tx
        assert views["row"] == expected, tx
    assert engines["row"].result("q") == views["row"]


@pytest.mark.parametrize(("query", "inputs"), [pytest.param(q, i, id=name)
                                               for name, q, i in QUERIES])
@settings(max_examples=60)
@given(stream=tx_streams)
@example(stream=[[[ADD, 1, TO, 2], [ADD, 2, NAME, "Ivan"], [ADD, 1, NAME, "x"],
                  [ADD, 1, TAG, 1]], [[ADD, 2, NAME, "Petr"]], [[RETRACT, 1, TO, 2]],
                 [[ADD, 1, TO, 2], [ADD, 2, AGE, 30]], [[RETRACT_ENTITY, 2]]])
def test_pull_matches_recompute(query: str, inputs: list[Any],
                                stream: list[list[Any]]) -> None:
    replay(query, inputs, stream)


@pytest.mark.parametrize(("query", "inputs"), [pytest.param(q, i, id=name)
                                               for name, q, i in QUERIES[::2]])
@settings(max_examples=25)
@given(before=tx_streams, after=tx_streams)
def test_registering_on_a_populated_db_starts_from_the_current_pulls(
        query: str, inputs: list[Any], before: list[list[Any]],
        after: list[list[Any]]) -> None:
    check_registered_midstream(
        query, inputs, before, after,
        lambda datoms: pulled_from_scratch(query, datoms, CARDINALITY_ONE, (), inputs))
