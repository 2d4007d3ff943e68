"""A task's share of a step's work: the parts of a GenericJoin that run apart and add up.

A step's derivation change is linear in the seed rows of each term (a join distributes
over ``+``), and an evaluation is linear in the first variable's values: so ``count``
tasks, task ``index`` taking the seed rows whose hash is ``index`` (mod ``count``), or the
first level's rows whose new value is, together derive exactly what one process derives.
Rows and ids are tuples of ints and ints, whose hashes Python does not randomise: every
process agrees on the shares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workers.arrangements.batch import Ints, Mask
from workers.zset import ZSet
from workers.zset.row import Row


@dataclass(frozen=True, slots=True)
class Share:
    index: int
    count: int

    def rows(self, rows: ZSet[Row]) -> ZSet[Row]:
        """The seed rows of this share."""
        if self.count == 1:
            return rows
        return {row: w for row, w in rows.items() if hash(row) % self.count == self.index}

    def positions(self, length: int) -> Ints:
        """The seed rows of this share, for a frame of ``length`` sorted rows."""
        return np.arange(self.index, length, self.count)

    def holds(self, row: Row) -> bool:
        """Whether a first level's row (its last value new) is in this share."""
        return self.count == 1 or row[-1] % self.count == self.index

    def keys(self, keys: Ints) -> Mask:
        """:meth:`holds`, for a column of a first level's new values."""
        return keys % self.count == self.index


WHOLE = Share(0, 1)  # all of it: one process
