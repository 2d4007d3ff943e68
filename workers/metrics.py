"""Every Prometheus metric deltalog exports (base units, ``_total`` counters, bounded labels).

Labels are bounded: ``query`` by the registered queries (series are removed when a query
leaves the worker), ``index`` by the four indexes, ``executor`` by ``local``/``spark``,
``code`` by :class:`workers.errors.ErrorCode`, the rest by a fixed handful of values.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                   0.5, 1, 2.5, 5, 10)

# -- input -------------------------------------------------------------------------------------
TX_CONSUMED = Counter("deltalog_tx_consumed_total", "Transactions read from the tx topic.")
TX_REFUSED = Counter("deltalog_tx_refused_total", "Transactions refused (sent to the DLQ).",
                     ["code"])
DLQ_RECORDS = Counter("deltalog_dlq_records_total", "Records written to the dead-letter topic.",
                      ["code"])
LAG_TX = Gauge("deltalog_consumer_lag_records",
               "Transactions in the tx topic this worker has not applied yet.")
LAG_SECONDS = Gauge("deltalog_consumer_lag_seconds",
                    "Age of the last applied transaction while more wait in the log, else 0.")

# -- ticks and queries ---------------------------------------------------------------------------
TICKS = Counter("deltalog_ticks_total", "Ticks committed.")
TICK_SECONDS = Histogram("deltalog_tick_duration_seconds",
                         "Time from a tick's first poll to its Kafka commit.",
                         buckets=LATENCY_BUCKETS)
TICK_PHASE_SECONDS = Histogram("deltalog_tick_phase_seconds",
                               "A committed tick's time by phase, from its oldest "
                               "transaction's timestamp to its Kafka commit: queued, poll, "
                               "normalise, step, write, offsets, commit "
                               "(workers.runtime.phases).", ["phase"],
                               buckets=LATENCY_BUCKETS)
TICK_CHUNKS = Counter("deltalog_tick_chunks_total",
                      "Pieces the ticks' deltas were stepped in (one per tick unless the delta "
                      "is larger than tick_max_datoms).")
STEP_SECONDS = Histogram("deltalog_query_step_duration_seconds",
                         "Time to step one query through one tick's delta.", ["query"],
                         buckets=LATENCY_BUCKETS)
STEPS = Counter("deltalog_query_steps_total", "Query steps by the executor that ran them.",
                ["executor"])
EXTENDER_WORK = Counter("deltalog_extender_work_total",
                        "Join work: extender operations (calls) and the values they touched "
                        "(elements).", ["kind"])
SPARK_JOB_SECONDS = Histogram("deltalog_spark_job_duration_seconds",
                              "Time of one query's step on Spark (a tick steps its queries "
                              "in one job, its time shared equally among them).",
                              buckets=LATENCY_BUCKETS)
SPARK_ASSUMED_STEPS = Counter(
    "deltalog_spark_assumed_steps_total",
    "Small ticks under executor=spark stepped in their read's job by an assumed delta: "
    "used (the tick is one job), or stepped again by the driver's own (two jobs).", ["outcome"])
RESULT_ROWS = Counter("deltalog_result_rows_total", "Result change rows written.", ["sign"])
QUERIES = Gauge("deltalog_queries", "Queries this worker maintains.")
LAST_TX = Gauge("deltalog_last_committed_tx", "Offset of the last transaction committed.")

# -- state ---------------------------------------------------------------------------------------
ARRANGEMENT_DATOMS = Gauge("deltalog_arrangement_datoms", "Datoms in each shared index.",
                           ["index"])
ARRANGEMENT_BYTES = Gauge("deltalog_arrangement_bytes",
                          "Estimated memory of each shared index.", ["index"])
DICTIONARY_VALUES = Gauge("deltalog_dictionary_values",
                          "Distinct values the value dictionary has numbered, by where it keeps "
                          "them: memory, or files (the driver's under executor=spark).", ["kept"])
SNAPSHOT_SECONDS = Histogram("deltalog_snapshot_duration_seconds", "Time to write a snapshot.")
SNAPSHOT_AGE = Gauge("deltalog_snapshot_age_seconds",
                     "Time since this worker wrote a snapshot, or saw a newer one in the store "
                     "it shares (or started).")

# -- Kafka output --------------------------------------------------------------------------------
KAFKA_TRANSACTIONS = Counter("deltalog_kafka_transactions_total",
                             "Output Kafka transactions by outcome (committed, aborted).",
                             ["outcome"])

# -- limits --------------------------------------------------------------------------------------
MEMORY_BYTES = Gauge("deltalog_process_resident_memory_bytes",
                     "Resident memory of the worker process.")
MEMORY_LIMIT = Gauge("deltalog_memory_limit_bytes",
                     "The configured memory ceiling (0: none).")
THROTTLED = Gauge("deltalog_backpressure_throttled",
                  "1 while ticks are shrunk because memory is over the ceiling.")
TICK_LIMIT_TX = Gauge("deltalog_tick_limit_transactions",
                      "Transactions the next tick may take (tick_max_tx, less while throttled).")
