"""``pull`` on Spark: the query runs on Spark, the maps are read in the driver from the
engine's database; every tick's changes equal the local executor's and integrate to the
from-scratch oracle."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_spark_parity import random_stream
from tests.property.pull_oracle import pulled_from_scratch
from tests.property.strategies import CARDINALITY_ONE, SCHEMA_TX, reference_db
from tests.property.test_pull import QUERIES
from workers.engine import Engine
from workers.errors import TransactionError
from workers.executors.spark import SparkSettings
from workers.zset import add_into

pytestmark = pytest.mark.spark
# Every pull query: a small tick reads what its pulls read in its step's job (one job),
# unless the pull's input is aggregated or projected (then after the step).
CASES = [pytest.param(query, inputs, id=name) for name, query, inputs in QUERIES]


@pytest.mark.parametrize(("query", "inputs"), CASES)
def test_spark_keeps_pulled_rows_like_the_local_executor(
        query: str, inputs: list[Any], spark_settings: SparkSettings) -> None:
    local = Engine()
    spark = Engine(executor="spark", spark=spark_settings)
    reference = reference_db()
    for engine in (local, spark):
        engine.transact(SCHEMA_TX)
    # The view starts from the registration's result: entities given as inputs are pulled
    # before any datom names them.
    view: dict[Any, int] = spark.register("q", query, inputs)
    assert local.register("q", query, inputs) == view
    for tick, tx in enumerate(random_stream(len(query), transactions=6, ops=4)):
        reference.transact(tx)
        changes = []
        for engine in (local, spark):
            try:
                changes.append(engine.transact(tx).get("q", {}))
            except TransactionError:
                changes.append({})
        assert changes[0] == changes[1], f"tick {tick}: {tx}"
        add_into(view, changes[1])
        assert view == pulled_from_scratch(query, reference.datoms, CARDINALITY_ONE, (),
                                           inputs), f"tick {tick}: {tx}"
    assert spark.dispatch.last == "spark"
    assert spark.result("q") == view
