"""A batch's transaction is normalised against the state plus the batch so far, read
together without writing either."""

from __future__ import annotations

from workers.arrangements import ArrangementRegistry, Datom, MemoryArrangement, PendingReader
from workers.zset import ZSet
from workers.zset.row import Row

STATE: ZSet[Datom] = {(1, ":age", 30): 1, (1, ":friend", 2): 1, (3, ":friend", 2): 1}
# Earlier transactions of the batch: 1's age replaced, 3's friendship retracted, 4 befriends 2.
PENDING: ZSet[Datom] = {(1, ":age", 30): -1, (1, ":age", 31): 1, (3, ":friend", 2): -1,
                             (4, ":friend", 2): 1}


def _registry(datoms: ZSet[Datom]) -> ArrangementRegistry:
    registry = ArrangementRegistry()
    registry.apply(registry.encode(datoms))
    return registry


def _pending(state: ArrangementRegistry, datoms: ZSet[Datom]) -> MemoryArrangement:
    """A batch's pending delta as the engine keeps it: id datoms, numbered in the state's
    dictionary."""
    return MemoryArrangement(state.encode(datoms))


def test_reads_see_the_state_plus_the_pending_delta() -> None:
    state = _registry(STATE)
    reader = PendingReader(state, _pending(state, PENDING))
    assert not reader.has((1, ":age", 30)) and reader.has((1, ":age", 31))
    assert list(reader.values(1, ":age")) == [31]
    assert set(reader.entity_datoms(1)) == {(1, ":age", 31), (1, ":friend", 2)}
    assert list(reader.entity_datoms(3)) == []
    assert set(reader.referrers(2, ":friend")) == {(1, ":friend", 2), (4, ":friend", 2)}
    assert set(reader.attribute_datoms(":friend")) == {(1, ":friend", 2), (4, ":friend", 2)}


def test_values_python_finds_equal_stay_apart() -> None:
    """1, 1.0 and true are three values: a pending 1 is not a pending true."""
    state = _registry({(1, ":x", 1.0): 1})
    reader = PendingReader(state, _pending(state, {Row((1, ":x", 1)): 1,
                                                   Row((1, ":x", 1.0)): -1}))
    assert reader.has((1, ":x", 1)) and not reader.has((1, ":x", True))
    assert not reader.has((1, ":x", 1.0))
    assert [(v, type(v)) for v in reader.values(1, ":x")] == [(1, int)]


def test_reading_writes_neither_side() -> None:
    state = _registry(STATE)
    pending = _pending(state, PENDING)
    reader = PendingReader(state, pending)
    list(reader.entity_datoms(1))
    list(reader.referrers(2, ":friend"))
    assert dict.fromkeys(state.datoms(), 1) == STATE
    assert {state.decode(d): w for d, w in pending.datoms()} == PENDING
