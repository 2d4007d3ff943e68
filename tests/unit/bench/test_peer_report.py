"""Which charts `python -m bench peers` draws: none of nothing (a run without the binary
strategy, or with `--no-curve`, has no work or curve panels; drawing them anyway crashed
after the JSON was written)."""

from pathlib import Path
from typing import Any

from bench.peers.report import charts, planned_charts


def payload(*targets: str, curve: bool = False) -> dict[str, Any]:
    cells = [{"size": 1, "ns": [1000, 2000], "counts": [0, 1], "work": [3, 4]}]
    return {
        "workloads": [{"name": "powerlaw", "queries": ["triangle", "4cycle"]}],
        "runs": [{"workload": "powerlaw", "query": "triangle", "target": t, "cells": cells}
                 for t in targets],
        "curve": [{"query": "triangle", "inward": False, "strategy": "delta", "n": 10,
                   "median_ms": 0.1, "elements": 4.0}] if curve else [],
    }


def test_without_the_binary_strategy_there_is_no_work_chart():
    assert list(planned_charts(payload("delta", "sqlite"))) == ["peers-powerlaw.png"]


def test_with_the_strategies_and_a_curve_every_chart_is_drawn():
    assert list(planned_charts(payload("delta", "binary", curve=True))) == [
        "peers-powerlaw.png", "skew-work-curve.png", "work-per-change.png"]


def test_a_run_with_nothing_to_draw_draws_nothing(tmp_path: Path):
    assert charts(payload(), tmp_path / "img") == []
    assert not (tmp_path / "img").exists()
