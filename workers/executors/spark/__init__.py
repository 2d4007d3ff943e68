"""The Spark executor: the same plans on PySpark DataFrames.

- ``session``: starts (or reaches) Spark, with a clear error when it cannot;
- ``frames``: values as ids, Z-sets as inline tables or DataFrames, results back;
- ``mirror``: the database as a compacted DataFrame next to the local arrangements;
- ``sql``: one Spark SQL query per step, as named subqueries;
- ``relations``: one pattern read through one extender spec;
- ``join``: a JoinProgram the BigJoin way (count, choose, propose, intersect);
- ``jobs``: job groups — progress of long actions, jobs and stages per action;
- ``executor``: a strategy's terms and ``distinct``, one query per step.

The local engine imports none of this until an engine asks for Spark (``dispatch``).
"""

from workers.executors.spark.executor import SparkExecutor
from workers.executors.spark.jobs import JobCount, JobGroups
from workers.executors.spark.session import SparkSettings, spark_session

__all__ = ["JobCount", "JobGroups", "SparkExecutor", "SparkSettings", "spark_session"]
