"""Executors run Plans over arrangements: GenericJoin levels, strategy terms, distinct.

``LocalExecutor`` is the in-process reference; every executor follows ``Executor``.
"""

from workers.executors.base import Executor
from workers.executors.local import LocalExecutor, PreparedPlan
from workers.executors.work import Work

__all__ = ["Executor", "LocalExecutor", "PreparedPlan", "Work"]
