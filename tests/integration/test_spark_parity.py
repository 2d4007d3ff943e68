"""Parity: on the same random streams (adds, retracts, retractEntity, cardinality-one
updates, refused transactions), the Spark executor emits exactly the local executor's
changes on every tick, and both integrate to the from-scratch result."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from tests.property.strategies import (
    ADD,
    AGE,
    NAME,
    RETRACT,
    RETRACT_ENTITY,
    SCHEMA_TX,
    TAG,
    TO,
    reference_db,
)
from tests.property.test_incremental_matches_recompute import QUERIES
from workers.engine import Engine
from workers.errors import TransactionError
from workers.executors.spark import SparkSettings
from workers.executors.spark.executor import SPLIT_DATOMS
from workers.testing import evaluate_from_scratch
from workers.zset import add_into

pytestmark = pytest.mark.spark
VALUES = {TO: [1, 2, 3, 4], TAG: [1, 2, 3], NAME: ["Ivan", "Petr", "x"], AGE: [1, 2, 30]}


def random_stream(seed: int, transactions: int, ops: int) -> list[list[Any]]:
    """Transactions over four entities: mostly adds, so rows appear, vanish and come back."""
    rnd = random.Random(seed)
    stream = []
    for _ in range(transactions):
        tx: list[Any] = []
        for _ in range(rnd.randint(1, ops)):
            kind = rnd.choice(["add", "add", "add", "retract", "retract", "retract-entity"])
            e = rnd.randint(1, 4)
            if kind == "retract-entity":
                tx.append([RETRACT_ENTITY, e])
                continue
            a = rnd.choice(list(VALUES))
            tx.append([ADD if kind == "add" else RETRACT, e, a, rnd.choice(VALUES[a])])
        stream.append(tx)
    return stream


def replay(query: str, strategy: str, stream: list[list[Any]], settings: SparkSettings,
           inputs: Sequence[Any] = ()) -> Engine:
    """Both executors on the stream, tick by tick; returns the Spark engine."""
    local = Engine(strategy=strategy)
    spark = Engine(strategy=strategy, executor="spark", spark=settings)
    reference = reference_db()
    for engine in (local, spark):
        engine.transact(SCHEMA_TX)
    # Empty for a query that reads data; not for one of inputs only or of constants.
    started = [engine.register("q", query, inputs) for engine in (local, spark)]
    assert started[0] == started[1] == evaluate_from_scratch(query, reference.datoms, inputs)
    view: dict[Any, int] = dict(started[1])
    executor = spark.dispatch.spark
    assert executor is not None
    for tick, tx in enumerate(stream):
        # Every other tick is split between the shares (two stages), as large ticks are.
        executor.split_datoms = 0 if tick % 2 else SPLIT_DATOMS
        accepted = reference.transact(tx)
        changes = []
        for engine in (local, spark):
            try:
                changes.append(engine.transact(tx).get("q", {}))
            except TransactionError:
                changes.append(None)
        assert changes[0] == changes[1], f"tick {tick}: {tx}"
        assert (changes[0] is not None) == accepted
        add_into(view, changes[1] or {})
        assert view == evaluate_from_scratch(query, reference.datoms, inputs), \
            f"tick {tick}: {tx}"
    assert spark.result("q") == local.result("q") == view
    return spark


@pytest.mark.parametrize("query", QUERIES, ids=str)
def test_spark_emits_the_local_changes_on_every_tick(query: str,
                                                      spark_settings: SparkSettings) -> None:
    replay(query, "delta", random_stream(QUERIES.index(query), transactions=8, ops=4),
           spark_settings)


@pytest.mark.parametrize("strategy", ["recursive", "binary"])
@pytest.mark.parametrize("query", QUERIES[:2], ids=["triangle", "4-cycle"])
def test_every_strategy_agrees_on_spark(query: str, strategy: str,
                                        spark_settings: SparkSettings) -> None:
    replay(query, strategy, random_stream(7, transactions=6, ops=4), spark_settings)


def test_the_queries_a_tick_changes_step_in_one_spark_job(spark_settings: SparkSettings) -> None:
    """Every query registered on one engine: a tick reads what it normalises against in one
    job and steps all the queries in one more (their rows, of different widths, tagged by
    query), small ticks in one task and the others split — each query's changes the local
    engine's."""
    local = Engine()
    spark = Engine(executor="spark", spark=spark_settings)
    for engine in (local, spark):
        engine.transact(SCHEMA_TX)
        for number, query in enumerate(QUERIES):
            engine.register(f"q{number}", query)
    executor = spark.dispatch.spark
    assert executor is not None
    for tick, tx in enumerate(random_stream(99, transactions=10, ops=4)):
        executor.split_datoms = 0 if tick % 2 else SPLIT_DATOMS
        before = executor.jobs.total.jobs
        changes = []
        for engine in (local, spark):
            try:
                changes.append(engine.transact(tx))
            except TransactionError:
                changes.append(None)
        assert changes[0] == changes[1], f"tick {tick}: {tx}"
        assert executor.jobs.total.jobs - before <= 2, f"tick {tick}"
    for number in range(len(QUERIES)):
        assert spark.result(f"q{number}") == local.result(f"q{number}")
