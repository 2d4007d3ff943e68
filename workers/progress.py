"""A dependency-free progress bar on stderr (for ``deltalog tx --file`` and the demo)."""

from __future__ import annotations

import sys
import time
from types import TracebackType

REDRAW_S = 0.1  # redraw at most ten times a second


class ProgressBar:
    def __init__(self, total: int, unit: str, width: int = 30) -> None:
        self.total, self.unit, self.width = total, unit, width
        self.done = 0
        self._started = self._drawn = time.monotonic()

    def advance(self, count: int = 1) -> None:
        self.done += count
        if time.monotonic() - self._drawn >= REDRAW_S or self.done >= self.total:
            self._draw()

    def _draw(self) -> None:
        filled = self.width * self.done // max(self.total, 1)
        rate = self.done / max(time.monotonic() - self._started, 1e-9)
        sys.stderr.write(f"\r[{'#' * filled}{' ' * (self.width - filled)}] "
                         f"{self.done}/{self.total} {self.unit} ({rate:,.0f} {self.unit}/s)")
        sys.stderr.flush()
        self._drawn = time.monotonic()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.done < self.total or not self.total:
            self._draw()
        sys.stderr.write("\n")
