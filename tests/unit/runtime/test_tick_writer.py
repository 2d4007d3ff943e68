"""TickWriter: a tick's output in one transaction of a CollectingSink — written whole or,
lost, sent again with the next tick from a new producer (no broker)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from workers.config import WorkerConfig
from workers.engine import Changes
from workers.kafka.compacted import KeyedRecord
from workers.kafka.registration import Registration
from workers.kafka.views import MARKER, View
from workers.runtime.dead_letters import DEAD_LETTERS, DeadLetters
from workers.runtime.phases import TickPhases
from workers.runtime.pieces import Pieces
from workers.runtime.queries import OwnedQueries, QueryState
from workers.runtime.tick_writer import TickOutput, TickWriter
from workers.runtime.views import ViewWrites
from workers.testing import FakeGroup, FakeKafka, FakePorts, FakeTxSource
from workers.zset.row import Row

IVAN, OLEG = Row(("Ivan",)), Row(("Oleg",))


class Parts:
    """A writer with the parts it writes for: two queries owned, ``new`` and ``live``."""

    def __init__(self) -> None:
        self.kafka = FakeKafka()
        self.ports = FakePorts(self.kafka)
        self.queries = OwnedQueries()
        for offset, name in enumerate(("new", "live")):
            self.queries.take(KeyedRecord(name, b"", offset), Registration(name, "", ()),
                              None if name == "new" else 4, 4, View())
        self.dead_letters = DeadLetters(WorkerConfig(), self.kafka.topics.tx,
                                        lambda at: FakeTxSource(self.kafka, at))
        self.writer = TickWriter(self.ports, self.queries, ViewWrites(), self.dead_letters,
                                 TickPhases(None))
        self.writer.start()
        self.group = FakeGroup(self.kafka, self.ports.worker)
        self.group.poll()

    def commit(self, output: TickOutput, rest: Pieces | None = None) -> bool:
        return self.writer.commit(output, rest or Pieces(iter(())), [], 5, 6, self.group)

    def written(self) -> list[tuple[str, Any, Any]]:
        return [(r.topic.rsplit(".", 1)[-1], r.key, r.value and r.value.get("weight"))
                for r in self.kafka.committed]


@pytest.fixture
def parts() -> Parts:
    return Parts()


def test_a_tick_is_written_in_order_in_one_transaction(parts: Parts) -> None:
    parts.dead_letters.take({}, position=4)
    output = TickOutput(snapshots={"new": (4, {})}, changes={"live": {IVAN: 1}})
    output.dead_letters.append(("deltalog.queries", 9, "E", "bad", b"registration"))
    assert parts.commit(output)
    assert parts.written() == [
        ("progress", "new", None), ("progress", "live", None),  # first: one registration
        ("new", MARKER, 0),  # an empty result's snapshot: the row of no values
        ("live", IVAN, 1), ("live", IVAN, 1),  # the change and the view's weight
        ("live", MARKER, 0),  # the view's marker
        ("dlq", None, None),
        ("progress", DEAD_LETTERS, None)]
    assert parts.queries["new"].state is QueryState.LIVE
    assert parts.dead_letters.done == 6


def test_a_lost_transaction_is_sent_again_from_a_new_producer(parts: Parts) -> None:
    output = TickOutput(changes={"live": {IVAN: 1}})
    parts.kafka.fail_commits = 1
    assert not parts.commit(output)
    assert parts.kafka.committed == [] and output.first == {"live": 5}
    assert len(parts.ports.sinks) == 2 and parts.writer.sink is parts.ports.sinks[1]
    assert parts.ports.sinks[1].swept == [{"deltalog.results.live", "deltalog.views.live",
                                           "deltalog.progress"}]
    assert parts.queries["live"].state is QueryState.RESUMING  # not live until committed
    assert parts.writer.commit(output, Pieces(iter(())), [], 7, 8, parts.group)
    assert [r.value["tx_first"] for r in parts.kafka.committed
            if r.topic == "deltalog.results.live"][:1] == [5]


def test_a_fenced_producer_loses_its_transaction(parts: Parts) -> None:
    parts.ports.sink().init()  # another incarnation of this transactional id
    assert not parts.commit(TickOutput(changes={"live": {IVAN: 1}}))


def test_after_a_lost_tick_every_query_is_owned_anew(parts: Parts) -> None:
    """The one it wrote pieces of, and the others too: the sweep that follows may abort an
    earlier tick they saw committed (one whose markers the broker skipped), so every query
    is caught up again from what is committed (``TickWriter._reown_all``)."""
    def pieces() -> Iterator[Changes]:
        yield {"live": {IVAN: 1}}
        yield {"live": {OLEG: 1}}  # written as computed, not held

    stream = Pieces(pieces())
    output = TickOutput(changes=stream.first())
    parts.kafka.fail_commits = 1
    assert not parts.commit(output, stream)
    assert [r.key for r in parts.queries.to_reown({0})] == ["live", "new"]
