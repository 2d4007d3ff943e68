"""The Spark executor: the same plans on PySpark DataFrames.

``session`` starts (or reaches) Spark; ``frames`` turns values into ids and Z-sets into
DataFrames and back; ``mirror`` keeps the database as a DataFrame next to the local tries;
``relations`` reads one pattern through one extender spec; ``join`` runs a JoinProgram the
BigJoin way; ``executor`` sums a strategy's terms and applies ``distinct``.

PySpark is imported only when one of these modules is, so the local path never pays for it.
"""

from workers.executors.spark.executor import SparkExecutor
from workers.executors.spark.jobs import JobCount, JobGroups
from workers.executors.spark.session import SparkSettings, spark_session

__all__ = ["JobCount", "JobGroups", "SparkExecutor", "SparkSettings", "spark_session"]
