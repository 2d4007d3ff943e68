"""Levels kept per first column: the map a flat dict of tuples would be, for any arity."""

from __future__ import annotations

import pytest

from workers.executors.levels import Levels


@pytest.mark.parametrize("rows", [[(1,), (2,)], [(1, 2), (1, 3), (2, 3)],
                                  [(1, 2, 3), (1, 2, 4), (2, 2, 3)]],
                         ids=["unary", "binary", "ternary"])
def test_levels_read_as_a_dict_of_tuples(rows: list[tuple[int, ...]]) -> None:
    levels = Levels(len(rows[0]))
    levels.assign(rows[:2], 1)
    levels.assign(rows[2:], 2)
    assert [levels.get(row) for row in rows] == [1, 1, 2][:len(rows)]
    assert levels[rows[0]] == 1
    assert len(levels) == len(rows)
    assert levels.get((9,) * len(rows[0])) is None
    levels.assign(rows[:1], 3)  # a tuple given a new level keeps only that one
    assert levels.get(rows[0]) == 3 and len(levels) == len(rows)


def test_discard_forgets_a_tuple_and_an_emptied_first_column() -> None:
    levels = Levels(2)
    levels.assign([(1, 2), (1, 3), (2, 3)], 1)
    levels.discard((1, 2))
    levels.discard((5, 5))  # absent: nothing to do
    assert levels.get((1, 2)) is None and levels.get((1, 3)) == 1
    levels.discard((1, 3))
    assert len(levels) == 1
    with pytest.raises(KeyError):
        levels[(1, 3)]
    levels.clear()
    assert len(levels) == 0 and levels.get((2, 3)) is None
