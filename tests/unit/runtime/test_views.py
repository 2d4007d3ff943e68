"""ViewWrites: the weights a tick writes to view topics — a set's rows weigh 1 with no state
kept; a bag's from its committed view, staged until the tick commits."""

from __future__ import annotations

from workers.runtime.views import ViewWrites
from workers.zset.row import Row


def test_a_set_writes_one_or_a_tombstone() -> None:
    views = ViewWrites()
    views.own("tri", bag=False, committed={(1, 2, 3): 1})
    assert views.changed("tri", {(1, 2, 3): -1, (2, 3, 4): 1}) == {(1, 2, 3): 0, (2, 3, 4): 1}


def test_a_bag_writes_its_multiplicities_within_a_tick() -> None:
    views = ViewWrites()
    views.own("degree", bag=True, committed={(1,): 2})
    assert views.changed("degree", {(1,): 1, (2,): 2}) == {(1,): 3, (2,): 2}
    assert views.changed("degree", {(1,): -3}) == {(1,): 0}  # a later piece of the tick


def test_a_lost_tick_is_written_again_from_the_committed_view() -> None:
    views = ViewWrites()
    views.own("degree", bag=True, committed={(1,): 2})
    views.changed("degree", {(1,): 1})
    views.aborted()
    assert views.changed("degree", {(1,): 1}) == {(1,): 3}
    views.committed()
    assert views.changed("degree", {(1,): -3}) == {(1,): 0}
    views.committed()
    assert views.changed("degree", {(1,): 1}) == {(1,): 1}


def test_a_replaced_view_writes_what_differs_and_tombstones_the_rest() -> None:
    views = ViewWrites()
    views.own("degree", bag=True, committed={(1,): 1, (2,): 2})
    writes = views.replaced("degree", {(1,): 1, (2,): 2}, {(2,): 2, (3,): 4})
    assert writes == {(1,): 0, (3,): 4}
    assert views.changed("degree", {(3,): -1, (2,): 1}) == {(3,): 3, (2,): 3}


def test_a_forgotten_query_starts_again_from_what_it_owns() -> None:
    views = ViewWrites()
    views.own("degree", bag=True, committed={(1,): 5})
    views.forget("degree")
    views.own("degree", bag=True, committed={})
    assert views.changed("degree", {(1,): 1}) == {(1,): 1}


def test_rows_of_1_and_true_are_two_rows_of_a_bag_view() -> None:
    views = ViewWrites()
    views.own("values", bag=True, committed={Row((1,)): 2, Row((True,)): 1})
    assert views.changed("values", {Row((True,)): -1, Row((1.0,)): 1}) == {
        Row((True,)): 0, Row((1.0,)): 1}
    views.committed()
    assert views.changed("values", {Row((1,)): 1}) == {(1,): 3}
    assert views.replaced("values", {Row((1,)): 2, Row((True,)): 1}, {Row((1.0,)): 1}) == {
        Row((1,)): 0, Row((True,)): 0, Row((1.0,)): 1}
