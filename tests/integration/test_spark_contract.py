"""The executor contract on the Spark executor (a real local SparkSession)."""

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
