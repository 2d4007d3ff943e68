"""A tick's change as an explicit stream of pieces."""

from __future__ import annotations

from collections.abc import Iterator

from workers.engine import Changes


class Pieces:
    """The change of one tick as the engine steps it: a tick larger than ``tick_max_datoms``
    comes in pieces, each computed as it is written, so an enormous change (a hub retracted)
    is never in memory whole.  The database reaches the tick's last transaction only once
    the stream is exhausted: a tick whose transaction fails still drains it."""

    def __init__(self, pieces: Iterator[Changes]) -> None:
        self._pieces = pieces
        self.queries: set[str] = set()  # the queries changed by the pieces after the first

    def first(self) -> Changes:
        """The first piece (the whole change of a usual tick), held like a whole tick."""
        return next(self._pieces, {})

    def __iter__(self) -> Iterator[Changes]:
        for piece in self._pieces:
            self.queries.update(piece)
            yield piece

    def drain(self) -> set[str]:
        """Compute the pieces not written; the queries that any piece after the first
        changed (written ones are lost with a failed transaction too)."""
        for _ in self:
            pass
        return self.queries
