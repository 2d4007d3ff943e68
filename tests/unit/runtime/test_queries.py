"""OwnedQueries: a query's lifecycle as one state machine — every legal transition, and the
illegal ones refused (no Kafka: records and views are plain values)."""

from __future__ import annotations

import pytest

from workers.kafka.compacted import KeyedRecord
from workers.kafka.registration import Registration
from workers.kafka.views import View
from workers.runtime.queries import (
    TRANSITIONS,
    IllegalTransition,
    OwnedQueries,
    OwnedQuery,
    QueryState,
)

POSITION = 10


def _record(name: str = "tri", partition: int = 0, offset: int = 3) -> KeyedRecord:
    return KeyedRecord(name, b"registration", offset, partition)


def _take(queries: OwnedQueries, progress: int | None, name: str = "tri",
          partition: int = 0) -> OwnedQuery:
    return queries.take(_record(name, partition), Registration(name, "[:find ?e]", ()),
                        progress, POSITION, View())


@pytest.mark.parametrize(("progress", "state"), [
    (None, QueryState.NEW),
    (POSITION, QueryState.RESUMING),
    (POSITION + 5, QueryState.WAITING),
    (POSITION - 5, QueryState.CATCHING_UP),
])
def test_a_registration_starts_in_the_state_its_progress_gives(progress: int | None,
                                                               state: QueryState) -> None:
    queries = OwnedQueries()
    query = _take(queries, progress)
    assert query.state is state
    assert "tri" in queries and len(queries) == 1
    assert (query.view is not None) is (state is QueryState.WAITING)  # kept only to wait


@pytest.mark.parametrize("progress", [None, POSITION, POSITION - 5])
def test_a_committed_tick_makes_a_taken_query_live(progress: int | None) -> None:
    queries = OwnedQueries()
    query = _take(queries, progress)
    queries.committed()
    assert query.state is QueryState.LIVE
    queries.committed()  # live stays live
    assert query.state is QueryState.LIVE


def test_a_waiting_query_resumes_when_the_position_reaches_its_progress() -> None:
    queries = OwnedQueries()
    query = _take(queries, POSITION + 2)
    assert queries.waits_for() == POSITION + 2 and queries.waiting() == 1
    queries.committed()  # its progress is not written while it waits
    assert query.state is QueryState.WAITING and queries.registered() == {}
    assert queries.reached(POSITION + 1) == []
    assert queries.reached(POSITION + 2) == [(query, View())]
    assert query.view is None  # handed over, not kept
    assert query.state is QueryState.RESUMING and queries.waits_for() is None
    assert queries.registered() == {"tri": 3}
    queries.committed()
    assert query.state is QueryState.LIVE


def test_a_waiting_query_the_position_passed_catches_up() -> None:
    """A follower of a shared Spark state steps its writer's versions: its position may
    pass a waiting query's progress, and the query catches up from it."""
    queries = OwnedQueries()
    query = _take(queries, POSITION + 2)
    assert queries.reached(POSITION + 7) == [(query, View())]
    assert query.state is QueryState.CATCHING_UP and queries.registered() == {"tri": 3}
    queries.committed()
    assert query.state is QueryState.LIVE


@pytest.mark.parametrize("progress", [None, POSITION, POSITION + 2, POSITION - 5])
@pytest.mark.parametrize("live", [False, True])
def test_every_state_can_be_dropped(progress: int | None, live: bool) -> None:
    queries = OwnedQueries()
    query = _take(queries, progress)
    if live:
        queries.reached(POSITION + 2)
        queries.committed()
    left = query.state
    assert queries.drop("tri") is left
    assert query.state is QueryState.DROPPED and "tri" not in queries
    assert queries.drop("tri") is None  # nothing owned by that name any more


def test_a_name_is_owned_once() -> None:
    queries = OwnedQueries()
    _take(queries, None)
    with pytest.raises(IllegalTransition, match="already owned"):
        _take(queries, POSITION)
    queries.drop("tri")
    assert _take(queries, POSITION).state is QueryState.RESUMING  # a replacing registration


@pytest.mark.parametrize("source", list(QueryState))
@pytest.mark.parametrize("target", list(QueryState))
def test_only_the_listed_transitions_are_legal(source: QueryState, target: QueryState) -> None:
    query = OwnedQuery(_record(), Registration("tri", "[:find ?e]", ()), source, None, View())
    if target in TRANSITIONS[source]:
        query.move(target)
        assert query.state is target
    else:
        with pytest.raises(IllegalTransition):
            query.move(target)
        assert query.state is source


def test_lost_pieces_own_the_query_anew_in_the_partitions_still_owned() -> None:
    queries = OwnedQueries()
    _take(queries, None, "tri", partition=0)
    _take(queries, POSITION - 1, "path", partition=1)
    assert queries.lose(["tri", "path", "gone"]) == ["path", "tri"]  # a dropped one: no record
    assert [record.key for record in queries.to_reown({0})] == ["tri"]
    assert queries.to_reown({0, 1}) == []  # taken once


def test_a_waiting_query_has_no_pieces_to_lose() -> None:
    queries = OwnedQueries()
    _take(queries, POSITION + 1)
    with pytest.raises(IllegalTransition, match="no pieces"):
        queries.lose(["tri"])


def test_after_a_sweep_every_registered_query_is_owned_anew_once() -> None:
    """A sweep may abort a tick the worker saw committed (its markers skipped by the broker):
    every registered query is caught up again from its committed progress; one already lost
    is not listed twice, a waiting one has nothing to redo."""
    queries = OwnedQueries()
    _take(queries, None, "tri", partition=0)
    _take(queries, POSITION - 1, "path", partition=1)
    _take(queries, POSITION + 1, "later", partition=2)  # waiting
    assert queries.lose(["path"]) == ["path"]
    assert queries.lose_all() == ["tri"]
    assert queries.lose_all() == []
    assert sorted(record.key for record in queries.to_reown({0, 1, 2})) == ["path", "tri"]
