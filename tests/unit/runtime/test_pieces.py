"""Pieces: a tick's change as a stream — the first piece held, the others counted by query as
they are written, and a failed tick drains the rest."""

from __future__ import annotations

from collections.abc import Iterator

from workers.engine import Changes
from workers.runtime.pieces import Pieces


def _stepped(computed: list[int]) -> Iterator[Changes]:
    pieces: list[Changes] = [{"tri": {(1,): 1}}, {"path": {(2,): 1}}, {"deg": {(3,): -1}}]
    for number, piece in enumerate(pieces):
        computed.append(number)
        yield piece


def test_the_first_piece_is_held_and_the_rest_computed_as_written() -> None:
    computed: list[int] = []
    pieces = Pieces(_stepped(computed))
    assert pieces.first() == {"tri": {(1,): 1}} and computed == [0]
    assert next(iter(pieces)) == {"path": {(2,): 1}} and computed == [0, 1]
    assert pieces.queries == {"path"}


def test_a_failed_tick_drains_the_pieces_not_written() -> None:
    computed: list[int] = []
    pieces = Pieces(_stepped(computed))
    pieces.first()
    next(iter(pieces))
    assert pieces.drain() == {"path", "deg"} and computed == [0, 1, 2]


def test_a_usual_tick_is_one_piece_or_none() -> None:
    assert Pieces(iter([])).first() == {}
    assert Pieces(iter([])).drain() == set()
