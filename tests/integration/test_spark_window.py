"""Under ``executor=spark`` the driver holds no datoms: each tick's transactions are
normalised against the datoms they read, fetched from Spark's state by a job keyed by entity
(``StateWindow``).  The semantics are the local ones: a batch is the sum of its transactions
(the ``transact_many`` property, here against the fetched windows), and the database the
state holds is the local one.  The streams reach every read: cardinality-one updates,
retracted entities and their referrers through a reference attribute declared mid-stream,
retracted attributes, pulls re-read when the schema changes."""

from __future__ import annotations

import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property.strategies import (
    NAME,
    RETRACT,
    SCHEMA_TX,
    TAG,
    TO,
    churn_streams,
    entities,
    ops,
    tx_streams,
)
from tests.property.test_batches import MAINTAINED, one_at_a_time
from tests.property.test_columns import TYPED_TX, as_columns, outcome
from tests.property.test_columns import transactions as column_transactions
from tests.property.test_incremental_matches_recompute import QUERIES
from workers.arrangements.spilled import SpilledValueIds
from workers.database.spark import SparkDatabase
from workers.edn import keyword
from workers.engine import Engine
from workers.executors.spark import SparkSettings
from workers.executors.spark.state_dictionary import StateDictionary
from workers.runtime.checkpoint import SnapshotStore

pytestmark = pytest.mark.spark
ADD, FRIEND = keyword("db/add"), keyword("friend")
# What else normalising reads: a reference attribute declared mid-stream (a retracted
# entity's referrers are retracted too), and whole attributes retracted.
REF_TX = [{keyword("db/ident"): FRIEND, keyword("db/valueType"): keyword("db.type/ref")}]
reading_ops = st.one_of(
    ops(),
    st.tuples(entities, st.sampled_from([NAME, TAG, TO, FRIEND])).map(
        lambda pair: [RETRACT, *pair]),
    st.tuples(entities, entities).map(lambda pair: [ADD, pair[0], FRIEND, pair[1]]))
reading_streams = st.builds(lambda txs, at: [*txs[:at], REF_TX, *txs[at:]],
                            st.lists(st.lists(reading_ops, min_size=1, max_size=4),
                                     min_size=1, max_size=12), st.integers(0, 3))


def _engine(executor: str, settings: SparkSettings, bulk_datoms: int = 1000) -> Engine:
    engine = Engine(executor=executor, spark=settings, bulk_datoms=bulk_datoms)
    engine.transact(SCHEMA_TX)
    for i, query in enumerate(QUERIES[:2] + MAINTAINED[3:]):  # the pull reads the window too
        engine.register(f"q{i}", query)
    return engine


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=st.one_of(churn_streams, tx_streams, reading_streams),
       cuts=st.lists(st.integers(0, 12), max_size=5), bulk_datoms=st.sampled_from([0, 10**9]))
def test_a_batch_on_spark_is_the_sum_of_its_transactions(
        stream: list[list[Any]], cuts: list[int], bulk_datoms: int,
        spark_settings: SparkSettings) -> None:
    """Transactions one by one locally, and in batches on Spark (at once, ``bulk_datoms=0``,
    or one by one against the fetched window): the same changes, refusals and database."""
    local, spark = _engine("local", spark_settings), _engine("spark", spark_settings, bulk_datoms)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    for start, end in pairwise(bounds):
        expected, expected_refused = one_at_a_time(local, stream, start, end)
        changes, refused = spark.transact_many(
            (tx, tx_id) for tx_id, tx in enumerate(stream[start:end], start))
        assert changes == expected
        assert [r.tx_id for r in refused] == expected_refused
    assert spark.datoms == local.datoms
    assert _datoms(spark) == _datoms(local)
    for attribute in (NAME, TAG, TO, FRIEND):  # the planner's: counted by a Spark task
        assert isinstance(spark.database, SparkDatabase)
        assert spark.database.attribute_stats(attribute) == local.db.attribute_stats(attribute)


