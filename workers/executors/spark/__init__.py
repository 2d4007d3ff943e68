"""The Spark executor: the local executors' code run inside Spark tasks.

- ``session``: starts (or reaches) Spark, with a clear error when it cannot;
- ``backend``: when Spark starts for an engine, and what a failed Spark job does;
- ``state``: the database as immutable files under a state location (base + a batch per
  tick, a manifest per version, compacted in the background);
- ``cache``: the state as a task opens it, cached per Python worker and caught up;
- ``window``: the driver's database under ``executor=spark`` (:mod:`workers.database.spark`
  holds it), what a tick reads of the state;
- ``shared``, ``dictionary``: a state a fleet shares — written once per tick by one engine,
  followed by the others (their steps by its batches, its dictionary in files);
- ``requests``: what the driver ships to the tasks (a tick, a read, a compaction...);
- ``codec``: the rows the tasks give back, as Arrow (tagged by query when several share a
  job);
- ``tasks``: the ``mapInArrow`` bodies (derive, distinct, evaluate, join a share, read);
- ``executor``: a step as one job of two stages (a small tick's: one stage, with its
  read), an evaluation as one stage;
- ``speculation``: a small tick's step done with its read, and when the tick uses it;
- ``rules``: derived relations' join programs, their levels as Spark jobs;
- ``jobs``: job groups — progress of long actions, jobs and stages per action;
- ``standalone``: a standalone cluster (master and workers) on 127.0.0.1 from the pip
  PySpark, for the tests and ``bench cluster``.

The local engine imports none of this until an engine asks for Spark (``dispatch``).
"""

from workers.executors.spark.executor import SparkExecutor
from workers.executors.spark.jobs import JobCount, JobGroups
from workers.executors.spark.session import SparkSettings, spark_session

__all__ = ["JobCount", "JobGroups", "SparkExecutor", "SparkSettings", "spark_session"]
