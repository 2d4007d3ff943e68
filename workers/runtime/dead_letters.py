"""The transaction log's dead letters and transaction reports, written exactly once by a fleet.

Dead letters of the transaction log are written by the owner of the queries topic's
partition 0, with their own progress ``D`` (the :data:`DEAD_LETTERS` key of
``deltalog.progress``) in the same Kafka transaction, so they change hands like a query: the
new owner writes the refusals after ``D`` and none before.  The transaction reports
(``deltalog.reports``: the ids a transaction's tempids were given) go the same way, under the
same ``D``.  Every worker keeps the refusals and reports it met after the committed ``D`` it
last read (offset, code, reason; the records themselves are read again from the log when
needed), and starts from a snapshot no later than ``D``: whichever worker takes partition 0
over knows every refusal and report after ``D``.  (Under ``spark_sharing=fleet`` a follower
does not normalise: a follower taking partition 0 over writes the refusals its writer
stamped, but not the reports between ``D`` and the hand-over.)

The protocol, as this worker sees it:

1. every tick, the reports and refusals it met are kept (:meth:`DeadLetters.reported`,
   :meth:`DeadLetters.refused`);
2. a read of the committed progress that shows a newer ``D`` forgets those up to it, while
   another worker writes them (:meth:`DeadLetters.read`);
3. partition 0 coming here: it writes from the committed ``D`` on (:meth:`DeadLetters.take`);
4. each tick it writes the refusals after ``D`` (:meth:`DeadLetters.due`), the reports, and
   ``D`` = the tick's last transaction, in the tick's Kafka transaction; once that commits,
   they are forgotten (:meth:`DeadLetters.committed`);
5. partition 0 revoked: it stops writing them (:meth:`DeadLetters.hand_over`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.source import TxRecord
from workers.runtime.ports import OpenSource, Sink

DEAD_LETTERS = "#tx-dead-letters"  # progress key of the tx log's dead letters (not a query name)
REREAD_TIMEOUT_S = 300.0  # reading refused records again from the log (outlasts a broker restart)
POLL_S = 0.2  # one wait for the records read again


@dataclass(frozen=True, slots=True)
class Refused:
    """A record of the transaction log refused (undecodable, or refused by the engine)."""

    offset: int
    code: str
    reason: str


class DeadLetters:
    """The refusals and reports this worker met after the committed ``D``, and ``D`` itself
    while this worker writes them (``done``; None: another worker does)."""

    def __init__(self, config: WorkerConfig, topic: str, open_source: OpenSource) -> None:
        self._config = config
        self._topic = topic  # the transaction log
        self._open_source = open_source
        self._refused: list[Refused] = []  # refusals after the last dead-letter progress read
        self._reports: dict[int, dict[Any, int]] = {}  # tx -> its tempids' ids, after it too
        self.done: int | None = None  # the owner of partition 0: its D

    @property
    def writing(self) -> bool:
        """Whether this worker writes the log's dead letters (it owns partition 0)."""
        return self.done is not None

    def reported(self, reports: Mapping[int, dict[Any, int]]) -> None:
        """Step 1: a tick's reports (its transactions' tempids' ids)."""
        self._reports.update(reports)

    def refused(self, refused: Iterable[Refused]) -> None:
        """Step 1: a tick's refusals (in offset order, after those kept)."""
        self._refused += refused

    def refusals(self) -> list[tuple[int, str, str]]:
        """The refusals kept, as (offset, code, reason): what a shared state is stamped with."""
        return [(r.offset, r.code, r.reason) for r in self._refused]

    def read(self, progress: Mapping[str, Mapping[str, Any]]) -> None:
        """Step 2: the committed progress table was read; while another worker writes the
        dead letters, those it committed are forgotten."""
        dead_letters = progress.get(DEAD_LETTERS)
        if dead_letters is not None and self.done is None:
            self._forget(int(dead_letters["tx_last"]))

    def take(self, progress: Mapping[str, Mapping[str, Any]], position: int) -> None:
        """Step 3: partition 0 came here: write from the committed ``D`` (none: from the
        ``position``)."""
        dead_letters = progress.get(DEAD_LETTERS)
        self.committed(position if dead_letters is None else int(dead_letters["tx_last"]))

    def stamped(self, stamped: Sequence[tuple[int, str, str]]) -> None:
        """The refusals a shared state's version is stamped with (offset, code, reason):
        those after ``D`` its last writer met and did not write."""
        done = self.done
        assert done is not None
        known = {refused.offset for refused in self._refused}
        self._refused += [Refused(*each) for each in stamped
                          if each[0] > done and each[0] not in known]
        self._refused.sort(key=lambda refused: refused.offset)

    def due(self, batch: Sequence[TxRecord]) -> list[tuple[Refused, bytes]]:
        """Step 4: the dead letters this tick writes, with their records: as the owner of
        partition 0, every refusal after ``D`` (those of a hand-over may precede this
        ``batch``: their records are read again from the log)."""
        done = self.done
        if done is None:
            return []
        due = [refused for refused in self._refused if refused.offset > done]
        payloads = {record.offset: record.value for record in batch}
        missing = {refused.offset for refused in due} - payloads.keys()
        if missing:
            payloads |= self._reread(missing)
        return [(refused, payloads[refused.offset]) for refused in due]

    def _reread(self, offsets: set[int]) -> dict[int, bytes]:
        """The records of the transaction log at ``offsets``."""
        found: dict[int, bytes] = {}
        deadline = time.monotonic() + REREAD_TIMEOUT_S
        with self._open_source(min(offsets)) as source:
            while len(found) < len(offsets):
                if time.monotonic() > deadline:
                    raise WorkersError(f"cannot read tx log records {sorted(offsets)} again",
                                       code=ErrorCode.KAFKA)
                found |= {record.offset: record.value for record in source.next_batch(
                    self._config.tick_max_tx, self._config.tick_max_bytes, POLL_S,
                    until=max(offsets)) if record.offset in offsets}
        return found

    def write(self, sink: Sink, letters: list[tuple[Refused, bytes]], tx_last: int
              ) -> int | None:
        """Step 4, in the tick's transaction: the ``letters`` (:meth:`due`), then as the
        owner of partition 0 the reports after ``D`` and ``D`` moved to ``tx_last``.  The
        ``D`` written (None: none), for :meth:`committed` once the transaction commits."""
        for refused, payload in letters:
            sink.dead_letter(self._topic, 0, refused.offset, refused.code, refused.reason,
                             payload)
        done = self.done
        if done is None:
            return None
        for tx in sorted(tx for tx in self._reports if tx > done):
            sink.report(tx, self._reports[tx])
        done = max(done, tx_last)
        sink.progress(DEAD_LETTERS, -1, done)
        return done

    def committed(self, done: int) -> None:
        """The log's dead letters are committed up to ``done`` (this worker writes them)."""
        self.done = done
        self._forget(done)

    def hand_over(self) -> None:
        """Step 5: partition 0 was revoked: another worker writes them from its ``D``."""
        self.done = None

    def _forget(self, done: int) -> None:
        """Refusals and reports up to ``done`` are committed."""
        self._refused = [refused for refused in self._refused if refused.offset > done]
        self._reports = {tx: tempids for tx, tempids in self._reports.items() if tx > done}


def snapshot_bound(progress: Mapping[str, Mapping[str, Any]]) -> int:
    """The last snapshot a worker may start from: the last transaction any query committed
    (-1: none) — snapshots are written after committed ticks, so one beyond it was left by
    another log (a topic deleted and created again), and a fleet with no query yet replays
    the log — and no later than the committed dead letters, whose refusals after them a
    worker must have met itself (docs/fleet.md)."""
    bound = max((int(p["tx_last"]) for p in progress.values()), default=-1)
    dead_letters = progress.get(DEAD_LETTERS)
    return bound if dead_letters is None else min(bound, int(dead_letters["tx_last"]))
