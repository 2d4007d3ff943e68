"""The Spark executor beyond the shared contract: bootstrap of a large database, the
``auto`` policy, a long run whose per-tick Spark work does not grow across compactions,
and a small tick's job shape."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest
from prometheus_client import REGISTRY

from workers.arrangements import ArrangementRegistry
from workers.datalog import compile_query
from workers.edn import keyword
from workers.engine import Engine
from workers.executors import LocalExecutor
from workers.executors.dispatch import AutoPolicy
from workers.executors.spark import JobGroups, SparkExecutor, SparkSettings, spark_session
from workers.plan import plan_query

pytestmark = pytest.mark.spark
TO = keyword("g/to")
TRIANGLE = "[:find ?a ?b ?c :where [?a :g/to ?b] [?b :g/to ?c] [?a :g/to ?c]]"
TWO_PATH = "[:find ?a ?c :where [?a :g/to ?b] [?b :g/to ?c]]"


def random_edges(count: int, nodes: int, seed: int) -> set[tuple[int, int]]:
    rnd = random.Random(seed)
    edges: set[tuple[int, int]] = set()
    while len(edges) < count:
        edges.add((rnd.randrange(nodes), rnd.randrange(nodes)))
    return edges


def test_bootstrap_of_50000_datoms_equals_local_and_actions_report_progress(
        spark_settings: SparkSettings) -> None:
    state = ArrangementRegistry()
    state.apply(state.encode({(a, TO, b): 1 for a, b in random_edges(50_000, 4_000, seed=1)}))
    assert len(state) >= 50_000
    session = spark_session(spark_settings)
    reports: list[str] = []
    spark = SparkExecutor(session, state, JobGroups(session, reports.append, interval_s=0.5))
    local = LocalExecutor(state)
    plan = plan_query(compile_query(TRIANGLE))
    expected, _ = local.evaluate(local.prepare(plan))
    assert len(expected) > 100
    evaluated, _ = spark.evaluate(spark.prepare(plan))
    assert dict(zip(zip(*(c.tolist() for c in evaluated.columns), strict=True),
                    evaluated.weights.tolist(), strict=True)) == expected
    assert spark.jobs.last.jobs > 0
    # the bootstrap reported as itself if it outlasted an interval (CI's did, 2026-11-24);
    # its reporter ends with it, so what follows is the next action's alone
    assert all(report.startswith("evaluation of ") for report in reports)
    reports.clear()
    # an action reports while it runs: one held open until the reporter has spoken (a
    # bootstrap this small may end before the first report)
    with spark.jobs.action("a long action"):
        session.range(10).count()
        deadline = time.monotonic() + 60
        while not reports and time.monotonic() < deadline:
            time.sleep(0.05)
    assert reports and all("a long action: " in report and "Spark tasks done" in report
                           for report in reports)


def test_auto_sends_bootstraps_and_large_ticks_to_spark(spark_settings: SparkSettings) -> None:
    auto = Engine(executor="auto", spark=spark_settings,
                  auto=AutoPolicy(tick_datoms=50, bootstrap_datoms=1_000))
    local = Engine()
    edges = sorted(random_edges(1_200, 300, seed=2))
    load = [[keyword("db/add"), a, TO, b] for a, b in edges]
    auto.transact(load[:200])
    local.transact(load[:200])
    assert auto.register("small", TWO_PATH) == local.register("small", TWO_PATH)
    assert auto.dispatch.last == "local"  # 200 datoms: below the bootstrap threshold
    assert auto.transact(load[200:]) == local.transact(load[200:])
    assert auto.dispatch.last == "spark"  # a tick of 1,000 datoms
    assert auto.register("tri", TRIANGLE) == local.register("tri", TRIANGLE)
    assert auto.dispatch.last == "spark"
    small_tick = [[keyword("db/retract"), a, TO, b] for a, b in edges[:3]]
    assert auto.transact(small_tick) == local.transact(small_tick)
    assert auto.dispatch.last == "local"
    large_tick = [[keyword("db/retract"), a, TO, b] for a, b in edges[3:103]]
    assert auto.transact(large_tick) == local.transact(large_tick)
    assert auto.dispatch.last == "spark"


@pytest.mark.parametrize("indexed", [False, True], ids=["parts", "indexed"])
def test_ticks_do_not_grow_the_spark_work_per_tick(spark_settings: SparkSettings,
                                                   indexed: bool) -> None:
    """A tick appends one batch file to the state; its tasks catch up on the batches since
    their last step and compaction folds them into a base in the background.  So no tick of
    the last 20, across two compactions, runs more jobs or stages than the most a tick of
    the first 20 ran.  Compacting every 40 batches instead of every 100 keeps it short: the
    schedule is a parameter, the job's shape does not depend on it.  ``indexed``: each
    compaction also indexes the base (a job of its own), which the tasks then map."""
    engine, local = Engine(executor="spark", spark=spark_settings), Engine()
    spark = engine.dispatch.spark
    assert spark is not None
    spark.state.store.compact_batches = 40
    spark.state.store.index_datoms = 1 if indexed else 10**9
    load = [[keyword("db/add"), a, TO, b] for a, b in random_edges(500, 100, seed=3)]
    for each in (engine, local):
        each.transact(load)
        each.register("out", "[:find ?a :where [?a :g/to ?b]]")
    rnd = random.Random(4)
    counts = []
    for tick in range(81):
        a, b = rnd.randrange(100), rnd.randrange(100, 200)
        op = keyword("db/add") if tick % 3 else keyword("db/retractEntity")
        tx = [[op, a, TO, b] if tick % 3 else [op, a], [keyword("db/add"), b, TO, tick]]
        assert engine.transact(tx) == local.transact(tx), f"tick {tick}"
        counts.append((spark.jobs.last.jobs, spark.jobs.last.stages))
        spark.state.store.settle()  # each compaction done before the next tick: counted exactly
    assert spark.state.store.compactions == 2
    assert (spark.state.store.manifest.index is not None) == indexed  # type: ignore[union-attr]
    first, last = counts[:20], counts[-20:]
    assert max(j for j, _ in last) <= max(j for j, _ in first)
    assert max(s for _, s in last) <= max(s for _, s in first)
    assert engine.result("out") == local.result("out")


def test_an_idle_engine_sums_the_spark_state_into_its_base(spark_settings: SparkSettings
                                                            ) -> None:
    """``Engine.idle`` compacts Spark's state too: the batches the ticks appended become
    the base, indexed (Spark jobs), and the ticks after it read that base, every change
    equal to the local engine's.  (A state counts as large from ``index_datoms``.)"""
    engine, local = Engine(executor="spark", spark=spark_settings), Engine()
    spark = engine.dispatch.spark
    assert spark is not None
    spark.state.store.index_datoms = 100
    load = [[keyword("db/add"), a, TO, b] for a, b in random_edges(300, 60, seed=5)]
    for each in (engine, local):
        each.transact(load)
        each.register("two", "[:find ?a ?c :where [?a :g/to ?b] [?b :g/to ?c]]")
    for tick in range(3):
        tx = [[keyword("db/add"), tick, TO, 100 + tick], [keyword("db/retractEntity"), 10 + tick]]
        assert engine.transact(tx) == local.transact(tx), f"tick {tick}"
    spark.state.store.settle()
    before = spark.state.store.manifest
    assert before is not None and len(before.batches) >= 3  # the load's and the ticks'
    engine.idle()
    spark.state.store.settle()
    manifest = spark.state.store.manifest
    assert manifest is not None and not manifest.batches and manifest.index is not None
    assert manifest.base_version == before.version
    tx = [[keyword("db/add"), 100, TO, 0], [keyword("db/retract"), 0, TO, 100]]
    assert engine.transact(tx) == local.transact(tx)
    assert engine.result("two") == local.result("two")


