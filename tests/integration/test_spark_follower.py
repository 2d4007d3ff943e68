"""A state written once, read by several engines: a writer shares its Spark state, a
follower steps its own queries by the writer's batches and reads the writer's files
(``workers.executors.spark.shared``).  The oracle is a local engine that took the writer's
transactions: every follower query's result, its registration's rows plus every change
:meth:`Engine.follow` gave, is the oracle's result — through constants and functions'
results the writer numbers only later (the follower's own ids given up), compactions of the
datoms and of the dictionary, versions whose changes cancel out, and a follower further
behind than its writer keeps versions, which follows anew (a worker's catches up in place,
its change streams the from-scratch oracle's)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.pipeline import TRIANGLE, TWO_PATH, random_stream, reference_states
from tests.property.strategies import SCHEMA_TX, churn_streams, tx_streams
from tests.property.test_batches import MAINTAINED
from tests.property.test_incremental_matches_recompute import QUERIES
from workers.config import WorkerConfig
from workers.edn import keyword
from workers.engine import Engine
from workers.errors import WorkersError
from workers.executors.spark import SparkSettings
from workers.executors.spark.session import RETAIN_SECONDS
from workers.executors.spark.shared import FollowerBehind
from workers.executors.spark.state import batch_name
from workers.runtime.worker import Worker
from workers.testing import FakeKafka, FakePorts, check_change_stream
from workers.zset.zset import add_into

pytestmark = pytest.mark.spark
ADD, TO = keyword("db/add"), keyword("g/to")
# Constants and functions' results that streams hold only later (the follower numbers them
# first, then takes the writer's ids), data patterns, aggregates, a pull, rules.
FOLLOWED = [QUERIES[4], QUERIES[5], QUERIES[6], QUERIES[8], QUERIES[0], *MAINTAINED[1:],
            "[:find ?a ?c :where [?a :g/to ?b] [(inc ?b) ?c] [?c :g/to ?d]]",
            "[:find ?a ?s :where [?a :name ?n] [(str ?n \"!\") ?s]]"]


def _writer(settings: SparkSettings, location: str, **store: int) -> Engine:
    writer = Engine(executor="spark", spark=replace(settings, state=location, share=True))
    for name, value in store.items():  # smaller compaction thresholds
        assert writer.dispatch.spark is not None
        setattr(writer.dispatch.spark.state.store, name, value)
    return writer


def _follower(settings: SparkSettings, location: str) -> Engine:
    return Engine(executor="spark", spark=replace(settings, state=location, follow=True))


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=st.one_of(churn_streams, tx_streams), joins=st.integers(0, 6),
       cuts=st.lists(st.integers(1, 16), max_size=6), registered=st.integers(0, len(FOLLOWED)),
       compact_batches=st.sampled_from([2, 100]))
def test_a_follower_steps_as_the_writer_s_database_changes(
        stream: list[list[Any]], joins: int, cuts: list[int], registered: int,
        compact_batches: int, spark_settings: SparkSettings) -> None:
    """The writer takes the stream in batches; the follower starts after ``joins`` of its
    transactions, registers some queries at once and the rest later, and follows after each
    batch: its views are the oracle's results, its position and size the writer's."""
    location = tempfile.mkdtemp(prefix="deltalog-shared-")
    writer = _writer(spark_settings, location, compact_batches=compact_batches,
                     compact_datoms=4)
    oracle = Engine()
    for engine in (writer, oracle):
        engine.transact(SCHEMA_TX)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    follower: Engine | None = None
    views: dict[str, dict[Any, int]] = {}
    for start, end in pairwise(bounds):
        batch = [(tx, tx_id) for tx_id, tx in enumerate(stream[start:end], start + 1)]
        writer.transact_many(batch)
        oracle.transact_many(batch)
        assert writer.dispatch.spark is not None
        writer.dispatch.spark.state.store.settle()  # a compaction, when due, in the history
        if follower is None and end >= joins:
            follower = _follower(spark_settings, location)
            views = {f"q{i}": follower.register(f"q{i}", query)
                     for i, query in enumerate(FOLLOWED[:registered])}
        elif follower is not None:
            for name, rows in follower.follow().items():
                add_into(views[name], rows)
            if len(views) < len(FOLLOWED):  # a query registered while it follows
                i = len(views)
                views[f"q{i}"] = follower.register(f"q{i}", FOLLOWED[i])
        if follower is not None:
            assert follower.tx == writer.tx
            assert follower.datoms == writer.datoms
            assert follower.schema.items() == writer.schema.items()
            for i, query in enumerate(FOLLOWED[:len(views)]):
                assert {row: w for row, w in views[f"q{i}"].items() if w} == _result(
                    oracle, query), query


def _result(engine: Engine, query: str) -> dict[Any, int]:
    """A query's current result as registering it gives it."""
    name = f"oracle-{len(engine.queries)}"
    rows = engine.register(name, query)
    engine.unregister(name)
    return rows


