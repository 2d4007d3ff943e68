"""The queries a worker owns, each in one explicit state of its lifecycle.

A registration taken up here starts in the state its committed progress ``Q`` gives against
the worker's position (:class:`QueryState`); a first committed tick makes it live; a revoked
partition, a tombstone or a replacing registration drops it.  The worker asks this owner, and
only through its transitions: each checks that it is legal and raises
:class:`IllegalTransition` otherwise, so a query is never in two places at once.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from workers.kafka.compacted import KeyedRecord
from workers.kafka.registration import Registration
from workers.kafka.views import View


class QueryState(enum.Enum):
    NEW = "new"  # no committed progress: its current result is emitted as snapshot rows
    RESUMING = "resuming"  # Q = position: it resumes as it was
    # Q > position: ticks stop at Q until the position reaches it (a follower of a shared
    # Spark state steps its writer's versions: it may pass Q, and the query catches up)
    WAITING = "waiting"
    CATCHING_UP = "catching up"  # Q < position: one tick Q+1..position catches it up
    LIVE = "live"  # a tick including it committed
    DROPPED = "dropped"  # no longer owned here

    @classmethod
    def taken_up(cls, progress: int | None, position: int) -> QueryState:
        """The state a registration starts in: its committed ``progress`` (None: none for
        this registration) against the worker's ``position``."""
        if progress is None:
            return cls.NEW
        if progress > position:
            return cls.WAITING
        return cls.CATCHING_UP if progress < position else cls.RESUMING


_AFTER_TAKING = frozenset({QueryState.LIVE, QueryState.DROPPED})
TRANSITIONS: dict[QueryState, frozenset[QueryState]] = {  # state -> the states it may go to
    QueryState.NEW: _AFTER_TAKING,
    QueryState.RESUMING: _AFTER_TAKING,
    QueryState.CATCHING_UP: _AFTER_TAKING,
    QueryState.WAITING: frozenset({QueryState.RESUMING, QueryState.CATCHING_UP,
                                   QueryState.DROPPED}),
    QueryState.LIVE: frozenset({QueryState.DROPPED}),
    QueryState.DROPPED: frozenset(),
}
REGISTERED = frozenset({QueryState.NEW, QueryState.RESUMING, QueryState.CATCHING_UP,
                        QueryState.LIVE})  # registered in the engine, progress written each tick


class IllegalTransition(RuntimeError):
    """A transition asked of a query in a state it cannot leave that way (a worker bug)."""


@dataclass(slots=True)
class OwnedQuery:
    """One query owned here: its registration record, what it was taken up with, its state."""

    record: KeyedRecord
    registration: Registration
    state: QueryState
    progress: int | None  # its committed progress when taken up (None: a new query)
    # What its view topic held when taken up, kept only while it waits: its rows are as many
    # as the result's, and once registered the result is the engine's to hold.
    view: View | None

    @property
    def name(self) -> str:
        return self.record.key

    @property
    def partition(self) -> int:
        return self.record.partition

    @property
    def offset(self) -> int:
        """The registration's offset in the queries table: names its progress and view."""
        return self.record.offset

    def move(self, state: QueryState) -> None:
        """Go to ``state``, if :data:`TRANSITIONS` allows it from this one."""
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"query {self.name}: {self.state.value} cannot become "
                                    f"{state.value}")
        self.state = state


