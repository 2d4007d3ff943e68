"""deltalog itself behind the peer interface: one engine per strategy and executor.

The facts are loaded before the query is registered, so the load runs no query step and the
registration is the query's bootstrap (what a user pays to add a view to a live database).
The change count is the size of the engine's output delta for the query, which is a set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.data import Fact, Tick
from bench.engine.tx import ADD, CHUNK, RETRACT, Tx
from bench.queries import Spec, edn
from workers.edn import keyword  # interned: building one costs more than the datom around it


def to_tx(tick: Tick) -> Tx:
    """A tick as already-parsed EDN transaction forms (retracts first, like the peers)."""
    return [[RETRACT, e, keyword(a), v] for a, e, v in tick.removes] + [
        [ADD, e, keyword(a), v] for a, e, v in tick.adds
    ]


class Deltalog:
    """`workers.engine.Engine` with one registered query."""

    def __init__(self, strategy: str = "delta", executor: str = "local",
                 spark_master: str = "local[2]") -> None:
        self.strategy, self.executor, self.spark_master = strategy, executor, spark_master
        suffix = "" if executor == "local" else f"-{executor}"
        self.name = f"{strategy}{suffix}"
        self.engine: Any = None
        self.query = ""
        self.last_work: int | None = None

    def unsupported(self, spec: Spec) -> str | None:
        if spec.closure is not None and self.executor != "local":
            return "rules run on the local executor only"
        return None

    def new_engine(self) -> Any:
        from workers.engine import Engine

        if self.executor == "local":
            return Engine(strategy=self.strategy)
        from workers.executors.spark import SparkSettings

        settings = SparkSettings(master=self.spark_master)
        return Engine(strategy=self.strategy, executor=self.executor, spark=settings)

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        self.engine, self.query = self.new_engine(), query
        for i in range(0, len(facts), CHUNK):
            self.engine.transact(to_tx(Tick(tuple(facts[i : i + CHUNK]))))
        text, inputs = edn(query)
        self.engine.register(query, text, list(inputs))

    def apply(self, tick: Tick) -> int:
        changes = self.engine.transact(to_tx(tick)).get(self.query, {})
        work = self.engine.last_work.get(self.query)
        self.last_work = work.elements if work is not None else 0
        return len(changes)

    def close(self) -> None:
        self.engine = None
