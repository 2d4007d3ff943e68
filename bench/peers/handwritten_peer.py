"""The hand-written dict-of-sets triangle maintainer (`bench.engine.handwritten`) as a peer: the
floor a specialised program reaches for the one query it was written for."""

from __future__ import annotations

from collections.abc import Sequence

from bench.data import Edge, Fact, Tick
from bench.engine.handwritten import TriangleMaintainer
from bench.queries import SPECS, Spec


def edges(facts: Sequence[Fact]) -> list[Edge]:
    return [(e, v) for _, e, v in facts]


class Handwritten:
    """Only the triangle query; the changes it returns are already a set."""

    name = "handwritten"
    last_work: int | None = None

    def __init__(self) -> None:
        self.maintainer = TriangleMaintainer()

    def unsupported(self, spec: Spec) -> str | None:
        return None if spec == SPECS["triangle"] else "written for the triangle query only"

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        self.maintainer = TriangleMaintainer()
        self.maintainer.apply(edges(facts), [])

    def apply(self, tick: Tick) -> int:
        return len(self.maintainer.apply(edges(tick.adds), edges(tick.removes)))

    def close(self) -> None:
        self.maintainer = TriangleMaintainer()