def test_a_spark_step_counts_the_work_its_tasks_did(spark_settings: SparkSettings) -> None:
    """The tasks' work counters come back with their results (accumulators): a small tick's
    one task steps the triangle vectorised, so it counts what the local vectorised executor
    counts on the same tick — not one call per step."""
    spark = Engine(executor="spark", spark=spark_settings)
    vectorised = Engine(vector_datoms=1)  # every tick a frame at a time, as a task steps it
    load = [[keyword("db/add"), a, TO, b] for a, b in random_edges(600, 60, seed=8)]
    for engine in (spark, vectorised):
        engine.transact(load)
        engine.register("tri", TRIANGLE)
    rnd = random.Random(9)
    for tick in range(5):
        tx = [[keyword("db/add"), rnd.randrange(60), TO, rnd.randrange(60)] for _ in range(3)]
        assert spark.transact(tx) == vectorised.transact(tx), f"tick {tick}"
        counted = spark.last_work["tri"], vectorised.last_work["tri"]
        assert counted[0].calls > 1
        assert [(w.calls, w.elements) for w in counted] == [(counted[1].calls,
                                                              counted[1].elements)] * 2


def test_a_rules_join_on_spark_counts_the_work_its_tasks_did(
        spark_settings: SparkSettings) -> None:
    """A recursive rule's join programs run on Spark under ``executor=spark``; their tasks
    send their work back too, so a tick counts what the local engine counts on it."""
    spark, local = Engine(executor="spark", spark=spark_settings), Engine()
    rules = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]"
    rnd = random.Random(3)
    load = [[keyword("db/add"), rnd.randrange(30), TO, rnd.randrange(30)] for _ in range(40)]
    for engine in (spark, local):
        engine.transact(load)
        engine.register("reach", "[:find ?a ?b :in $ % :where (reach ?a ?b)]", [rules])
    counted = []
    for tick in range(6):
        tx = [[keyword("db/add"), rnd.randrange(30), TO, rnd.randrange(30)]]
        assert spark.transact(tx) == local.transact(tx), f"tick {tick}"
        counted.append([(engine.last_work["reach"].calls, engine.last_work["reach"].elements)
                        for engine in (spark, local)])
    assert all(ours == theirs for ours, theirs in counted)
    assert max(calls for (calls, _), _ in counted) > 4  # joins of many calls among them


