"""A memory ceiling turned into slower consumption: when the process's resident memory
passes ``memory_limit_mb``, ticks shrink (half each time, down to one transaction) and the
worker pauses briefly; below 80 % of the ceiling they grow back.  Bounded input per tick is
what keeps the next tick's memory bounded; a single enormous transaction is still applied
whole (see docs/fleet.md)."""

from __future__ import annotations

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
    """Transactions per tick under a memory ceiling (``limit`` None: always ``largest``)."""

    largest: int
    limit: int | None
    current: int = 0

    def __post_init__(self) -> None:
        self.current = self.largest

    def next(self, resident: int) -> int:
        """The size of the next tick given the resident memory now."""
        if self.limit is not None and resident > self.limit:
            self.current = max(self.current // 2, 1)
        elif self.limit is None or resident < RELIEF * self.limit:
            self.current = min(self.current * 2, self.largest)
        return self.current

    @property
    def throttled(self) -> bool:
        return self.current < self.largest
