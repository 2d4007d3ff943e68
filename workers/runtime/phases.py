"""Where a tick's time goes, from its oldest transaction's arrival to its Kafka commit.

A tick is timed as consecutive phases (:data:`PHASES`, the bounded ``phase`` label of
``deltalog_tick_phase_seconds``):

1. ``queued``: from the oldest transaction's timestamp in the log (the producer's, or the
   broker's with ``LogAppendTime``) to the moment the tick took it — the producer's send,
   the broker's append, the fetch, and the previous tick still running;
2. ``poll``: the tick's own polls (the queries topic's group, the transaction log);
3. ``normalise``: decoding the transactions and normalising them against the state;
4. ``step``: stepping the queries with the tick's delta and applying it to the indexes;
5. ``write``: encoding and producing the change rows, views, dead letters and progress;
6. ``offsets``: ``send_offsets_to_transaction`` (the group's generation, the fencing);
7. ``commit``: ``commit_transaction`` (the flush of what ``write`` produced, then EndTxn).

Only ticks that commit are observed.  ``DELTALOG_TICK_PHASES=<path>`` also appends one line
per committed tick to that file (``tx_last``, the commit's wall-clock time, then each phase
in seconds, tab-separated): ``python -m bench pipeline`` reads it for exact medians and
maxima, and for the time from a commit to its visibility downstream.  Unset — the normal
case — nothing is written.
"""

from __future__ import annotations

import os
import time
from typing import IO

from workers import metrics

PHASES = ("queued", "poll", "normalise", "step", "write", "offsets", "commit")
PHASES_ENV = "DELTALOG_TICK_PHASES"


class TickPhases:
    """The phases of the tick of the moment: :meth:`begin`, :meth:`mark` at each phase's
    end, :meth:`committed` (observed) or :meth:`begin` again (a tick that did not commit)."""

    def __init__(self, path: str | None = os.environ.get(PHASES_ENV)) -> None:
        self._children = {phase: metrics.TICK_PHASE_SECONDS.labels(phase) for phase in PHASES}
        # line-buffered, so a reader sees every committed tick while the worker runs; closed
        # with the worker (not a with block: it lives as long as the worker)
        self._trace: IO[str] | None = open(path, "a", buffering=1) if path else None  # noqa: SIM115
        self._seconds = dict.fromkeys(PHASES, 0.0)
        self._last = 0.0

    def begin(self) -> None:
        """A tick begins: phases count from now."""
        self._seconds = dict.fromkeys(PHASES, 0.0)
        self._last = time.perf_counter()

    def mark(self, phase: str) -> None:
        """``phase`` ended now: it took the time since the last mark (or the beginning)."""
        now = time.perf_counter()
        self._seconds[phase] += now - self._last
        self._last = now

    def queued(self, appended_s: float) -> None:
        """The tick took its oldest transaction now; it entered the log at ``appended_s``
        (Unix seconds; another host's clock may be behind: never below 0)."""
        if appended_s > 0:
            self._seconds["queued"] = max(time.time() - appended_s, 0.0)

    def committed(self, tx_last: int) -> None:
        """The tick's Kafka transaction committed: observe its phases."""
        seconds = self._seconds
        for phase, child in self._children.items():
            if phase != "queued" or seconds[phase]:
                child.observe(seconds[phase])
        if self._trace is not None:
            self._trace.write("\t".join([str(tx_last), f"{time.time():.6f}",
                                         *(f"{seconds[phase]:.6f}" for phase in PHASES)]) + "\n")

    def close(self) -> None:
        if self._trace is not None:
            self._trace.close()
            self._trace = None
