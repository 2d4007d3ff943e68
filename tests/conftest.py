"""Shared test configuration: hypothesis profiles (``ci`` is the default, ``dev`` is quick)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
pytest_plugins = ["tests.fixtures.kafka", "tests.fixtures.spark"]
