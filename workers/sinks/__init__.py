"""Sinks: a query's view kept in a database outside Kafka, exactly once.

``deltalog sink postgres`` (:class:`~workers.sinks.postgres.PostgresSink`) keeps a table equal
to the query's view: its rows and the change stream's position in the same database
transaction (docs/pipeline.md, "PostgreSQL").
"""

from workers.sinks.columns import Column, SinkError, columns_of
from workers.sinks.postgres import PostgresSink, default_table
from workers.sinks.table import SinkFenced, read_position, read_table

__all__ = ["Column", "PostgresSink", "SinkError", "SinkFenced", "columns_of", "default_table",
           "read_position", "read_table"]
