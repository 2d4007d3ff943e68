"""Datomic's data model (tests/unit/db/data_model.py) under ``executor=spark``: the state in
Spark's files, the driver normalising against the datoms it fetched for each transaction —
tempids, upserts, lookup refs, components and cas read there what they read locally."""

from __future__ import annotations

import pytest

from tests.unit.db.data_model import CASES, Case, check
from workers.engine import Engine
from workers.executors.spark import SparkSettings

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("made", CASES)
def test_the_data_model_on_spark(made: Case, spark_settings: SparkSettings) -> None:
    check(made, lambda: Engine(executor="spark", spark=spark_settings))
