"""Fault injection: the ``DELTALOG_FAULTS`` spec and crash points (the crash in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers.runtime import faults

ROOT = Path(__file__).parents[3]


@pytest.mark.parametrize(("spec", "points"), [
    ("", {}),
    ("before-commit=0.1,after-commit", {"before-commit": 0.1, "after-commit": 1.0}),
    (" mid-produce=0.5 , ,after-snapshot=0", {"mid-produce": 0.5, "after-snapshot": 0.0}),
    (",,", {}),
], ids=["empty", "probability-and-default", "spaces-and-empty-items", "only-commas"])
def test_parse(spec: str, points: dict[str, float]) -> None:
    assert faults._parse(spec) == points


def test_unconfigured_crash_point_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "_POINTS", {"other": 1.0})
    faults.crash_point("before-commit")


def test_zero_probability_never_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(faults, "_POINTS", {"before-commit": 0.0})
    for _ in range(100):
        faults.crash_point("before-commit")


def _run(faults_spec: str, point: str) -> subprocess.CompletedProcess[str]:
    code = ("from workers.runtime.faults import crash_point\n"
            f"crash_point({point!r})\n"
            "print('survived', flush=True)\n")
    env = {**os.environ, faults.FAULTS_ENV: faults_spec}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, check=False, cwd=ROOT)


def test_configured_crash_point_exits_like_sigkill() -> None:
    done = _run("x=1", "x")
    assert done.returncode == faults.CRASH_EXIT_CODE == 137
    assert "survived" not in done.stdout


def test_other_crash_point_survives_in_subprocess() -> None:
    done = _run("x=1", "y")
    assert (done.returncode, done.stdout) == (0, "survived\n")
