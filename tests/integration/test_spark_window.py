"""Under ``executor=spark`` the driver holds no datoms: each tick's transactions are
normalised against the datoms of their entities, fetched from Spark's state by a job keyed by
entity (``StateWindow``).  The semantics are the local ones: a batch is the sum of its
transactions (the ``transact_many`` property, here against the fetched windows), and the
database the state holds is the local one."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property.strategies import SCHEMA_TX, churn_streams, tx_streams
from tests.property.test_batches import MAINTAINED
from tests.property.test_incremental_matches_recompute import QUERIES
from workers.edn import keyword
from workers.engine import Engine
from workers.errors import TransactionError
from workers.executors.spark import SparkSettings
from workers.zset import add_into

pytestmark = pytest.mark.spark
ADD, TO = keyword("db/add"), keyword("g/to")


def _engine(executor: str, settings: SparkSettings, bulk_datoms: int = 1000) -> Engine:
    engine = Engine(executor=executor, spark=settings, bulk_datoms=bulk_datoms)
    engine.transact(SCHEMA_TX)
    for i, query in enumerate(QUERIES[:2] + MAINTAINED[3:]):  # the pull reads the window too
        engine.register(f"q{i}", query)
    return engine


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=st.one_of(churn_streams, tx_streams),
       cuts=st.lists(st.integers(0, 12), max_size=2), bulk_datoms=st.sampled_from([0, 10**9]))
def test_a_batch_on_spark_is_the_sum_of_its_transactions(
        stream: list[list[Any]], cuts: list[int], bulk_datoms: int,
        spark_settings: SparkSettings) -> None:
    """Transactions one by one locally, and in batches on Spark (at once, ``bulk_datoms=0``,
    or one by one against the fetched window): the same changes, refusals and database."""
    local, spark = _engine("local", spark_settings), _engine("spark", spark_settings, bulk_datoms)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    for start, end in pairwise(bounds):
        expected: dict[str, dict[Any, int]] = {}
        expected_refused = []
        for tx_id, tx in enumerate(stream[start:end], start):
            try:
                for query, rows in local.transact(tx, tx_id=tx_id).items():
                    add_into(expected.setdefault(query, {}), rows)
            except TransactionError:
                expected_refused.append(tx_id)
        changes, refused = spark.transact_many(
            (tx, tx_id) for tx_id, tx in enumerate(stream[start:end], start))
        assert changes == {q: rows for q, rows in expected.items() if rows}
        assert [r.tx_id for r in refused] == expected_refused
    assert spark.datoms == local.datoms
    assert _datoms(spark) == _datoms(local)


def test_the_driver_holds_only_the_entities_of_a_tick_while_it_runs(
        spark_settings: SparkSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 edges from 200 entities; then one tick naming two entities: while it runs the
    driver's registry holds those entities' datoms, after it nothing; the state holds all
    of them (what a snapshot reads)."""
    spark, local = Engine(executor="spark", spark=spark_settings), Engine()
    load = [[ADD, a, TO, b] for a in range(200) for b in range(1000, 1010)]
    for engine in (spark, local):
        engine.transact(load)
        engine.register("out", "[:find ?a :where [?a :g/to 1000]]")
    window_sizes: list[int] = []
    applied = spark.dispatch.applied
    monkeypatch.setattr(spark.dispatch, "applied",
                        lambda: (window_sizes.append(len(spark.db)), applied())[1])
    tick = [[keyword("db/retractEntity"), 7], [ADD, 8, TO, 2000]]
    assert spark.transact(tick) == local.transact(tick) == {"out": {(7,): -1}}
    assert spark.datoms == local.datoms == 2000 - 10 + 1
    assert window_sizes == [11]  # entities 7 and 8, fetched for the tick, the delta applied
    assert len(spark.db) == 0
    assert _datoms(spark) == _datoms(local)
    assert spark.result("out") == local.result("out")


def _datoms(engine: Engine) -> set[tuple[Any, Any, Any]]:
    """The whole database, as a snapshot reads it."""
    state = engine.state()
    value = state.values.value
    return {(value(e), value(a), value(v)) for e, a, v in zip(*state.columns, strict=True)}
