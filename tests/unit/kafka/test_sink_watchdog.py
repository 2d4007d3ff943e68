"""The watchdog ends a process stuck in a call that ignores its timeout, and stays quiet
around a call that returns."""

from __future__ import annotations

import subprocess
import sys
import time

from workers.kafka.sink import HUNG_EXIT_CODE, watchdog


def test_a_call_that_returns_in_time_is_left_alone() -> None:
    with watchdog("quick", limit_s=0.2):
        pass
    time.sleep(0.3)  # the process is still here


def test_a_hung_call_ends_the_process() -> None:
    code = ("import time\nfrom workers.kafka.sink import watchdog\n"
            "with watchdog('stuck', limit_s=0.2):\n    time.sleep(30)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=20)
    assert done.returncode == HUNG_EXIT_CODE
    assert b"stuck blocked for" in done.stderr
