"""QueryLifecycle: registrations taken up in the state their committed progress gives, and
dropped — over a real local engine and the fakes of workers.testing (no broker)."""

from __future__ import annotations

import pytest

from workers.config import WorkerConfig
from workers.runtime.dead_letters import DEAD_LETTERS, DeadLetters
from workers.runtime.engine_role import EngineRole
from workers.runtime.ownership import Polled
from workers.runtime.phases import TickPhases
from workers.runtime.queries import OwnedQueries, QueryState
from workers.runtime.query_lifecycle import QueryLifecycle
from workers.runtime.tick_writer import TickOutput, TickWriter
from workers.runtime.views import ViewWrites
from workers.testing import CollectingSink, FakeGroup, FakeKafka, FakePorts, FakeTxSource
from workers.zset.row import Row

NAMES = "[:find ?n :where [?e :name ?n]]"
IVAN, OLEG = Row(("Ivan",)), Row(("Oleg",))


class Parts:
    """A lifecycle at position 1 over a database with Ivan and Oleg."""

    def __init__(self) -> None:
        self.kafka = FakeKafka()
        self.ports = FakePorts(self.kafka)
        config = WorkerConfig()
        self.role = EngineRole(config)
        self.role.engine.transact('[[:db/add 1 :name "Ivan"] [:db/add 2 :name "Oleg"]]', 1)
        self.queries = OwnedQueries()
        views = ViewWrites()
        self.dead_letters = DeadLetters(config, self.kafka.topics.tx,
                                        lambda at: FakeTxSource(self.kafka, at))
        writer = TickWriter(self.ports, self.queries, views, self.dead_letters,
                            TickPhases(None))
        self.lifecycle = QueryLifecycle(config, self.kafka.topics, self.ports, self.role,
                                        self.queries, views, self.dead_letters, writer)
        self.group = FakeGroup(self.kafka, self.ports.worker)
        self.group.owned = {0}

    def own(self, *records: int, revoked: frozenset[int] = frozenset()) -> TickOutput:
        """The records at these offsets of the queries topic polled, at position 1."""
        output = TickOutput()
        self.lifecycle.own(Polled(set(revoked), [self.kafka.queries[i] for i in records]),
                           self.group, 1, output)
        return output

    def committed(self, query: str, registration: int, tx_last: int,
                  view: dict[Row, int]) -> None:
        """Another worker committed ``query`` up to ``tx_last`` with ``view``."""
        sink = CollectingSink(self.kafka, "another")
        sink.init()
        sink.begin()
        for row, weight in view.items():
            sink.view(query, registration, row, weight, tx_last)
        sink.view_marker(query, registration, tx_last)
        sink.progress(query, registration, tx_last)
        sink.progress(DEAD_LETTERS, -1, tx_last)
        sink.commit()


@pytest.fixture
def parts() -> Parts:
    return Parts()


def test_a_new_query_emits_its_result_as_a_snapshot(parts: Parts) -> None:
    output = parts.own(parts.kafka.register("names", NAMES))
    assert output.snapshots == {"names": (1, {IVAN: 1, OLEG: 1})}
    assert output.replaced == {"names": ({}, {IVAN: 1, OLEG: 1})}
    assert parts.queries["names"].state is QueryState.NEW
    assert parts.ports.created == {"deltalog.results.names", "deltalog.views.names"}
    assert parts.dead_letters.done == 1  # partition 0 is here: from the position


def test_a_query_behind_catches_up_from_its_committed_view(parts: Parts) -> None:
    offset = parts.kafka.register("names", NAMES)
    parts.committed("names", offset, 0, {IVAN: 1})
    output = parts.own(offset)
    assert parts.queries["names"].state is QueryState.CATCHING_UP
    assert output.changes == {"names": {OLEG: 1}} and output.first == {"names": 1}
    assert parts.dead_letters.done == 0  # from the committed D


def test_a_query_ahead_waits_then_resumes_as_it_was(parts: Parts) -> None:
    offset = parts.kafka.register("names", NAMES)
    parts.committed("names", offset, 3, {IVAN: 1, OLEG: 1})
    output = parts.own(offset)
    assert parts.queries["names"].state is QueryState.WAITING and not output
    assert "names" not in parts.role.engine.queries
    parts.role.engine.seek(3)
    parts.lifecycle.resume_waiting(3, output)
    assert parts.queries["names"].state is QueryState.RESUMING and not output


def test_a_refused_registration_is_dead_lettered_unless_committed(parts: Parts) -> None:
    output = parts.own(parts.kafka.register("bad", "[:find ?x :where [?e :name ?n]]"))
    assert [(topic, offset) for topic, offset, *_ in output.dead_letters] == [
        ("deltalog.queries", 0)]
    assert output.refused == {"bad": 0} and "bad" not in parts.queries
    parts.committed("bad", 0, 1, {})
    assert not parts.own(0).dead_letters  # its refusal was committed: not again


def test_a_tombstone_or_a_revoked_partition_drops_the_query(parts: Parts) -> None:
    parts.own(parts.kafka.register("names", NAMES))
    parts.own(parts.kafka.unregister("names"))
    assert "names" not in parts.queries and parts.role.engine.queries == ()
    parts.own(parts.kafka.register("names", NAMES))
    parts.group.owned = set()
    output = parts.own(revoked=frozenset({0}))
    assert "names" not in parts.queries and not output
    assert not parts.dead_letters.writing  # handed over with partition 0
