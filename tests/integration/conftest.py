"""Integration tests: every worker process a test started is gone when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.pipeline import WorkerProcess


@pytest.fixture(autouse=True)
def stop_workers() -> Iterator[None]:
    yield
    for worker in list(WorkerProcess.running):
        worker.stop()