def _three_queries(spark_settings: SparkSettings) -> tuple[Engine, Engine, SparkExecutor]:
    """A Spark engine and a local one over one graph, a triangle, a two-path and the edges
    registered on each."""
    engine, local = Engine(executor="spark", spark=spark_settings), Engine()
    load = [[keyword("db/add"), a, TO, b] for a, b in random_edges(2_000, 200, seed=6)]
    for each in (engine, local):
        each.transact(load)
        each.register("tri", TRIANGLE)
        each.register("path", TWO_PATH)
        each.register("edge", "[:find ?a ?b :where [?a :g/to ?b]]")
    spark = engine.dispatch.spark
    assert spark is not None
    return engine, local, spark


def test_a_small_tick_is_one_spark_job_of_one_stage(spark_settings: SparkSettings) -> None:
    """A tick of a few plain datoms on a triangle, a two-path and the edges: one task reads
    what the driver normalises against and steps the three queries by the delta it assumes
    from the tick and the state; the driver's normalisation finds the same delta, so the
    tick is that one job — its stages counted by the job groups."""
    engine, local, spark = _three_queries(spark_settings)
    edges = sorted(random_edges(5, 200, seed=7))
    used = _assumed("used")
    for a, b in edges:
        tick = [[keyword("db/add"), a, TO, b], [keyword("db/add"), b, TO, a + 1]]
        before = spark.jobs.total
        assert engine.transact(tick) == local.transact(tick)
        assert spark.jobs.total.jobs - before.jobs == 1
        assert spark.jobs.total.stages - before.stages == 1
    assert _assumed("used") - used == len(edges)  # what the metric tells an operator
    for a, b in edges[:2]:  # retractions too; and nothing to change: still one job
        tick = [[keyword("db/retract"), a, TO, b], [keyword("db/retract"), a, TO, b + 1000]]
        before = spark.jobs.total
        assert engine.transact(tick) == local.transact(tick)
        assert spark.jobs.total.jobs - before.jobs == 1
    assert {name: engine.result(name) for name in ("tri", "path", "edge")} == {
        name: local.result(name) for name in ("tri", "path", "edge")}


def test_a_small_tick_of_pull_queries_is_one_spark_job(spark_settings: SparkSettings) -> None:
    """Pulled maps are read again after a tick, from the entities its rows and its datoms
    name, as many references on as the patterns reach and back: the task that steps the
    tick reads that too, in the state after the delta it assumes, so the tick stays one
    job.  An aggregated pull's input is not its plan's rows: its ticks read after the step
    (two jobs).  Every change equal to the local engine's."""
    name = keyword("name")
    engine, local = Engine(executor="spark", spark=spark_settings), Engine()
    load = [[keyword("db/add"), a, TO, b] for a, b in random_edges(300, 60, seed=5)]
    load += [[keyword("db/add"), n, name, f"n{n}"] for n in range(0, 60, 3)]
    queries = {"pulled": "[:find ?a (pull ?b [:name {:g/to [:name]} :g/_to]) "
                         ":where [?a :g/to ?b] [?b :name]]",
               "counted": "[:find (pull ?a [:name]) (count ?b) :where [?a :g/to ?b]]"}
    for each in (engine, local):
        each.transact(load)
        each.register("pulled", queries["pulled"])
    spark = engine.dispatch.spark
    assert spark is not None
    rnd = random.Random(12)
    ticks = [[[keyword("db/add"), rnd.randrange(60), TO, rnd.randrange(60)],
              [keyword("db/add"), rnd.randrange(60), name, f"m{i}"]] for i in range(4)]
    ticks += [[[keyword("db/retract"), a, TO, b]] for a, b in sorted(
        random_edges(300, 60, seed=5))[:3]]
    for tick in ticks:
        before = spark.jobs.total
        assert engine.transact(tick) == local.transact(tick), tick
        assert spark.jobs.total.jobs - before.jobs == 1, tick
    for each in (engine, local):
        each.register("counted", queries["counted"])
    for tick in [[[keyword("db/add"), a, TO, a + 100]] for a in (1, 2)]:
        before = spark.jobs.total
        assert engine.transact(tick) == local.transact(tick), tick
        assert spark.jobs.total.jobs - before.jobs == 2, tick
    assert {q: engine.result(q) for q in queries} == {q: local.result(q) for q in queries}


