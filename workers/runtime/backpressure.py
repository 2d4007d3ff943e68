"""How many transactions the next tick may take.

A memory ceiling turned into slower consumption: when the process's resident memory passes
``memory_limit_mb``, ticks shrink (half each time, down to one transaction) and the worker
pauses briefly; below 80 % of the ceiling they grow back.  Bounded input per tick is what
keeps the next tick's memory bounded; a single enormous transaction is still applied whole
(see docs/fleet.md).

Ticks are also paced by how long their Kafka transaction stays open (a tick larger than
``tick_max_datoms`` computes its pieces inside it): the coordinator aborts a transaction
open longer than ``transaction_timeout_ms``, so a tick whose transaction stayed open too
long, or was lost, halves the ticks after it, and full ticks whose transactions close
quickly double them again — large catch-up ticks without a tick size that never commits.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

RELIEF = 0.8  # below this fraction of the ceiling, ticks grow again
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """The process's resident memory now (Linux ``/proc``; 0 where unavailable)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(slots=True)
class TickSize:
    """Transactions per tick: at most ``largest``, less under a memory ceiling (``limit``;
    None: no ceiling) and while the ticks' transactions stay open longer than ``open_s``."""

    largest: int
    limit: int | None
    open_s: float = math.inf
    current: int = 0  # the memory's bound
    paced: int = 0  # the transactions' bound

    def __post_init__(self) -> None:
        self.current = self.paced = self.largest

    def next(self, resident: int) -> int:
        """The size of the next tick given the resident memory now."""
        if self.limit is not None and resident > self.limit:
            self.current = max(self.current // 2, 1)
        elif self.limit is None or resident < RELIEF * self.limit:
            self.current = min(self.current * 2, self.largest)
        return min(self.current, self.paced)

    def closed(self, open_s: float, committed: bool, full: bool) -> None:
        """A tick's transaction was open ``open_s`` seconds and ``committed`` (or lost);
        ``full``: its batch took all the transactions the tick allowed."""
        if not committed or open_s > self.open_s:
            self.paced = max(self.paced // 2, 1)
        elif full and open_s < self.open_s / 2:
            self.paced = min(self.paced * 2, self.largest)

    @property
    def throttled(self) -> bool:
        return self.current < self.largest