def test_a_value_the_follower_numbered_first_takes_the_writer_s_id(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    """A function's result (3) the follower numbered itself, held in its query's derived
    relation; then a datom holds 3, and the writer numbers it: the follower's queries are
    bound anew, so retracting the edge the result came from retracts it."""
    location = str(tmp_path / "state")
    writer = _writer(spark_settings, location)
    writer.transact([[ADD, 1, TO, 2]])
    follower = _follower(spark_settings, location)
    query = "[:find ?a ?c :where [?a :g/to ?b] [(inc ?b) ?c]]"
    assert follower.register("inc", query) == {(1, 3): 1}
    writer.transact([[ADD, 3, TO, 1]])
    assert follower.follow() == {"inc": {(3, 2): 1}}
    writer.transact([[keyword("db/retract"), 1, TO, 2]])
    assert follower.follow() == {"inc": {(1, 3): -1}}


def test_a_new_writer_writes_on_where_the_last_stopped_and_followers_follow_it(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    """The writer stops (its process gone, the files it had not deleted yet left); a new
    writer sharing the same location takes the state up at its newest version — position,
    size, schema, ids — and writes on; a follower steps across the hand-over as if one
    engine wrote it all."""
    location = str(tmp_path / "state")
    first, oracle = _writer(spark_settings, location, compact_batches=2), Engine()
    follower = _follower(spark_settings, location)
    follower.register("names", "[:find ?e ?n :where [?e :name ?n]]")
    for tx_id, tx in enumerate([SCHEMA_TX, [[ADD, 1, keyword("name"), "ann"]],
                                [[ADD, 2, keyword("name"), "bob"]]], 1):
        for engine in (first, oracle):
            engine.transact(tx, tx_id)
    first.dispatch.spark.state.store.settle()  # type: ignore[union-attr]
    second = _writer(spark_settings, location)
    assert (second.tx, second.datoms, second.schema.items()) == (
        first.tx, first.datoms, first.schema.items())
    assert second.db.ids.lookup("bob") == first.db.ids.lookup("bob")
    for tx_id, tx in enumerate([[[ADD, 3, keyword("name"), "cy"]],
                                [[keyword("db/retract"), 1, keyword("name"), "ann"]]], 4):
        for engine in (second, oracle):
            engine.transact(tx, tx_id)
    new = {second.db.ids.lookup(3), second.db.ids.lookup("cy")}
    assert new == {first.db.ids.size, first.db.ids.size + 1}  # numbered on from the last
    assert follower.follow() == {"names": {(2, "bob"): 1, (3, "cy"): 1}}
    assert follower.tx == 5 and follower.datoms == oracle.datoms
    assert follower.result("names") == oracle.register("names", "[:find ?e ?n :where "
                                                                "[?e :name ?n]]")


def test_the_writer_changes_hands_and_back(spark_settings: SparkSettings,
                                           tmp_path: Path) -> None:
    """The writer steps down and its follower takes writing over, then back: each, writing
    or following, keeps its queries' views equal to the oracle's results — the follower's
    own values (a function's results) numbered by it once it writes."""
    location = str(tmp_path / "state")
    one, two, oracle = _writer(spark_settings, location), None, Engine()
    queries = {"inc": "[:find ?a ?c :where [?a :g/to ?b] [(inc ?b) ?c]]",
               "pairs": QUERIES[10], "count": MAINTAINED[2]}
    stream = [[[ADD, 1, TO, 2]], [[ADD, 2, TO, 1], [ADD, 3, TO, 7]], [[ADD, 8, TO, 3]],
              [[keyword("db/retract"), 1, TO, 2]], [[ADD, 7, TO, 4]], [[ADD, 1, TO, 2]]]
    views: dict[Engine, dict[str, dict[Any, int]]] = {}
    writer = one

    def follow(engine: Engine) -> None:
        for name, rows in engine.follow().items():
            add_into(views[engine][name], rows)

    for tx_id, tx in enumerate(stream, 1):
        if tx_id in (3, 5):  # the writer steps down, the other takes over
            assert two is not None
            taking_over = two if writer is one else one
            follow(taking_over)
            writer.step_down()
            assert taking_over.lead()
            writer = taking_over
        changes = writer.transact(tx, tx_id)
        oracle.transact(tx, tx_id)
        if two is None:
            two = _follower(spark_settings, location)
            views = {engine: {name: engine.register(name, query)
                              for name, query in queries.items()} for engine in (one, two)}
            own = two.db.ids.lookup(3)  # a function's result no datom holds yet: its own id
            assert own is not None and own > one.db.ids.size
        else:
            for name, rows in changes.items():
                add_into(views[writer][name], rows)
        follow(two if writer is one else one)
        for engine in (one, two):
            assert engine.tx == tx_id and engine.datoms == oracle.datoms
            for name, query in queries.items():
                assert {row: w for row, w in views[engine][name].items() if w} == _result(
                    oracle, query), (engine is one, name)


def test_a_writer_stepping_down_publishes_the_values_it_numbered_since_its_last_version(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    """A registration numbers its constants in the writer's dictionary with no version
    written: stepping down, the writer publishes them (an empty batch), so that the next
    writer numbers its new values after them and both dictionaries agree (the zombie test
    met a follower whose dictionary had those ids for other values)."""
    location = str(tmp_path / "state")
    one = _writer(spark_settings, location)
    one.transact([[ADD, 1, TO, 2]], 1)
    two = _follower(spark_settings, location)
    one.register("q", "[:find ?a :where [?a :g/to 42]]")  # 42: numbered, not in a datom
    one.step_down()
    two.follow()
    assert two.lead()
    two.transact([[ADD, 5, TO, 42], [ADD, 6, TO, 7]], 2)
    changes = one.follow()
    assert changes == {"q": {(5,): 1}}
    dictionaries = [[engine.db.ids.value(i) for i in range(engine.db.ids.size)]
                    for engine in (one, two)]
    assert dictionaries[0] == dictionaries[1]


def test_a_follower_too_far_behind_or_of_a_replaced_state_follows_anew(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    """The writer keeps no replaced file (``retain_seconds=0``): once a compaction folded
    the batches a follower needs and the next append deleted them, the follower cannot
    step, and says why; it follows anew from the newest version — its queries' results,
    taken anew, the oracle's (a function's result it numbered itself among them) — and
    steps on from there; one following a writer that restored a snapshot too."""
    location = str(tmp_path / "state")
    writer = Engine(executor="spark", spark=replace(spark_settings, state=location,
                                                    share=True, retain_seconds=0.0))
    oracle = Engine()
    follower = _follower(spark_settings, location)
    queries = {"out": "[:find ?b :where [1 :g/to ?b]]",
               "inc": "[:find ?a ?c :where [?a :g/to ?b] [(inc ?b) ?c]]"}
    views = {name: follower.register(name, query) for name, query in queries.items()}
    assert writer.dispatch.spark is not None
    store = writer.dispatch.spark.state.store
    store.compact_batches = 2

    def transact(tx: list[list[Any]]) -> None:
        tx_id = writer.tx + 1
        for engine in (writer, oracle):
            engine.transact(tx, tx_id)
        store.settle()

    def step(anew: str | None) -> None:
        """The follower's step: its views stepped by its changes, or taken anew."""
        if anew is None:
            for name, rows in follower.follow().items():
                add_into(views[name], rows)
        else:
            with pytest.raises(FollowerBehind, match=anew):
                follower.follow()
            follower.follow_anew()
            views.update({name: follower.result(name) for name in queries})
        assert (follower.tx, follower.datoms) == (writer.tx, writer.datoms)
        for name, query in queries.items():
            assert {row: w for row, w in views[name].items() if w} == _result(oracle, query)

    for b in range(2, 6):
        transact([[ADD, 1, TO, b]])
    step("further behind its writer")
    transact([[ADD, 1, TO, 7], [ADD, 3, TO, 4]])
    step(None)
    writer.restore(writer.state())
    transact([[ADD, 1, TO, 9]])
    step("was replaced")
    transact([[keyword("db/retract"), 1, TO, 2]])
    step(None)


def test_a_worker_following_too_far_behind_catches_up_in_place(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    """Two workers share a Spark state over the fakes: the writer (partition 0) ticks on
    while the follower (partition 1: the queries) does not, and, keeping no replaced file,
    deletes the batches the follower needs.  The follower's next tick follows anew from
    the newest version, without exiting, and owns its queries anew, caught up from their
    committed views: every committed change stream is still its query's exact change."""
    kafka = FakeKafka(query_partitions=2)
    stream = random_stream(seed=7, count=24)
    kafka.register("tri", TRIANGLE, partition=1)
    kafka.register("two", TWO_PATH, partition=1)
    kafka.assign({1: "deltalog-worker-follower"})  # the writer joining takes partition 0
    location = tmp_path / "state"
    config = WorkerConfig(executor="spark", spark_sharing="fleet", spark_state=str(location),
                          spark_master=spark_settings.master,
                          spark_memory_values=spark_settings.memory_values,
                          snapshot_dir=tmp_path / "snapshots", tick_max_wait_s=0.0)

    def started(name: str) -> Worker:
        worker = Worker(replace(config, worker_id=name),
                        FakePorts(kafka, f"deltalog-worker-{name}"))
        worker.start()
        return worker

    with started("writer") as writer, started("follower") as follower:
        assert writer.engine.dispatch.spark is not None
        assert follower.engine.dispatch.spark is not None
        store = writer.engine.dispatch.spark.state.store
        store.compact_batches = 2

        def publish(tx: list[list[Any]]) -> None:
            kafka.send(tx)
            _ticks(writer)
            store.settle()

        for tx in stream[:8]:
            publish(tx)
            _ticks(follower)
        held = follower.engine.dispatch.spark.state.follower
        assert held is not None and follower.committed == 7
        needed = batch_name(held.manifest.epoch, held.manifest.version + 1)
        store.retain_seconds = 0.0
        for tx in stream[8:14]:  # the follower does not tick
            publish(tx)
        assert not (location / needed).exists()
        store.retain_seconds = RETAIN_SECONDS
        _ticks(follower)
        assert follower.engine.dispatch.spark.state.follower is not held  # opened anew
        assert follower.committed == writer.committed == 13
        for tx in stream[14:]:
            publish(tx)
            _ticks(follower)
        assert follower.committed == len(stream) - 1
    states = reference_states(stream)
    for name, query in (("tri", TRIANGLE), ("two", TWO_PATH)):
        check_change_stream(query, [SimpleNamespace(**c) for c in kafka.changes(name)],
                            states)
        assert {c["tx_first"] for c in kafka.changes(name) if c["tx_last"] == 13} == {8}


def test_a_worker_given_no_partition_while_it_starts_follows(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    """A worker sharing a Spark state that the group gives nothing while it starts (with
    KIP-848's protocol librdkafka does not even say so) follows the state, rather than
    ticking without an engine, and takes queries up once it is given some."""
    kafka = FakeKafka(query_partitions=2)
    kafka.announces_empty = False
    kafka.register("tri", TRIANGLE, partition=1)
    config = WorkerConfig(executor="spark", spark_sharing="fleet",
                          spark_state=str(tmp_path / "state"), spark_master=spark_settings.master,
                          spark_memory_values=spark_settings.memory_values,
                          snapshot_dir=tmp_path / "snapshots", tick_max_wait_s=0.0,
                          session_timeout_ms=500)
    stream = random_stream(seed=11, count=6)
    with Worker(replace(config, worker_id="writer"),
                FakePorts(kafka, "deltalog-worker-writer")) as writer:
        writer.start()  # joining first, it owns both partitions
        with Worker(replace(config, worker_id="late"),
                    FakePorts(kafka, "deltalog-worker-late")) as late:
            late.start()
            assert late.engine.following
            for tx in stream[:3]:
                kafka.send(tx)
                _ticks(writer)
                _ticks(late)
            assert late.committed == writer.committed == 2
            kafka.assign({1: "deltalog-worker-late"})  # the query moves to the late worker
            for tx in stream[3:]:
                kafka.send(tx)
                _ticks(writer)
                _ticks(late)
            assert late.committed == len(stream) - 1
    check_change_stream(TRIANGLE, [SimpleNamespace(**c) for c in kafka.changes("tri")],
                        reference_states(stream))


def _ticks(worker: Worker) -> None:
    """Tick until there is nothing to do."""
    for _ in range(10):
        if not worker.tick():
            return
    raise AssertionError("still ticking after 10 ticks")


def test_a_follower_writes_nothing_and_sharing_takes_a_location(
        spark_settings: SparkSettings, tmp_path: Path) -> None:
    location = str(tmp_path / "state")
    with pytest.raises(WorkersError, match="no Spark state to follow"):
        _follower(spark_settings, location)
    Engine(executor="spark", spark=replace(spark_settings, state=location))
    with pytest.raises(WorkersError, match="is not shared"):
        _follower(spark_settings, location)
    writer = _writer(spark_settings, location)
    follower = _follower(spark_settings, location)
    with pytest.raises(WorkersError, match="changes only through its writer"):
        follower.transact([[ADD, 1, TO, 2]])
    with pytest.raises(WorkersError, match="changes only through its writer"):
        follower.restore(writer.state())
    with pytest.raises(WorkersError, match="only an engine following"):
        writer.follow()
    for unshared in (replace(spark_settings, share=True), replace(spark_settings, follow=True,
                                                                   state=location, share=True)):
        with pytest.raises(WorkersError, match="shar"):
            Engine(executor="spark", spark=unshared)
