"""Datalog features on Spark: the derived relations' join programs run as Spark SQL, and
every tick's changes equal the local executor's and integrate to the from-scratch oracle."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_spark_parity import random_stream
from tests.property.strategies import SCHEMA_TX, reference_db
from tests.property.test_datalog_features import FEATURES
from workers.engine import Engine
from workers.errors import TransactionError
from workers.executors.spark import SparkSettings
from workers.testing import evaluate_from_scratch
from workers.zset import add_into

pytestmark = pytest.mark.spark
CASES = [pytest.param(query, inputs, id=name) for name, query, inputs in FEATURES]


@pytest.mark.parametrize(("query", "inputs"), CASES)
def test_spark_keeps_the_feature_like_the_local_executor(
        query: str, inputs: list[Any], spark_settings: SparkSettings) -> None:
    local = Engine()
    spark = Engine(executor="spark", spark=spark_settings)
    reference = reference_db()
    views = []
    for engine in (local, spark):
        engine.transact(SCHEMA_TX)
        views.append(engine.register("q", query, inputs))
    assert views[0] == views[1]
    for tick, tx in enumerate(random_stream(len(query), transactions=5, ops=4)):
        accepted = reference.transact(tx)
        changes = []
        for engine in (local, spark):
            try:
                changes.append(engine.transact(tx).get("q", {}))
            except TransactionError:
                changes.append(None)
        assert changes[0] == changes[1], f"tick {tick}: {tx}"
        assert (changes[0] is not None) == accepted
        add_into(views[1], changes[1] or {})
        assert views[1] == evaluate_from_scratch(query, reference.datoms, inputs), tick
    assert spark.dispatch.last == "spark"
    assert spark.dispatch.spark is not None
    assert spark.dispatch.spark.jobs.last.jobs > 0  # the last join really ran Spark jobs
