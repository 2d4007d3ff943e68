"""``arrived``: what has arrived at once, a wait only while nothing has (``consume(n, t)``
itself waits for n messages or the whole timeout)."""

from __future__ import annotations

from typing import Any

from workers.kafka.consume import arrived


class FakeConsumer:
    """``consume`` returns what is queued (at most n) and records the timeouts asked."""

    def __init__(self, queued: list[Any], later: list[Any] | None = None) -> None:
        self.queued, self.later = list(queued), list(later or [])
        self.waits: list[tuple[str, float]] = []

    def consume(self, count: int, timeout: float) -> list[Any]:
        self.waits.append(("consume", timeout))
        taken, self.queued = self.queued[:count], self.queued[count:]
        return taken

    def poll(self, timeout: float) -> Any:
        self.waits.append(("poll", timeout))
        self.queued, self.later = self.later, []
        return self.queued.pop(0) if self.queued else None


def test_what_has_arrived_is_returned_without_waiting() -> None:
    consumer = FakeConsumer(["a", "b"])
    assert arrived(consumer, 500, 0.5) == ["a", "b"]  # type: ignore[arg-type]
    assert consumer.waits == [("consume", 0)]


def test_nothing_arrived_waits_for_the_first_then_takes_the_rest() -> None:
    consumer = FakeConsumer([], later=["a", "b", "c"])
    assert arrived(consumer, 2, 0.5) == ["a", "b"]  # type: ignore[arg-type]
    assert consumer.waits == [("consume", 0), ("poll", 0.5), ("consume", 0)]


def test_nothing_at_all_is_an_empty_list() -> None:
    assert arrived(FakeConsumer([]), 10, 0.01) == []  # type: ignore[arg-type]
