"""The executor contract: behaviour every executor must show through the Engine, for every
strategy.  Test classes inherit :class:`ExecutorContract` and say which executor they run
(PySpark's parity-test mixins work the same way); the tests themselves are shared unchanged.

The first three cases are the changes (DESIGN §3) that the seeds' per-level reference code
loses: a delta reaches a deeper level while the shared prefix exists only in another
pattern's old state.
"""

from __future__ import annotations

import io
from typing import ClassVar

import pytest

from workers.edn import keyword
from workers.engine import Engine
from workers.plan import STRATEGIES
from workers.runtime import snapshot_format

AGE_SCHEMA = "[{:db/ident :age :db/cardinality :db.cardinality/one}]"
TRIANGLE = "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}"


class ExecutorContract:
    """Shared tests; a subclass sets ``executor`` and may override :meth:`make_engine`."""

    executor: ClassVar[str]

    def make_engine(self, strategy: str, request: pytest.FixtureRequest) -> Engine:
        return Engine(strategy=strategy, executor=self.executor)

    @pytest.fixture(params=STRATEGIES)
    def engine(self, request: pytest.FixtureRequest) -> Engine:
        return self.make_engine(request.param, request)

    def test_attribute_added_to_an_entity_that_has_the_other_one(self, engine: Engine) -> None:
        engine.register("q", "{:find [?n ?l] :where [[?e :name ?n] [?e :last-name ?l]]}")
        engine.transact('[[:db/add :ivan :name "Ivan"]]')
        assert engine.transact('[[:db/add :ivan :last-name "Ivanov"]]') == {
            "q": {("Ivan", "Ivanov"): 1}}

    def test_cardinality_one_update_retracts_old_row_and_adds_new(self, engine: Engine) -> None:
        engine.transact(AGE_SCHEMA)
        engine.register("q", "{:find [?n ?a] :where [[?e :name ?n] [?e :age ?a]]}")
        engine.transact('[{:db/id :ivan :name "Ivan" :age 30}]')
        assert engine.transact("[[:db/add :ivan :age 31]]") == {
            "q": {("Ivan", 30): -1, ("Ivan", 31): 1}}

    def test_closing_edge_of_a_triangle_emits_the_triangle(self, engine: Engine) -> None:
        engine.register("tri", TRIANGLE)
        engine.transact("[[:db/add 1 :g/to 2] [:db/add 1 :g/to 3]]")
        assert engine.transact("[[:db/add 2 :g/to 3]]") == {"tri": {(1, 2, 3): 1}}

    def test_rows_hold_interned_edn_keywords(self, engine: Engine) -> None:
        engine.register("q", "{:find [?e] :where [[?e :name _]]}")
        assert engine.transact('[[:db/add :ivan :name "Ivan"]]') == {
            "q": {(keyword("ivan"),): 1}}

    def test_row_leaves_only_with_its_last_derivation(self, engine: Engine) -> None:
        engine.register("q", "{:find [?a] :where [[?a :g/to ?b]]}")
        engine.transact("[[:db/add 1 :g/to 2] [:db/add 1 :g/to 3]]")
        assert engine.transact("[[:db/retract 1 :g/to 2]]") == {}
        assert engine.transact("[[:db/retract 1 :g/to 3]]") == {"q": {(1,): -1}}

    def test_register_on_a_populated_database_returns_its_result(self, engine: Engine) -> None:
        engine.transact("[[:db/add 1 :g/to 2] [:db/add 2 :g/to 3] [:db/add 1 :g/to 3] "
                        "[:db/add 3 :g/to 1]]")
        assert engine.register("tri", TRIANGLE) == {(1, 2, 3): 1}
        assert engine.query("{:find [?x] :where [[?x :g/to 1]]}") == {(3,): 1}
        engine.transact("[[:db/retract 1 :g/to 3]]")
        assert engine.result("tri") == {}

    def test_constants_blanks_and_repeated_variables(self, engine: Engine) -> None:
        engine.register("loop", "{:find [?x] :where [[?x :g/to ?x] [_ :tag 1]]}")
        engine.register("into2", "{:find [?a] :where [[?a :g/to 2]]}")
        changes = engine.transact("[[:db/add 1 :g/to 1] [:db/add 2 :g/to 2] [:db/add 5 :tag 1] "
                                  "[:db/add 3 :g/to 2]]")
        assert changes == {"loop": {(1,): 1, (2,): 1}, "into2": {(2,): 1, (3,): 1}}
        assert engine.transact("[[:db/retractEntity 5]]") == {"loop": {(1,): -1, (2,): -1}}

    def test_unregistered_query_stops_changing(self, engine: Engine) -> None:
        engine.register("q", "{:find [?a] :where [[?a :g/to ?b]]}")
        engine.unregister("q")
        assert engine.transact("[[:db/add 1 :g/to 2]]") == {}

    def test_restored_state_is_read_by_later_ticks(self, engine: Engine) -> None:
        engine.transact("[[:db/add 1 :g/to 2] [:db/add 2 :g/to 3]]")
        stored = io.BytesIO()
        snapshot_format.write(engine.state(), stored)
        state = snapshot_format.read(stored.getvalue())  # as a snapshot stores it
        engine.register("tri", TRIANGLE)
        engine.transact("[[:db/retract 2 :g/to 3] [:db/add 1 :g/to 4]]")
        engine.restore(state)
        assert engine.transact("[[:db/add 1 :g/to 3]]") == {"tri": {(1, 2, 3): 1}}
