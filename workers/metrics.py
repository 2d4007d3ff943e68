"""Every Prometheus metric deltalog exports (base units, ``_total`` counters, bounded labels)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

TX_CONSUMED = Counter("deltalog_tx_consumed_total", "Transactions read from the tx topic.")
TX_REFUSED = Counter("deltalog_tx_refused_total", "Transactions refused (sent to the DLQ).",
                     ["code"])
DLQ_RECORDS = Counter("deltalog_dlq_records_total", "Records written to the dead-letter topic.",
                      ["code"])
TICKS = Counter("deltalog_ticks_total", "Ticks committed.")
TICK_SECONDS = Histogram("deltalog_tick_duration_seconds",
                         "Time from a tick's first poll to its Kafka commit.",
                         buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
RESULT_ROWS = Counter("deltalog_result_rows_total", "Result change rows written.", ["sign"])
KAFKA_TRANSACTIONS = Counter("deltalog_kafka_transactions_total",
                             "Kafka transactions by outcome.", ["outcome"])
QUERIES = Gauge("deltalog_queries", "Queries this worker maintains.")
LAST_TX = Gauge("deltalog_last_committed_tx", "Offset of the last transaction committed.")
LAG_TX = Gauge("deltalog_consumer_lag_records",
               "Transactions in the tx topic this worker has not applied yet.")
MEMORY_BYTES = Gauge("deltalog_process_resident_memory_bytes",
                     "Resident memory of the worker process.")
THROTTLED = Gauge("deltalog_backpressure_throttled",
                  "1 while ticks are shrunk because memory is over the ceiling.")
SNAPSHOT_SECONDS = Histogram("deltalog_snapshot_duration_seconds", "Time to write a snapshot.")

