"""``deltalog sink postgres``: a query's view kept in a PostgreSQL table, exactly once.

The table has one row per row of the result, with its ``weight`` (1, or a bag's
multiplicity; :mod:`workers.sinks.columns` has the columns and their types); the position
table beside it (:mod:`workers.sinks.table`) says which registration's result the rows are,
after which transaction, and the next offset of ``deltalog.results.<query>`` to read.  Rows
and position change in the same database transaction, so a sink killed at any point resumes
exactly where its table is: no change lost, none applied twice.

Protocol (:meth:`PostgresSink.run`):

1. open the table (refused while another sink keeps it; the epoch raised, fencing older
   ones) and read the stored position;
2. the query's registration now (``R_now``, its offset in ``deltalog.queries``; waiting while
   it is not registered or not taken up by a worker);
3. if the position names ``R_now``: read the change stream from the stored offset.  Else —
   a new table, or the query registered anew since — **rebuild from the view**, as
   :func:`workers.kafka.clients.subscribe` starts:

   a. ``start`` = the change stream's last stable offset;
   b. the view read to a marker of ``R_now`` (the result of ``R_now`` after ``T``);
   c. one transaction: the table (made again if the query's columns changed) holds the
      view's rows, the position is ``(R_now, T, start)``;

4. read the change stream: a change joins iff its ``(registration, tx_last)`` is greater
   than the position's ``(R, T)`` (the others are in the view or of an older registration);
   the changes of whole ticks are summed, and written with the position — ``T`` their last
   ``tx_last``, the offset of the first record after them — in one transaction, once
   ``batch_rows`` are pending or ``commit_interval_s`` passed, and whenever the stream's end
   is reached (a committed Kafka transaction is then read whole);
5. rebuild (3a-c) when the position fell out of the stream's retention, when a change of a
   later registration arrives, or when ``deltalog.queries`` registers the query anew (a new
   result that is empty writes no change); stop when the query is removed (the table keeps
   its last result).

Broker or database trouble ends the current attempt; the sink starts again at step 1 after
``RETRY_S`` (its position is in the table, so nothing is lost or doubled by that).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import psycopg
from confluent_kafka import KafkaException

from workers.config import WorkerConfig
from workers.datalog import compile_query
from workers.errors import ErrorCode, WorkersError
from workers.kafka.views import read_views
from workers.sinks.columns import columns_of
from workers.sinks.source import (
    ChangeReader,
    Current,
    End,
    PositionLost,
    Record,
    Registered,
    current_registration,
    value_types,
)
from workers.sinks.table import Position, SinkFenced, SinkTable
from workers.zset import ZSet, add_into
from workers.zset.row import Row

log = logging.getLogger(__name__)

BATCH_ROWS = 20_000  # pending changed rows that make a commit at the next tick's end
COMMIT_INTERVAL_S = 1.0  # longest whole ticks wait for more before they are committed
POLL_S = 0.2  # one poll of the change stream, and the pause between waits for a worker
RETRY_S = 2.0  # pause before starting again after broker or database trouble


def default_table(query: str) -> str:
    """The table of a query when ``--table`` is not given: its name, ``.`` and ``-`` as
    ``_`` (query names allow them; SQL names would need quotes)."""
    return query.replace(".", "_").replace("-", "_").lower()


@dataclass(slots=True)
class _Pending:
    """Whole ticks read and not written yet: their summed change and last ``tx_last``."""

    delta: ZSet[Row] = field(default_factory=dict)
    tx: int | None = None  # the tick being read (None: nothing pending)
    since: float = 0.0
    rows: int = 0


class PostgresSink:
    """Keeps ``query``'s view in ``table`` of the database at ``dsn``."""

    def __init__(self, config: WorkerConfig, dsn: str, query: str, table: str | None = None,
                 batch_rows: int = BATCH_ROWS, commit_interval_s: float = COMMIT_INTERVAL_S
                 ) -> None:
        self.config, self.dsn, self.query = config, dsn, query
        self.table_name = table or default_table(query)
        self.batch_rows, self.commit_interval_s = batch_rows, commit_interval_s
        self.rows_written = 0  # changed rows written (view rows included)
        self.rebuilds = 0  # views loaded into a table that held one already
        self.ready = threading.Event()  # set once the table holds a view (tests, benchmarks)

    def run(self, stop: threading.Event) -> None:
        """Keep the table until ``stop`` is set, or the query is removed."""
        while not stop.is_set():
            try:
                self._keep(stop)
                return
            except SinkFenced:
                raise
            except (psycopg.OperationalError, KafkaException, WorkersError) as error:
                if isinstance(error, WorkersError) and error.code is not ErrorCode.KAFKA:
                    raise
                log.warning("sink %s: %s; starting again in %.0f s", self.table_name,
                            str(error).strip(), RETRY_S)
                stop.wait(RETRY_S)

    def _keep(self, stop: threading.Event) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn, \
                ChangeReader(self.config, self.query) as reader:
            table = SinkTable(conn, self.table_name)
            stored = table.open(self.query, self.config.topic_prefix)  # Step 1
            reader.note_registrations()
            current = self._registered(reader, stop)  # Step 2
            if current is None:
                return
            if stored.registration == current.offset and stored.columns is not None:
                position = stored  # Step 3
                reader.start(position.offset)
                log.info("sink %s resumes query %s at tx %d (offset %d)", table.qualified,
                         self.query, position.tx, position.offset)
            else:
                rebuilt = self._rebuild(table, reader, current, stop)
                if rebuilt is None:
                    return
                position = rebuilt
            self.ready.set()
            self._follow(table, reader, position, stop)

    def _registered(self, reader: ChangeReader, stop: threading.Event) -> Current | None:
        """The query's registration, once it is registered and its change stream exists."""
        waited = False
        while not stop.is_set():
            current = current_registration(self.config, self.query)
            if current is not None and reader.exists():
                return current
            if not waited:
                log.info("sink %s: waiting for query %s to be registered and taken up",
                         self.table_name, self.query)
                waited = True
            stop.wait(POLL_S * 5)
        return None

    def _rebuild(self, table: SinkTable, reader: ChangeReader, current: Current,
                 stop: threading.Event) -> Position | None:
        """Steps 3a-c: the table becomes the view of the query's registration now."""
        while True:
            start = reader.stable_end()  # Step 3a
            view = read_views(self.config, [self.query])[self.query]  # Step 3b
            while view.registration < current.offset:
                if stop.wait(POLL_S):
                    return None
                view = read_views(self.config, [self.query])[self.query]
            if view.registration == current.offset:
                break
            reader.note_registrations()  # registered anew meanwhile: that one's view
            again = self._registered(reader, stop)
            if again is None:
                return None
            current = again
        registration = current.registration
        query = compile_query(registration.edn, list(registration.inputs))
        columns = columns_of(query, value_types(self.config, view.tx))
        position = Position(current.offset, view.tx, start, columns)
        table.replace(columns, view.rows, position)  # Step 3c
        self.rows_written += len(view.rows)
        reader.start(start)
        log.info("sink %s holds the view of query %s (registration %d) after tx %d: %d rows",
                 table.qualified, self.query, current.offset, view.tx, len(view.rows))
        return position

    def _follow(self, table: SinkTable, reader: ChangeReader, position: Position,
                stop: threading.Event) -> None:
        """Steps 4 and 5."""
        pending = _Pending()
        registration = position.registration
        assert registration is not None  # the table holds a view
        while not stop.is_set():
            try:
                rebuild = None
                for event in reader.poll(POLL_S):
                    if isinstance(event, Record):
                        change = event.change
                        if change.registration > registration:
                            rebuild = "a change of a later registration"
                            break
                        if pending.tx is not None and change.tx_last != pending.tx and (
                                self._due(pending)):
                            position = self._write(table, pending, position, event.offset)
                            pending = _Pending()
                        if (change.registration, change.tx_last) <= (registration, position.tx):
                            continue
                        if pending.tx is None:
                            pending.since = time.monotonic()
                        add_into(pending.delta, {change.row: change.weight})
                        pending.tx, pending.rows = change.tx_last, pending.rows + 1
                    elif isinstance(event, End):
                        if pending.tx is not None:
                            position = self._write(table, pending, position, event.offset)
                            pending = _Pending()
                    elif isinstance(event, Registered) and event.offset > registration:
                        if event.removed:
                            log.warning("query %s was removed: sink %s stops, the table "
                                        "keeps its last result", self.query, table.qualified)
                            return
                        rebuild = "the query registered anew"
                        break
            except PositionLost as lost:
                rebuild = str(lost)
            if rebuild is not None:
                self.rebuilds += 1
                log.info("sink %s rebuilds from the view: %s", table.qualified, rebuild)
                reader.note_registrations()
                current = self._registered(reader, stop)
                rebuilt = None if current is None else self._rebuild(
                    table, reader, current, stop)
                if rebuilt is None:
                    return
                position, pending = rebuilt, _Pending()
                registration = rebuilt.registration
                assert registration is not None

    def _due(self, pending: _Pending) -> bool:
        return (pending.rows >= self.batch_rows
                or time.monotonic() - pending.since >= self.commit_interval_s)

    def _write(self, table: SinkTable, pending: _Pending, position: Position, offset: int
               ) -> Position:
        assert pending.tx is not None
        moved = Position(position.registration, pending.tx, offset, position.columns)
        table.apply(pending.delta, moved)
        self.rows_written += len(pending.delta)
        return moved

