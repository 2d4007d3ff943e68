"""A batch's transaction is normalised against the state plus the batch so far, read
together without writing either."""

from __future__ import annotations

from workers.arrangements import ArrangementRegistry, Datom, MemoryArrangement, PendingReader

STATE: dict[Datom, int] = {(1, ":age", 30): 1, (1, ":friend", 2): 1, (3, ":friend", 2): 1}
# Earlier transactions of the batch: 1's age replaced, 3's friendship retracted, 4 befriends 2.
PENDING: dict[Datom, int] = {(1, ":age", 30): -1, (1, ":age", 31): 1, (3, ":friend", 2): -1,
                             (4, ":friend", 2): 1}


def _registry(datoms: dict[Datom, int]) -> ArrangementRegistry:
    registry = ArrangementRegistry()
    registry.apply(registry.encode(datoms))
    return registry


def test_reads_see_the_state_plus_the_pending_delta() -> None:
    reader = PendingReader(_registry(STATE), MemoryArrangement(PENDING))
    assert not reader.has((1, ":age", 30)) and reader.has((1, ":age", 31))
    assert list(reader.values(1, ":age")) == [31]
    assert set(reader.entity_datoms(1)) == {(1, ":age", 31), (1, ":friend", 2)}
    assert list(reader.entity_datoms(3)) == []
    assert set(reader.referrers(2, ":friend")) == {(1, ":friend", 2), (4, ":friend", 2)}


def test_reading_writes_neither_side() -> None:
    state, pending = _registry(STATE), MemoryArrangement(PENDING)
    reader = PendingReader(state, pending)
    list(reader.entity_datoms(1))
    list(reader.referrers(2, ":friend"))
    assert (dict.fromkeys(state.datoms(), 1), dict(pending.datoms())) == (STATE, PENDING)
