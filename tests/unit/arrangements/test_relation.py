"""A derived relation's tries: built on first use, then kept up to date in place."""

from __future__ import annotations

import gc

from tests.unit.arrangements.tries import leaves
from workers.arrangements.relation import RelationArrangement, TrackedRows
from workers.zset import ZSet
from workers.zset.row import Row

ROWS: ZSet[Row] = {(1, 2, 3): 1, (1, 2, 4): 2, (5, 2, 3): 1}
ORDER = (2, 0, 1)


def test_an_index_built_late_equals_one_kept_up_to_date() -> None:
    early, late = RelationArrangement(), RelationArrangement()
    early.index(ORDER)
    early.update(ROWS)
    late.update(ROWS)
    expected = {(c, a, b): weight for (a, b, c), weight in ROWS.items()}
    assert leaves(late.index(ORDER), 3) == leaves(early.index(ORDER), 3) == expected


def test_a_retraction_prunes_the_emptied_branches() -> None:
    arranged = RelationArrangement()
    trie = arranged.index(ORDER)
    arranged.update(ROWS)
    arranged.update([((1, 2, 4), -2), ((5, 2, 3), -1)])  # pairs, as a step yields them
    assert leaves(trie, 3) == {(3, 1, 2): 1}
    assert (arranged.weight((1, 2, 4)), len(arranged), list(arranged)) == (0, 1, [((1, 2, 3), 1)])


def test_reset_empties_it_in_the_same_trie_objects() -> None:
    arranged = RelationArrangement()
    arranged.update(ROWS)
    trie = arranged.index(ORDER)
    arranged.reset()
    assert arranged.index(ORDER) is trie
    assert (trie, len(arranged)) == ({}, 0)


def test_the_rows_stay_tracked_so_a_new_tuple_does_not_make_them_young_again() -> None:
    state, exact = RelationArrangement(), {(1, 2): 1}
    state.update({(1, 2): 1})
    gc.collect()  # untracks the tuples, and an exact dict holding only those
    assert not gc.is_tracked(exact) and gc.is_tracked(state.rows)
    assert isinstance(state.rows, TrackedRows) and state.rows == {(1, 2): 1}
