"""The executor contract on the Spark executor (a real local SparkSession), small ticks in
one task and every tick split between tasks."""

from __future__ import annotations

import pytest

from tests.unit.executors.contract import ExecutorContract
from workers.engine import Engine

pytestmark = pytest.mark.spark


class TestSparkExecutor(ExecutorContract):
    executor = "spark"

    def make_engine(self, strategy: str, request: pytest.FixtureRequest) -> Engine:
        settings = request.getfixturevalue("spark_settings")
        return Engine(strategy=strategy, executor=self.executor, spark=settings)


class TestSparkExecutorSplit(TestSparkExecutor):
    """Every tick split between the shares (two stages), as a large tick is."""

    def make_engine(self, strategy: str, request: pytest.FixtureRequest) -> Engine:
        engine = super().make_engine(strategy, request)
        assert engine.dispatch.spark is not None
        engine.dispatch.spark.split_datoms = 0
        return engine
