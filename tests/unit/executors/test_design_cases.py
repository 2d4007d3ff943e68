"""The three changes (DESIGN §3) that the seeds' per-level reference code loses: each
strategy must emit them, because a delta reaches a deeper level while the shared prefix
exists only in another pattern's old state."""

from __future__ import annotations

import pytest

from workers.edn import keyword
from workers.engine import Engine
from workers.plan import STRATEGIES

AGE_SCHEMA = "[{:db/ident :age :db/cardinality :db.cardinality/one}]"


@pytest.fixture(params=STRATEGIES)
def engine(request: pytest.FixtureRequest) -> Engine:
    return Engine(strategy=request.param)


def test_attribute_added_to_an_entity_that_has_the_other_one(engine: Engine) -> None:
    engine.register("q", "{:find [?n ?l] :where [[?e :name ?n] [?e :last-name ?l]]}")
    engine.transact('[[:db/add :ivan :name "Ivan"]]')
    assert engine.transact('[[:db/add :ivan :last-name "Ivanov"]]') == {
        "q": {("Ivan", "Ivanov"): 1}}


def test_cardinality_one_update_retracts_old_row_and_adds_new(engine: Engine) -> None:
    engine.transact(AGE_SCHEMA)
    engine.register("q", "{:find [?n ?a] :where [[?e :name ?n] [?e :age ?a]]}")
    engine.transact('[{:db/id :ivan :name "Ivan" :age 30}]')
    assert engine.transact("[[:db/add :ivan :age 31]]") == {
        "q": {("Ivan", 30): -1, ("Ivan", 31): 1}}


def test_closing_edge_of_a_triangle_emits_the_triangle(engine: Engine) -> None:
    engine.register("tri", "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] "
                           "[?b :g/to ?c]]}")
    engine.transact("[[:db/add 1 :g/to 2] [:db/add 1 :g/to 3]]")
    assert engine.transact("[[:db/add 2 :g/to 3]]") == {"tri": {(1, 2, 3): 1}}


def test_rows_hold_interned_edn_keywords(engine: Engine) -> None:
    engine.register("q", "{:find [?e] :where [[?e :name _]]}")
    assert engine.transact('[[:db/add :ivan :name "Ivan"]]') == {"q": {(keyword("ivan"),): 1}}