class OwnedQueries:
    """The queries this worker owns, by name, and the records to own anew next tick."""

    def __init__(self) -> None:
        self._queries: dict[str, OwnedQuery] = {}
        self._reown: list[KeyedRecord] = []
        # When queries were last taken up, until a tick including them commits (not ready)
        self.taken_up_s: float | None = None

    def taking_up(self) -> None:
        """Registrations are being taken up (the clock runs from the first of them)."""
        self.taken_up_s = self.taken_up_s or time.monotonic()

    def take(self, record: KeyedRecord, registration: Registration, progress: int | None,
             position: int, view: View) -> OwnedQuery:
        """A registration taken up (none of that name owned: drop it first).  Its state
        follows from its committed ``progress`` against the ``position``; its ``view`` is
        kept only if it waits (the caller uses it at once otherwise)."""
        if record.key in self._queries:
            raise IllegalTransition(f"query {record.key} is already owned: drop it first")
        state = QueryState.taken_up(progress, position)
        query = self._queries[record.key] = OwnedQuery(
            record, registration, state, progress, view if state is QueryState.WAITING else None)
        return query

    def reached(self, position: int) -> list[tuple[OwnedQuery, View]]:
        """Waiting → resuming: the queries whose progress the position has reached, each
        with the view it was taken up with, handed over rather than kept.  Ticks never pass
        a waiting query's progress — but a follower's (it steps its writer's versions):
        those passed catch up."""
        reached = [query for query in self._queries.values() if query.state is
                   QueryState.WAITING and query.progress is not None
                   and query.progress <= position]
        views = []
        for query in reached:
            query.move(QueryState.RESUMING if query.progress == position
                       else QueryState.CATCHING_UP)
            assert query.view is not None  # kept while it waited
            views.append(query.view)
            query.view = None
        return list(zip(reached, views, strict=True))

    def committed(self) -> float | None:
        """New, resuming, catching up → live: a tick including them committed (their first
        output, if any, with it).  The seconds since they began to be taken up (None: no
        take-up was under way)."""
        for query in self._queries.values():
            if query.state in REGISTERED - {QueryState.LIVE}:
                query.move(QueryState.LIVE)
        return self.live_as_is()

    def live_as_is(self) -> float | None:
        """The take-up is over (queries taken up with nothing to write are live as is);
        the seconds since it began (None: none was under way)."""
        began, self.taken_up_s = self.taken_up_s, None
        return None if began is None else time.monotonic() - began

    def drop(self, name: str) -> QueryState | None:
        """Any state → dropped: its partition was revoked, or its registration removed or
        replaced.  The state it left (None: none was owned), for the caller to unregister a
        registered one."""
        query = self._queries.pop(name, None)
        if query is None:
            return None
        left = query.state
        query.move(QueryState.DROPPED)
        return left

    def lose(self, names: Iterable[str]) -> list[str]:
        """Queries whose written pieces were lost with their transaction: owned anew next
        tick, caught up from their committed progress like a query taken over.  Only a
        registered query has pieces."""
        lost = sorted(name for name in set(names) if name in self._queries)
        for name in lost:
            if self._queries[name].state not in REGISTERED:
                raise IllegalTransition(f"query {name} is {self._queries[name].state.value}: "
                                        "it has no pieces to lose")
        self._reown = [self._queries[name].record for name in lost]
        return lost

    def lose_all(self) -> list[str]:
        """Every registered query owned anew next tick too (after a sweep that may have
        aborted a tick they saw committed): those not already to be owned anew."""
        marked = {record.key for record in self._reown}
        more = sorted(name for name, query in self._queries.items()
                      if query.state in REGISTERED and name not in marked)
        self._reown += [self._queries[name].record for name in more]
        return more

    def to_reown(self, owned: set[int]) -> list[KeyedRecord]:
        """The lost queries' records to take up again, of the partitions still ``owned``."""
        records, self._reown = self._reown, []
        return [record for record in records if record.partition in owned]

    def __getitem__(self, name: str) -> OwnedQuery:
        return self._queries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._queries

    def __iter__(self) -> Iterator[OwnedQuery]:
        """Over a copy: the caller may drop queries as it goes."""
        return iter(list(self._queries.values()))

    def registered(self) -> dict[str, int]:
        """Each registered query's registration offset: every tick writes their progress."""
        return {name: query.offset for name, query in self._queries.items()
                if query.state in REGISTERED}

    def waiting(self) -> int:
        """How many queries wait: the worker is not ready while any does."""
        return sum(query.state is QueryState.WAITING for query in self._queries.values())

    def waits_for(self) -> int | None:
        """The first progress a waiting query waits for: ticks stop there (None: none
        waits)."""
        return min((query.progress for query in self._queries.values()
                    if query.state is QueryState.WAITING and query.progress is not None),
                   default=None)

    def __len__(self) -> int:
        return len(self._queries)
