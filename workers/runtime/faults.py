"""Fault injection for crash tests: ``DELTALOG_FAULTS="before-commit=0.1,after-produce=0.05"``
makes the process die (``os._exit``, like SIGKILL: no cleanup, no flush) at that point with
that probability.  Unset — the normal case — every crash point is a dictionary lookup."""

from __future__ import annotations

import os
import random

FAULTS_ENV = "DELTALOG_FAULTS"
CRASH_EXIT_CODE = 137  # what a SIGKILLed process reports


def _parse(spec: str) -> dict[str, float]:
    points = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, probability = item.partition("=")
        points[name.strip()] = float(probability.strip() or 1)
    return points


_POINTS = _parse(os.environ.get(FAULTS_ENV, ""))


def crash_point(name: str) -> None:
    """Die here with the configured probability (tests only)."""
    probability = _POINTS.get(name)
    if probability is not None and random.random() < probability:
        os._exit(CRASH_EXIT_CODE)
