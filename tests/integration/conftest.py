"""Integration tests: every worker process a test started is gone when it ends (those of a
module-scoped fixture are the fixture's to stop)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from workers.runtime.process import WorkerProcess


@pytest.fixture(autouse=True)
def stop_workers() -> Iterator[None]:
    before = set(WorkerProcess.running)
    yield
    for worker in WorkerProcess.running - before:
        worker.stop()
