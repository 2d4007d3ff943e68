"""Edge ticks as engine transactions: the already-parsed EDN forms the engine benchmarks
(and the deltalog peer) hand to `Engine.transact`, so parsing stays out of the timings."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.data import Edge, Op
from workers.edn import keyword
from workers.engine import Changes, Engine

ADD, RETRACT, TO = keyword("db/add"), keyword("db/retract"), keyword("g/to")
CHUNK = 2000  # edges per transaction of an initial load
Tx = list[list[Any]]


def to_tx(ops: list[Op]) -> Tx:
    """A tick's edge ops as transaction forms."""
    return [[ADD if is_add else RETRACT, u, TO, v] for is_add, u, v in ops]


def load_ticks(edges: list[Edge], chunk: int = CHUNK) -> list[list[Op]]:
    """The initial load as add-only ticks of ``chunk`` edges."""
    return [[(True, u, v) for u, v in edges[i : i + chunk]] for i in range(0, len(edges), chunk)]


API_CHOICES = ("forms", "columns")


def send_edges(engine: Engine, us: np.ndarray, vs: np.ndarray, api: str,
               tx_id: int) -> Changes:
    """One transaction adding the edges ``us[i] -> vs[i]``: forms built now and sent
    through ``transact_many`` (``api="forms"``), or the columns through
    ``transact_columns``."""
    if api == "columns":
        return engine.transact_columns(us, TO, vs, tx_id=tx_id)
    forms = [[ADD, u, TO, v] for u, v in zip(us.tolist(), vs.tolist(), strict=True)]
    changes, _ = engine.transact_many([(forms, tx_id)])
    return changes


def settle(engine: Engine) -> None:
    """Wait for the engine's background compactions: its spine's, and under
    ``executor=spark`` the state files' (a running one holds a second copy)."""
    engine.db.state.settle()
    if engine.dispatch.spark is not None:
        engine.dispatch.spark.state.store.settle()
