"""ResultSink: a tick's result rows, progress and dead letters, in one Kafka transaction.

Consumers reading ``read_committed`` see a tick whole or not at all.  ``init`` calls
``init_transactions`` with the worker's transactional id, which aborts whatever a previous
incarnation left open and fences it: a zombie can no longer commit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from workers.config import WorkerConfig
from workers.errors import ErrorCode, WorkersError
from workers.kafka.avro import AvroCodec, registry_for
from workers.kafka.callbacks import pending_error
from workers.kafka.closing import Closing, close_producer
from workers.kafka.hanging import abort_on
from workers.kafka.row_records import Headers, RowRecords
from workers.kafka.topics import Topics
from workers.kafka.watchdog import TRANSACTION_TIMEOUT_S, watchdog
from workers.zset.row import Row

QUEUE_FULL_WAIT_S = 0.1  # back off while librdkafka's send queue drains
ANSWER_POLL_S = 0.01  # the longest one wait for a transaction's acknowledgements
RETRY_FOR_S = 120.0  # a retriable transaction call is tried again this long
RETRY_WAIT_S = 0.5
# send_offsets_to_transaction, which librdkafka 2.16 can leave blocked for ever after a broker
# restart (its timeout never checked, confluentinc/librdkafka#5456; the group coordinator's
# lookup never started again, #5511), is waited for this long, then given up: the tick is
# lost like any failed transaction (see ``ResultSink.send_offsets``).  Under ``HUNG_CALL_S``.
SEND_OFFSETS_BOUND_S = TRANSACTION_TIMEOUT_S + 15.0
# Records librdkafka may queue before ``produce`` waits (its default: 100,000).  A full queue
# of change and view records took ~33 MB more than one of this size, and glibc kept it after
# the queue drained; the big ticks were no slower (docs/fleet.md, "Worker memory").
QUEUE_MAX_RECORDS = 10_000
log = logging.getLogger(__name__)


class ResultSink(Closing):
    """A transactional producer writing deltalog's output records."""

    def __init__(self, config: WorkerConfig, topics: Topics, transactional_id: str) -> None:
        registry = registry_for(config.registry_url)
        self._producer = Producer(config.kafka(**{
            "transactional.id": transactional_id,
            "enable.idempotence": True,
            # A record leaves within a millisecond of its produce: the offsets wait for the
            # first answer (send_offsets), not for a flush that would send them at once.
            "linger.ms": 1,
            "queue.buffering.max.messages": QUEUE_MAX_RECORDS,
            # librdkafka's retry backoff stays its default (100 ms doubling to 1 s): with
            # 5 ms, send_offsets_to_transaction hung after a broker restart more often
            # (test_sink_survives_a_broker_restart's worker); ``send_offsets`` waits for the
            # tick's acknowledgements instead, so AddOffsetsToTxn seldom meets
            # CONCURRENT_TRANSACTIONS and its backoff.
            # A worker killed mid-tick leaves its transaction open until this timeout, and
            # read_committed readers (a new owner reading progress) wait for it.
            "transaction.timeout.ms": config.transaction_timeout_ms,
            "on_delivery": self._delivered,
        }))
        self._topics = topics
        self._rows = RowRecords(registry)
        self._progress = AvroCodec("progress", registry)
        self._dead_letters = AvroCodec("dead_letter", registry)
        self._reports = AvroCodec("tx_report", registry)
        self.worker = transactional_id
        self.written: set[str] = set()  # the topics the transaction of the moment wrote to
        # its records not known to be in the log: the transaction must not commit
        self._unconfirmed: list[str] = []
        self._produced = 0  # its records produced
        self._answered = 0  # its records the broker answered (acknowledged or not)

    def init(self) -> None:
        self._retried(self._producer.init_transactions)

    def begin(self) -> None:
        self.written = set()
        self._unconfirmed = []
        self._produced = self._answered = 0
        self._rows.begin()
        self._call(self._producer.begin_transaction)

    def change(self, query: str, registration: int, row: Row, weight: int, tx_first: int,
               tx_last: int, snapshot: bool = False) -> bytes:
        """A change row; returns its key (the row's, as its view record has it too)."""
        record = self._rows.change(query, registration, row, weight, tx_first, tx_last,
                                   snapshot)
        self._produce(self._topics.results(query), *record)
        return record[0]

    def change_and_view(self, query: str, registration: int, row: Row, weight: int,
                        view_weight: int, tx_first: int, tx_last: int) -> None:
        """A change row and the row's weight in the view now (:meth:`view`), the row encoded
        once for both."""
        change, view = self._rows.change_and_view(query, registration, row, weight,
                                                  view_weight, tx_first, tx_last)
        self._produce(self._topics.results(query), *change)
        self._produce(self._topics.view(query), *view)

    def view(self, query: str, registration: int, row: Row, weight: int, tx_last: int,
             key: bytes | None = None) -> None:
        """A row's weight in the view now; weight 0: it left (a tombstone).  ``key``: the
        row's key if already encoded."""
        self._produce(self._topics.view(query),
                      *self._rows.view(query, registration, row, weight, tx_last, key))

    def view_marker(self, query: str, registration: int, tx_last: int) -> None:
        """The last record of the tick in the view topic: the view is complete at tx_last."""
        self._produce(self._topics.view(query),
                      *self._rows.view_marker(query, registration, tx_last))

    def progress(self, query: str, registration: int, tx_last: int) -> None:
        self._produce(self._topics.progress, query.encode(), self._progress.encode(
            {"query": query, "registration": registration, "tx_last": tx_last,
             "worker": self.worker}))

    def dead_letter(self, topic: str, partition: int, offset: int, code: str, reason: str,
                    payload: bytes) -> None:
        self._produce(self._topics.dlq, None, self._dead_letters.encode(
            {"topic": topic, "partition": partition, "offset": offset, "code": code,
             "reason": reason, "payload": payload, "worker": self.worker}))

    def report(self, tx: int, tempids: Mapping[Any, int]) -> None:
        """The transaction report of the log's transaction ``tx``: its tempids' ids."""
        self._produce(self._topics.reports, str(tx).encode(), self._reports.encode(
            {"tx": tx, "tempids": [{"tempid": t, "id": i} for t, i in tempids.items()]}))

    def send_offsets(self, offsets: list[Any], group_metadata: Any) -> None:
        """Tie the transaction to the consumer group's generation: it fails if this worker
        no longer owns the partitions it read (a zombie is fenced).

        The call runs on a thread of its own and is waited for ``SEND_OFFSETS_BOUND_S``:
        after a broker restart librdkafka 2.16 could leave it blocked for ever (#5456, #5511;
        the watchdog then ended the worker).  Past the bound the transaction is given up
        (``TransactionFailed``): the worker drops this producer and its
        ``init_transactions`` of a new one with the same transactional id aborts the
        transaction and fences this one, as for any lost tick (``Worker._lost``).  Safe
        because nothing is committed yet: a producer never asked to commit cannot commit,
        and a call that completes later only adds to a transaction that is aborted.  The
        blocked thread keeps the producer alive; it is never used again.  (Asking the
        blocked producer for metadata every 5 s did not set it going: with debug logs, its
        AddOffsetsToTxn answered, no TxnOffsetCommit ever left, and the broker handle
        decommissioned during the outage stayed "terminating in state INIT: 2 refcnts" — the
        cached group coordinator of #5511 — through 8 such requests.)

        One of the tick's records is answered first.  A transaction begun within a few ms
        of the last commit finds the coordinator still writing that commit's markers, and a
        request meeting ``CONCURRENT_TRANSACTIONS`` is retried after a backoff: 20 ms for the
        produce's AddPartitionsToTxn, but ``retry.backoff.ms`` (100 ms, doubling) for
        AddOffsetsToTxn.  A record leaves only once its partition is registered, so once
        one is answered the transaction is the coordinator's ongoing one and AddOffsetsToTxn
        passes at once (at 3% load the median went from 49–62 to 18–20 ms and the p99 from
        211–236 to 75–90 ms when the offsets first waited).  The other answers come
        meanwhile — ``commit`` waits for them all — where waiting for them here (a flush)
        held AddOffsetsToTxn behind the tick's last produce request (docs/benchmarks.md,
        fourteenth session)."""
        if offsets:
            self._one_answered()
            self._bounded(self._producer.send_offsets_to_transaction, offsets, group_metadata,
                          TRANSACTION_TIMEOUT_S)

    def _one_answered(self) -> None:
        """Serve the acknowledgements until the broker answered one of the transaction's
        records, if it has any."""
        deadline = time.monotonic() + TRANSACTION_TIMEOUT_S
        while self._produced and not self._answered and time.monotonic() < deadline:
            self._call(self._producer.poll, ANSWER_POLL_S)

    def _bounded(self, method: Any, *args: Any) -> None:
        """A transaction call that commits nothing, given up after ``SEND_OFFSETS_BOUND_S``
        (:meth:`send_offsets`)."""
        name = getattr(method, "__name__", "call")
        outcome: list[BaseException | None] = []
        done = threading.Event()

        def call() -> None:
            try:
                method(*args)
                outcome.append(None)
            except BaseException as error:  # handed to the waiting thread
                outcome.append(error)
            finally:
                done.set()

        with watchdog(f"Kafka {name}"):
            threading.Thread(target=call, name=f"kafka-{name}", daemon=True).start()
            if not done.wait(SEND_OFFSETS_BOUND_S):
                log.error("Kafka %s still blocked after %.0f s (librdkafka #5456, #5511): "
                          "the transaction is given up", name, SEND_OFFSETS_BOUND_S)
                raise TransactionFailed(f"Kafka transaction failed: {name} blocked for "
                                        f"{SEND_OFFSETS_BOUND_S:.0f} s, given up")
        error = outcome[0]
        if isinstance(error, KafkaException):
            raise _failed(error) from error
        if error is not None:
            raise error

    def commit(self) -> None:
        """Commit once every record of the transaction is acknowledged with its offset
        (:meth:`_delivered`); a retriable failure means the outcome is not known yet, so the
        commit is tried again (for as long as a broker outage may last), never given up."""
        self._call(self._producer.flush, TRANSACTION_TIMEOUT_S)
        if self._unconfirmed:
            raise TransactionFailed(
                f"Kafka transaction given up: {len(self._unconfirmed)} of its records are not "
                f"known to be written ({'; '.join(self._unconfirmed[:3])})")
        self._retried(self._producer.commit_transaction)

    def _delivered(self, error: KafkaError | None, message: Any) -> None:
        """A record's acknowledgement: one that failed, or came without an offset, is not
        known to be in the log, and its transaction is given up rather than committed.
        librdkafka 2.16 reports a record the broker answered as a duplicate
        (``DUPLICATE_SEQUENCE_NUMBER``) as written, with no offset; with Kafka 4.3.1 the
        first records on a just-created topic were so acknowledged and were not in the log,
        and the commit went through without them — a query's snapshot row missing from its
        change stream (CI's chaos run; 1 partition in 4,000 in a loop of transactions that
        write to topics created just before, docs/pipeline.md "Acknowledged, not
        written")."""
        self._answered += 1
        if error is not None or message.offset() is None:
            self._unconfirmed.append(f"{message.topic()}[{message.partition()}]: "
                                     f"{'no offset' if error is None else error.str()}")

    def worker_topics(self) -> set[str]:
        """Every topic the workers' transactions write now: what a worker starting after a
        crash sweeps (:mod:`workers.kafka.hanging`)."""
        try:
            metadata = self._producer.list_topics(timeout=TRANSACTION_TIMEOUT_S).topics
        except KafkaException as err:
            raise _failed(err) from err
        return {topic for topic in metadata if self._topics.written_by_workers(topic)}

    def sweep(self, topics: set[str]) -> None:
        """End what a lost transaction of this transactional id may have left hanging on
        ``topics`` — and on every other topic the workers write — in one aborted
        transaction over all their partitions (:mod:`workers.kafka.hanging`).  Before this
        producer commits anything: a commit would end the hanging records as committed.
        Every topic, because a tick whose commit succeeded can hang too (the broker skipped
        its markers, ``Worker._reown_all``): the sweep must end it on all its partitions
        alike, else a partition left out has it committed by the next commit while the
        others have it aborted.  None open now."""
        def sweep_partitions() -> None:
            metadata = self._producer.list_topics(timeout=TRANSACTION_TIMEOUT_S).topics
            unknown = sorted(topic for topic in topics if not (
                topic in metadata and metadata[topic].error is None
                and metadata[topic].partitions))
            if unknown:  # never skipped: what hangs there would stay, and a commit end it
                raise KafkaException(KafkaError(  # as committed (hanging.abort_on)
                    KafkaError.UNKNOWN_TOPIC_OR_PART, "the sweep finds no partitions of "
                    f"{', '.join(unknown)} in the metadata: sweep again", retriable=True))
            every = topics | {topic for topic in metadata
                              if self._topics.written_by_workers(topic)}
            abort_on(self._producer, [
                TopicPartition(topic, partition) for topic in sorted(every)
                for partition in sorted(metadata[topic].partitions)])

        self._call(sweep_partitions)

    def _retried(self, method: Any) -> None:
        """A transaction call, tried again while it fails retriably (the broker is away)."""
        deadline = time.monotonic() + RETRY_FOR_S
        while True:
            try:
                self._call(method, TRANSACTION_TIMEOUT_S)
                return
            except TransactionFailed as failure:
                if not failure.retriable or time.monotonic() > deadline:
                    raise
                time.sleep(RETRY_WAIT_S)

    def _produce(self, topic: str, key: bytes | None, value: bytes | None,
                 headers: Headers | None = None) -> None:
        """Queue one record; a full queue waits for it to drain, a producer fenced meanwhile
        (say, its transaction outlived ``transaction.timeout.ms``) fails the transaction."""
        self.written.add(topic)
        while True:
            try:
                self._producer.produce(topic, value, key, headers=headers)
                self._produced += 1
                return
            except BufferError:
                self._call(self._producer.poll, QUEUE_FULL_WAIT_S)
            except KafkaException as err:
                raise _failed(err) from err

    def close(self) -> None:
        """Close between transactions: records not committed mean nothing, so none is waited
        for.  Not for a producer whose transaction failed: closing aborts the transaction
        first, the very call librdkafka can hang in (see ``TickWriter._lost``)."""
        with watchdog("Kafka close"):
            close_producer(self._producer, 0.0)

    @staticmethod
    def _call(method: Any, *args: Any) -> None:
        """A transaction call, under the watchdog."""
        try:
            with watchdog(f"Kafka {getattr(method, '__name__', 'call')}"):
                method(*args)
        except KafkaException as err:
            raise _failed(err) from err
        except SystemError as error:  # an acknowledgement served while a fatal error pends
            pending = pending_error(error)
            raise _failed(pending) from pending


def _failed(err: KafkaException) -> TransactionFailed:
    error = err.args[0]
    return TransactionFailed(f"Kafka transaction failed: {error.str()}",
                             retriable=error.retriable())


class TransactionFailed(WorkersError):
    """A Kafka transaction call failed; the tick is sent again with a new producer.
    ``retriable``: the same call may succeed if tried again (the broker is away)."""

    code = ErrorCode.KAFKA

    def __init__(self, message: str, retriable: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable
