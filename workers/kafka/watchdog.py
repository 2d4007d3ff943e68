"""The watchdog: a process blocked in a librdkafka call that ignores its timeout ends.

A worker stuck in such a call would keep heartbeating, and so keep its queries from every
other worker for ever.  Exiting hands them over; a restart recovers from the snapshot and
the committed progress, like after any crash.

One thread watches every call of the process.  A tick makes about five transaction calls;
a timer thread started for each (``threading.Timer``) cost ~0.5 ms of the ticking thread
apiece — the start waits for the new thread to take the interpreter's lock — ~2.8 ms of a
~7 ms tick at low load (cProfile, ``bench pipeline --load 0.03``).  Arming the watchdog is
now an entry in a table; its thread sleeps until the earliest deadline and is woken only
when a call is armed with an earlier one than it sleeps towards (when it sleeps with
nothing armed, or under a shorter limit).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from collections.abc import Iterator

TRANSACTION_TIMEOUT_S = 30.0  # init/commit/abort calls; well under transaction.timeout.ms
HUNG_CALL_S = 3 * TRANSACTION_TIMEOUT_S  # a transaction call blocked this long never returns
HUNG_EXIT_CODE = 75  # EX_TEMPFAIL: restart me
log = logging.getLogger(__name__)


class _Watchdog:
    """The calls being watched (their deadlines) and the thread that watches them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._armed: dict[int, tuple[float, str, float]] = {}  # token -> deadline, what, limit
        self._tokens = itertools.count()
        self._sleeps_until: float | None = None  # the thread's wake-up (None: not before told)
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, what: str, limit_s: float) -> Iterator[None]:
        deadline = time.monotonic() + limit_s
        token = next(self._tokens)
        with self._changed:
            self._armed[token] = (deadline, what, limit_s)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="kafka-watchdog",
                                                daemon=True)
                self._thread.start()
            elif self._sleeps_until is None or deadline < self._sleeps_until:
                self._changed.notify()
        try:
            yield
        finally:
            with self._changed:  # not woken: at its wake-up the thread finds the call gone
                del self._armed[token]

    def _watch(self) -> None:
        with self._changed:
            while True:
                if not self._armed:
                    self._sleeps_until = None
                    self._changed.wait()
                    continue
                deadline, what, limit_s = min(self._armed.values())
                if time.monotonic() >= deadline:
                    _expire(what, limit_s)
                self._sleeps_until = deadline
                self._changed.wait(deadline - time.monotonic())


def _expire(what: str, limit_s: float) -> None:
    log.critical("%s blocked for %.0f s (a librdkafka hang): exiting so that the group hands "
                 "this worker's queries over", what, limit_s)
    logging.shutdown()
    os._exit(HUNG_EXIT_CODE)


_WATCHDOG = _Watchdog()


def watchdog(what: str, limit_s: float = HUNG_CALL_S) -> contextlib.AbstractContextManager[None]:
    """End the process if the block (``what``) runs longer than ``limit_s``."""
    return _WATCHDOG.watching(what, limit_s)