def test_a_tick_whose_delta_is_not_the_assumed_one_steps_again(
        spark_settings: SparkSettings) -> None:
    """The task assumes every transaction of the tick accepted; the driver refuses one that
    adds and retracts one datom, so its delta is not the assumed one: the rows stepped by
    the assumed delta are dropped and the queries step again by the driver's (two jobs),
    equal to the local engine's."""
    engine, local, spark = _three_queries(spark_settings)
    a, b = sorted(random_edges(1, 200, seed=11))[0]
    good = [[keyword("db/add"), a, TO, b], [keyword("db/add"), b, TO, a]]
    bad = [[keyword("db/add"), b, TO, 7], [keyword("db/retract"), b, TO, 7]]
    before, stepped_again = spark.jobs.total, _assumed("stepped_again")
    changes, refused = engine.transact_many([(good, 1), (bad, 2)])
    assert changes == local.transact_many([(good, 1), (bad, 2)])[0]
    assert [refusal.tx_id for refusal in refused] == [2]
    assert spark.jobs.total.jobs - before.jobs == 2
    assert _assumed("stepped_again") - stepped_again == 1
    assert {name: engine.result(name) for name in ("tri", "path", "edge")} == {
        name: local.result(name) for name in ("tri", "path", "edge")}


def _assumed(outcome: str) -> float:
    """``deltalog_spark_assumed_steps_total`` of ``outcome``, as Prometheus scrapes it."""
    return REGISTRY.get_sample_value("deltalog_spark_assumed_steps_total",
                                     {"outcome": outcome}) or 0.0


def test_steps_release_what_they_materialise(spark_settings: SparkSettings) -> None:
    """A step stores nothing in Spark (its tasks read the state's files), so the blocks
    Spark holds do not grow with the number of ticks."""
    engine = Engine(executor="spark", spark=spark_settings)
    engine.transact([[keyword("db/add"), a, TO, b] for a, b in random_edges(60, 12, seed=5)])
    engine.register("tri", TRIANGLE)
    context = spark_session(spark_settings).sparkContext._jsc.sc()  # type: ignore[union-attr]

    def stored() -> set[int]:  # other tests' data may be garbage-collected meanwhile
        return {info.id() for info in context.getRDDStorageInfo()}

    engine.transact([[keyword("db/add"), 0, TO, 20]])
    before = stored()
    for tick in range(1, 4):
        engine.transact([[keyword("db/add"), tick, TO, 20 + tick]])
    assert stored() - before == set()


CONNECT_SCRIPT = """
import os
from workers.engine import Engine
from workers.executors.spark import SparkSettings
engine = Engine(executor="spark", spark=SparkSettings(remote="local"))
assert type(engine.dispatch.spark.session).__module__.startswith("pyspark.sql.connect")
engine.transact("[[:db/add 1 :g/to 2] [:db/add 2 :g/to 3]]")
assert engine.register("tri", "TRIANGLE") == {}
assert engine.transact("[[:db/add 1 :g/to 3]]") == {"tri": {(1, 2, 3): 1}}
assert engine.transact("[[:db/retract 2 :g/to 3]]") == {"tri": {(1, 2, 3): -1}}
print("connect ok", flush=True)
engine.dispatch.spark.session.stop()
os._exit(0)  # the in-process Connect server's threads would keep the interpreter alive
""".replace("TRIANGLE", TRIANGLE)


def test_the_same_plans_run_through_spark_connect() -> None:
    """``remote="local"`` starts a Spark Connect server in a fresh process: the client path
    (no SparkContext, no status tracker) gives the same changes."""
    done = subprocess.run([sys.executable, "-c", CONNECT_SCRIPT], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0 and "connect ok" in done.stdout, done.stderr[-3000:]
