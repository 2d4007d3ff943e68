"""What a tick writes to the view topics of the queries it changes (:mod:`workers.kafka.views`).

A view row's value is the row's weight in the result *now*, not its change.  In a set (every
query but a bag) a row weighs 1 while present: a change ``+1`` writes 1 and ``-1`` a
tombstone, with no state kept.  A bag (``:with`` without aggregates) changes multiplicities by
any amount, so its committed view is kept here, and a tick's writes are staged beside it until
the tick's Kafka transaction commits (a lost tick is written again from the same base).

Algebra: with ``V`` the committed view and ``Δ`` the tick's change, the tick writes
``(V + Δ)[r]`` for every row ``r`` of ``Δ`` (0: a tombstone); a view *replaced* (registration,
rebuild) from what its topic holds, ``H``, to ``W`` writes ``W[r]`` where ``W[r] ≠ H[r]``.
"""

from __future__ import annotations

from collections.abc import Mapping

from workers.zset import ZSet
from workers.zset.row import Row


class ViewWrites:
    """The weights to write to the views of the queries owned here."""

    def __init__(self) -> None:
        self._bags: dict[str, ZSet[Row]] = {}  # bag query -> its committed view
        self._staged: dict[str, ZSet[Row]] = {}  # this tick's writes to bag views

    def own(self, query: str, bag: bool, committed: Mapping[Row, int]) -> None:
        """A query taken up here, whose view topic holds ``committed``."""
        self.forget(query)
        if bag:
            self._bags[query] = dict(committed)

    def forget(self, query: str) -> None:
        self._bags.pop(query, None)
        self._staged.pop(query, None)

    def changed(self, query: str, change: Mapping[Row, int]) -> ZSet[Row]:
        """The new weights of the rows ``change`` touches (0: the row left)."""
        if query not in self._bags:
            return {row: 1 if weight > 0 else 0 for row, weight in change.items()}
        committed, staged = self._bags[query], self._staged.setdefault(query, {})
        for row, weight in change.items():
            staged[row] = staged.get(row, committed.get(row, 0)) + weight
        return {row: staged[row] for row in change}

    def replaced(self, query: str, held: Mapping[Row, int], view: Mapping[Row, int]
                 ) -> ZSet[Row]:
        """The writes that turn ``held`` (what the view topic holds) into ``view``."""
        writes = {row: view.get(row, 0) for row in held.keys() | view.keys()
                  if view.get(row, 0) != held.get(row, 0)}
        if query in self._bags:
            self._staged.setdefault(query, {}).update(writes)
        return writes

    def committed(self) -> None:
        """The tick's transaction committed: its writes are the views now."""
        for query, staged in self._staged.items():
            view = self._bags[query]
            for row, weight in staged.items():
                if weight:
                    view[row] = weight
                else:
                    view.pop(row, None)
        self._staged.clear()

    def aborted(self) -> None:
        """The tick's transaction was lost: the views are what they were."""
        self._staged.clear()
