"""The watchdog ends a process stuck in a call that ignores its timeout, and stays quiet
around a call that returns; one thread watches every call."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from workers.kafka.watchdog import HUNG_EXIT_CODE, watchdog


def test_a_call_that_returns_in_time_is_left_alone() -> None:
    with watchdog("quick", limit_s=0.2):
        pass
    time.sleep(0.3)  # the process is still here


def test_many_calls_are_watched_by_one_thread() -> None:
    for _ in range(50):
        with watchdog("quick"):
            pass
    watching = [t for t in threading.enumerate() if t.name == "kafka-watchdog"]
    assert len(watching) == 1
    assert not [t for t in threading.enumerate() if isinstance(t, threading.Timer)]


@pytest.mark.parametrize("before", [
    "",  # the first call starts the thread
    "with watchdog('quick', limit_s=0.2):\n    pass\ntime.sleep(0.5)\n",  # it sleeps, idle
    # it sleeps towards a later deadline
    "with watchdog('slow', limit_s=600):\n    time.sleep(0.5)\n",
])
def test_a_hung_call_ends_the_process(before: str) -> None:
    inner = "    " if before.startswith("with watchdog('slow'") else ""
    code = ("import time\nfrom workers.kafka.watchdog import watchdog\n" + before
            + f"{inner}with watchdog('stuck', limit_s=0.2):\n{inner}    time.sleep(30)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=20)
    assert done.returncode == HUNG_EXIT_CODE
    assert b"stuck blocked for" in done.stderr