def test_the_driver_holds_only_what_a_tick_reads_while_it_runs(
        spark_settings: SparkSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 edges from 200 entities; then one tick retracting one entity and adding an
    edge to another: while it runs the driver's registry holds what normalising reads —
    the retracted entity's datoms, not the other's ten edges — after it nothing; the state
    holds every datom (what a snapshot reads)."""
    spark, local = Engine(executor="spark", spark=spark_settings), Engine()
    load = [[ADD, a, TO, b] for a in range(200) for b in range(1000, 1010)]
    for engine in (spark, local):
        engine.transact(load)
        engine.register("out", "[:find ?a :where [?a :g/to 1000]]")
    window_sizes: list[int] = []
    applied = spark.database.apply
    monkeypatch.setattr(spark.database, "apply",  # the window's size once it took the tick
                        lambda *tick: (applied(*tick), window_sizes.append(len(spark.db)))[0])
    tick = [[keyword("db/retractEntity"), 7], [ADD, 8, TO, 2000]]
    assert spark.transact(tick) == local.transact(tick) == {"out": {(7,): -1}}
    assert spark.datoms == local.datoms == 2000 - 10 + 1
    assert window_sizes == [1]  # entity 7's ten edges fetched, then the tick applied
    assert len(spark.db) == 0
    # nor every value: as many numbered as locally, the latest few in memory
    # (spark_memory_values), the others in the dictionary's files
    assert spark.db.ids.size == local.db.ids.size and spark.db.ids.resident <= 8
    assert _datoms(spark) == _datoms(local)
    assert spark.result("out") == local.result("out")


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=st.lists(column_transactions, min_size=1, max_size=4), ints=st.booleans())
def test_columns_on_spark_are_the_columns_locally(stream: list[Any], ints: bool,
                                                  spark_settings: SparkSettings) -> None:
    """``transact_columns`` normalised against what it fetches (the columnar path and the
    forms it falls back to): the same changes, refusals and database as locally."""
    local, spark = Engine(), Engine(executor="spark", spark=spark_settings)
    for engine in (local, spark):
        engine.transact(SCHEMA_TX)
        engine.transact(TYPED_TX)
        for i, query in enumerate(QUERIES[:2]):
            engine.register(f"q{i}", query)
    for tx in stream:
        columns = as_columns(tx, ints)
        assert outcome(spark.transact_columns, *columns) == outcome(local.transact_columns,
                                                                     *columns)
    assert _datoms(spark) == _datoms(local)


def test_columns_fetch_the_datoms_they_name_not_their_entities(
        spark_settings: SparkSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hub of 1,000 edges, then columns adding one more edge and one present edge: the
    window holds the present one only, not the hub's adjacency (and, once the tick is
    applied to it, the new edge)."""
    spark, local = Engine(executor="spark", spark=spark_settings), Engine()
    hub = np.zeros(1000, np.int64)
    for engine in (spark, local):
        engine.transact_columns(hub, TO, np.arange(1, 1001))
        engine.register("out", "[:find ?b :where [0 :g/to ?b]]")
    window_sizes: list[int] = []
    applied = spark.database.apply
    monkeypatch.setattr(spark.database, "apply",  # the window's size once it took the tick
                        lambda *tick: (applied(*tick), window_sizes.append(len(spark.db)))[0])
    e, v = np.array([0, 0]), np.array([5, 2000])
    assert spark.transact_columns(e, TO, v) == local.transact_columns(e, TO, v) == {
        "out": {(2000,): 1}}
    assert window_sizes == [1 + 1]
    assert _datoms(spark) == _datoms(local)


def test_a_restored_snapshot_becomes_the_state_not_the_drivers(
        spark_settings: SparkSettings) -> None:
    """A snapshot restored under ``executor=spark`` is written as the state's base: the
    driver's registry holds no datom of it, and later ticks read it as the local engine
    reads its own restored copy."""
    spark, local = Engine(executor="spark", spark=spark_settings), Engine()
    for engine in (spark, local):
        engine.transact([[ADD, a, TO, b] for a in range(30) for b in range(a + 1, a + 4)])
    state = spark.state()
    restored = Engine(executor="spark", spark=spark_settings)
    for engine in (restored, local):
        engine.register("tri", QUERIES[0])
    restored.restore(state)
    local.restore(local.state())
    assert len(restored.db) == 0 and restored.datoms == local.datoms == 90
    assert restored.db.ids.resident == 0  # the snapshot's dictionary written out at once
    assert restored.result("tri") == local.result("tri")
    tick = [[ADD, 3, TO, 0], [RETRACT, 5, TO, 6]]
    assert restored.transact(tick) == local.transact(tick)
    assert _datoms(restored) == _datoms(local)


def test_a_worker_restore_reads_the_dictionary_into_files_and_the_state_keeps_it(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    """As a worker restores (a snapshot file read with the engine's ``dictionary``, then
    adopted): the dictionary is written to files as it is read, then into the state, which
    the driver reads from then on (it keeps none of its own)."""
    spark, local = Engine(executor="spark", spark=spark_settings), Engine()
    for engine in (spark, local):
        engine.transact([[ADD, a, TO, b] for a in range(30) for b in range(a + 1, a + 4)])
        engine.transact([[ADD, a, NAME, f"n{a}"] for a in range(0, 30, 3)])
    store = SnapshotStore.at(str(tmp_path))
    store.save(spark.state(shared=True))
    restored = Engine(executor="spark", spark=spark_settings)
    for engine in (restored, local):
        engine.register("tri", QUERIES[0])
    state = store.latest(at_most=spark.tx, dictionary=restored.dictionary)
    assert state is not None and isinstance(state.values, SpilledValueIds)
    restored.restore(state, adopt=True)
    assert isinstance(restored.db.ids, StateDictionary) and restored.db.ids.resident == 0
    assert restored.db.ids.values(np.arange(state.values.size)) == state.values.values(
        np.arange(state.values.size))
    assert restored.result("tri") == local.result("tri")
    tick = [[ADD, 3, TO, 0], [RETRACT, 5, TO, 6], [ADD, 6, NAME, "n6"]]
    assert restored.transact(tick) == local.transact(tick)
    assert _datoms(restored) == _datoms(local)


def _datoms(engine: Engine) -> set[tuple[Any, Any, Any]]:
    """The whole database, as a snapshot reads it."""
    state = engine.state()
    value = state.values.value
    return {(value(e), value(a), value(v)) for e, a, v in zip(*state.columns, strict=True)}


def test_the_driver_reads_its_dictionary_in_the_state_and_keeps_no_copy(
        spark_settings: SparkSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``executor=spark`` the dictionary is the state's: the driver's answers the
    local engine's, holds in memory no more than ``memory_values`` and a tick's values, and
    writes no files of its own (only the state, here under the temporary directory)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spark, local = Engine(executor="spark", spark=spark_settings), Engine()
    for start in range(0, 60, 10):
        tick = [[ADD, a, TO, a + 1] for a in range(start, start + 10)]
        tick += [[ADD, a, NAME, f"n{a}"] for a in range(start, start + 10, 2)]
        assert spark.transact(tick) == local.transact(tick)
    ids = spark.db.ids
    assert isinstance(ids, StateDictionary)
    assert ids.resident <= spark_settings.memory_values + 15
    known = local.db.ids.values(np.arange(local.db.ids.size))
    found = ids.lookup_values(known)
    assert ids.values(found) == known and [ids.lookup(x) for x in known] == found.tolist()
    assert [p.name.split("-")[:2] for p in tmp_path.iterdir()] == [["deltalog", "spark"]]
