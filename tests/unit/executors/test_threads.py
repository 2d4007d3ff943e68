"""The threads a big step's shares run on: every share once, its work counted, and no
share still running when the step goes on — not even when another share failed."""

from __future__ import annotations

import threading

import pytest

from workers.errors import WorkersError
from workers.executors.share import WHOLE, Share
from workers.executors.threads import Threads, default_threads
from workers.executors.work import Work


def test_each_share_runs_once_and_counts_its_work() -> None:
    work = Work(calls=1)

    def task(share: Share, counted: Work) -> int:
        counted.calls += share.index + 1
        return share.index

    assert Threads(3).map(task, work) == [0, 1, 2]
    assert work.calls == 1 + 1 + 2 + 3


def test_one_thread_runs_the_whole_in_the_callers_thread() -> None:
    seen: list[tuple[Share, str]] = []
    Threads(1).map(lambda share, _: seen.append((share, threading.current_thread().name)),
                   Work())
    assert seen == [(WHOLE, threading.current_thread().name)]


def test_a_failed_share_is_raised_once_every_share_has_ended() -> None:
    release, ended = threading.Event(), threading.Event()

    def task(share: Share, _: Work) -> None:
        if share.index == 0:
            raise ValueError("share 0 failed")
        release.wait(5)  # still running when share 0 fails
        ended.set()

    threading.Timer(0.2, release.set).start()
    with pytest.raises(ValueError, match="share 0 failed"):
        Threads(2).map(task, Work())
    assert ended.is_set()


def test_threads_are_at_least_one() -> None:
    assert 1 <= default_threads() <= 4
    with pytest.raises(WorkersError, match="step_threads"):
        Threads(0)
