"""Positions and a snapshot as rows (the broker-side protocol is tested in
``tests/integration/test_subscription.py``)."""

from __future__ import annotations

import pytest

from workers.errors import WorkersError
from workers.kafka.subscription import Change, Position, Snapshot, snapshot_rows


def test_positions_order_by_registration_then_tx() -> None:
    assert Position(3, 5) < Position(3, 6) < Position(4, -1)
    assert Position.parse(str(Position(3, 57))) == Position(3, 57)
    with pytest.raises(WorkersError, match="REGISTRATION:TX"):
        Position.parse("57")


def test_a_snapshot_is_its_rows_the_last_flagged() -> None:
    rows = list(snapshot_rows(Snapshot({(1, 2): 1, (2, 3): 2}, tx=9, registration=3)))
    assert [(c.row, c.weight, c.tx_first, c.tx_last, c.snapshot, c.last) for c in rows] == [
        ((1, 2), 1, 9, 9, True, False), ((2, 3), 2, 9, 9, True, True)]
    assert {c.position for c in rows} == {Position(3, 9)}


def test_an_empty_snapshot_is_the_row_of_no_values_with_weight_0() -> None:
    assert list(snapshot_rows(Snapshot({}, tx=4, registration=1))) == [
        Change((), 0, 4, 4, True, 1, True)]


def test_a_change_as_json_carries_its_position() -> None:
    change = Change((1, "a"), -1, 3, 4, False, 2, last=True)
    assert change.as_json("q") == {"query": "q", "row": '[1 "a"]', "weight": -1,
                                   "tx_first": 3, "tx_last": 4, "snapshot": False,
                                   "registration": 2, "last": True}
