"""The executor contract on the local executor."""

from __future__ import annotations

from tests.unit.executors.contract import ExecutorContract


class TestLocalExecutor(ExecutorContract):
    executor = "local"
