"""Shared test configuration: hypothesis profiles (``ci`` is the default, ``dev`` is quick),
the Spark tests kept together under pytest-xdist, golden files (``--update-golden``)."""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
pytest_plugins = ["tests.fixtures.kafka", "tests.fixtures.spark", "tests.fixtures.spark_cluster",
                  "tests.fixtures.golden", "tests.fixtures.postgres"]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n`` (``make test``), the Spark tests run in one test process: one
    shared SparkSession (and the Spark workers and Connect server some start) at a time, not
    one per process competing for the two cores."""
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("spark"))
