"""Datalog features on Spark: the derived relations' join programs run as Spark SQL, and
every tick's changes equal the local executor's and integrate to the from-scratch oracle."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_spark_parity import random_stream, replay
from tests.property.test_datalog_features import FEATURES
from workers.executors.spark import SparkSettings

pytestmark = pytest.mark.spark
CASES = [pytest.param(query, inputs, id=name) for name, query, inputs in FEATURES]


@pytest.mark.parametrize(("query", "inputs"), CASES)
def test_spark_keeps_the_feature_like_the_local_executor(
        query: str, inputs: list[Any], spark_settings: SparkSettings) -> None:
    spark = replay(query, "delta", random_stream(len(query), transactions=5, ops=4),
                   spark_settings, inputs)
    assert spark.dispatch.last == "spark"
    assert spark.dispatch.spark is not None
    if spark.plan(query, inputs).attributes != ():  # it reads datoms (not inputs alone)
        assert spark.dispatch.spark.jobs.last.jobs > 0  # the last join really ran Spark jobs
