"""A batch of the transaction log applied as one engine tick (step 3 of a worker's tick).

The batch's records are decoded, then normalised and stepped together
(``Engine.transact_in_chunks``); the undecodable and the refused ones become refusals, kept
in offset order for the log's dead letters (:mod:`workers.runtime.dead_letters`), and the
transactions' reports with them.  A tick whose delta is larger than ``tick_max_datoms`` is
stepped in pieces (:class:`~workers.runtime.pieces.Pieces`): the first is held like a whole
tick, the others are computed as the tick's transaction writes them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from workers import metrics
from workers.collector import collector_paused
from workers.config import WorkerConfig
from workers.engine import Changes
from workers.errors import WorkersError
from workers.kafka.avro import AvroCodec, DecodeError, registry_for
from workers.kafka.messages import transaction_from_avro
from workers.kafka.source import TxRecord
from workers.runtime.dead_letters import DeadLetters, Refused
from workers.runtime.engine_role import EngineRole
from workers.runtime.observe import observe_steps
from workers.runtime.phases import TickPhases
from workers.runtime.pieces import Pieces
from workers.runtime.tick_writer import TickOutput
from workers.zset import add_into


class BatchApplier:
    """Applies the batches of a worker that writes its database (not a follower's)."""

    def __init__(self, config: WorkerConfig, role: EngineRole, dead_letters: DeadLetters,
                 phases: TickPhases) -> None:
        self._chunk_datoms = config.tick_max_datoms
        self._role = role
        self._dead_letters = dead_letters
        self._phases = phases
        self._codec = AvroCodec("transaction", registry_for(config.registry_url))

    def apply(self, batch: Sequence[TxRecord], output: TickOutput) -> Pieces:
        """Apply a batch of transactions as one tick.  Undecodable and refused ones are kept
        for their dead letters.  The first piece of the change goes into ``output``; the
        rest (a tick larger than ``tick_max_datoms``) are returned, computed as the tick's
        transaction writes them."""
        engine = self._role.engine
        refused: list[tuple[TxRecord, WorkersError]] = []
        with collector_paused():  # the batch's forms are made and freed inside
            pieces, refusals = engine.transact_in_chunks(self._decoded(batch, refused),
                                                         self._chunk_datoms)
        self._phases.mark("normalise")
        self._dead_letters.reported(engine.tempids)
        stream = Pieces(self._observed(piece) for piece in pieces)
        if batch:
            engine.seek(batch[-1].offset)
        by_offset = {record.offset: record for record in batch}
        refused += [(by_offset[refusal.tx_id], refusal.error) for refusal in refusals]
        metrics.TX_CONSUMED.inc(len(batch) - len(refused))
        for record, err in sorted(refused, key=lambda pair: pair[0].offset):
            metrics.TX_REFUSED.labels(err.code.value).inc()
            self._dead_letters.refused([Refused(record.offset, err.code.value, str(err))])
        self._role.stamp(self._dead_letters)
        for query, rows in stream.first().items():
            add_into(output.changes.setdefault(query, {}), rows)
        self._phases.mark("step")  # a tick in pieces steps the others in "write"
        return stream

    def _decoded(self, batch: Sequence[TxRecord], refused: list[tuple[TxRecord, WorkersError]]
                 ) -> Iterator[tuple[Any, int]]:
        """The batch's transactions as forms with their offsets; the undecodable ones go to
        ``refused``."""
        for record in batch:
            try:
                yield transaction_from_avro(self._codec.decode(record.value)), record.offset
            except DecodeError as error:
                refused.append((record, error))

    def _observed(self, piece: Changes) -> Changes:
        observe_steps(self._role.engine.last_work)
        return piece
