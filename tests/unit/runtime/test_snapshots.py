"""``Snapshots``: which worker of a fleet writes a snapshot, and when."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from workers.arrangements.values import ValueIds
from workers.db import BUILTIN_SCHEMA
from workers.engine import EngineState
from workers.runtime.checkpoint import Snapshots, SnapshotStore


def _state(tx: int) -> EngineState:
    empty = np.zeros(0, np.int32)
    return EngineState(ValueIds(), (empty, empty, empty), BUILTIN_SCHEMA, tx)


def _worker(location: Path | str) -> Snapshots:
    """A worker's snapshots, due at once (interval 0) unless another wrote one meanwhile."""
    snapshots = Snapshots(SnapshotStore.at(location), interval_s=0.0)
    snapshots.load(at_most=10**9)
    return snapshots


def test_nothing_is_written_before_the_interval(tmp_path: Path) -> None:
    snapshots = Snapshots(SnapshotStore.at(tmp_path), interval_s=3600.0)
    assert not snapshots.save_if_due(5, lambda: _state(5))
    assert snapshots.store.newest() is None


def test_a_worker_alone_writes_every_interval(tmp_path: Path) -> None:
    worker = _worker(tmp_path)
    for tx in (3, 7, 9):
        assert worker.save_if_due(tx, lambda tx=tx: _state(tx))  # type: ignore[misc]
        assert worker.store.newest() == tx
    assert not worker.save_if_due(9, lambda: _state(9))  # nothing new since


def test_in_a_shared_store_one_worker_writes_and_the_others_wait(tmp_path: Path) -> None:
    """The first whose interval ends writes; the other sees a newer snapshot than it knew
    of, counts it as fresh, and writes only once nobody else has for a whole interval."""
    first, second = _worker(tmp_path), _worker(tmp_path)
    assert first.save_if_due(10, lambda: _state(10))
    assert not second.save_if_due(12, lambda: _state(12))
    assert second.age_s() < 1.0
    assert first.save_if_due(20, lambda: _state(20))
    assert not second.save_if_due(21, lambda: _state(21))
    assert second.save_if_due(22, lambda: _state(22))  # the first wrote nothing since
    assert [first.store.newest(), second.store.newest()] == [22, 22]


def test_a_worker_behind_the_store_adds_nothing(tmp_path: Path) -> None:
    SnapshotStore.at(tmp_path).save(_state(50))
    behind = _worker(tmp_path)
    assert not behind.save_if_due(40, lambda: _state(40))
    assert behind.store.newest() == 50


def test_a_failed_write_is_logged_and_the_worker_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Snapshots only shorten recovery: a store that fails (here a file where its directory
    should be) costs a warning, not the worker."""
    (tmp_path / "file").write_text("")
    worker = _worker(tmp_path / "file" / "snapshots")
    with caplog.at_level(logging.WARNING, "deltalog.checkpoint"):
        assert not worker.save_if_due(5, lambda: _state(5))
    assert "snapshot at tx 5 not written" in caplog.text
