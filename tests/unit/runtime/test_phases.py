"""TickPhases: each phase gets the time since the previous mark; committed ticks are observed
(histogram, and the trace file ``bench pipeline`` reads)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from workers.runtime.phases import PHASES, TickPhases


def _count(phase: str) -> float:
    """The seconds observed in ``phase`` so far."""
    return REGISTRY.get_sample_value("deltalog_tick_phase_seconds_sum", {"phase": phase}) or 0.0


def test_each_phase_takes_the_time_since_the_last_mark(tmp_path: Path) -> None:
    phases = TickPhases(str(tmp_path / "trace.tsv"))
    phases.begin()
    time.sleep(0.02)
    phases.mark("poll")
    phases.mark("normalise")
    time.sleep(0.01)
    phases.mark("commit")
    phases.committed(41)
    phases.close()
    tx_last, committed_s, *seconds = (tmp_path / "trace.tsv").read_text().split("\t")
    by_phase = dict(zip(PHASES, map(float, seconds), strict=True))
    assert int(tx_last) == 41 and abs(float(committed_s) - time.time()) < 5
    assert by_phase["poll"] >= 0.02 and by_phase["normalise"] < 0.01
    assert by_phase["commit"] >= 0.01 and by_phase["queued"] == 0.0


def test_queued_counts_from_the_oldest_transactions_timestamp(tmp_path: Path) -> None:
    phases = TickPhases(str(tmp_path / "trace.tsv"))
    phases.begin()
    phases.queued(time.time() - 0.5)
    phases.committed(1)
    phases.begin()
    phases.queued(time.time() + 60)  # a producer's clock ahead of ours: never below 0
    phases.committed(2)
    phases.close()
    first, second = [line.split("\t") for line in (tmp_path / "trace.tsv").read_text()
                     .splitlines()]
    assert float(first[2]) == pytest.approx(0.5, abs=0.2)
    assert float(second[2]) == 0.0


def test_committed_ticks_are_observed_without_a_trace() -> None:
    before = _count("write")
    phases = TickPhases(None)
    phases.begin()
    time.sleep(0.005)
    phases.mark("write")
    phases.committed(7)
    assert _count("write") - before >= 0.005
