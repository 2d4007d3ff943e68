"""The database an engine maintains queries over, behind one seam (:mod:`.base`).

- ``base``: the :class:`Database` protocol and the tick's protocol with it;
- ``memory``: every datom in the shared arrangements (``executor=local``, ``auto``);
- ``spark``: Spark's state files, read through a window (``executor=spark``; imported only
  then);
- ``replication``: alone, writer or follower of a database other engines share.
"""

from __future__ import annotations

from workers.arrangements import ArrangementRegistry
from workers.database.base import Database
from workers.database.memory import MemoryDatabase
from workers.database.replication import Alone, Caught, Replication, WorkerStamp
from workers.executors.dispatch import Dispatch

__all__ = ["Alone", "Caught", "Database", "MemoryDatabase", "Replication", "WorkerStamp",
           "open_database"]


def open_database(arrangements: ArrangementRegistry, dispatch: Dispatch) -> Database:
    """The database whose arrangements are ``arrangements``: Spark's state when every step
    runs on Spark (``executor=spark``), else the arrangements themselves."""
    if dispatch.mode != "spark":
        return MemoryDatabase(arrangements)
    from workers.database.spark import SparkDatabase

    spark = dispatch.spark
    assert spark is not None, "executor=spark starts Spark with the engine"
    return SparkDatabase(arrangements, spark, dispatch.memory_values)
