"""Integration tests: every worker and sink process a test started is gone when it ends,
whether it passed or failed (those of a module-scoped fixture are the fixture's to stop)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.sinks import SinkProcess
from workers.runtime.process import WorkerProcess


@pytest.fixture(autouse=True)
def stop_processes() -> Iterator[None]:
    workers, sinks = set(WorkerProcess.running), set(SinkProcess.running)
    yield
    for worker in WorkerProcess.running - workers:
        worker.stop()
    for sink in SinkProcess.running - sinks:  # a failed sink test left them running before
        sink.stop()
