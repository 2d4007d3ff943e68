"""The README's first command (``make demo`` → ``deltalog demo``) works: a local broker and a
worker start, the live queries' changes arrive, and the demo's closing line holds: every
query's committed change stream integrates to its from-scratch result after every tick, none
twice (``workers.testing.check_change_stream``, whatever the ticks' split)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from workers.demo import KARATE, LIVE_QUERIES, PEOPLE, run_demo

pytestmark = pytest.mark.kafka


def test_the_demo_streams_every_transaction_through_the_live_queries() -> None:
    lines: list[str] = []
    assert run_demo(out=lines.append) == 0
    assert lines[-1] == (f"done: {len(KARATE) + len(PEOPLE)} transactions, every change "
                         "committed exactly once")
    for name in LIVE_QUERIES:  # each query printed some of its changes
        assert any(f"  {name} " in line for line in lines), name


@pytest.mark.spark
def test_the_demo_on_spark_runs_every_step_there() -> None:
    """``deltalog demo --executor spark``: the same closing line, and every query step that the
    worker exported during the demo ran on Spark (the counter is the process's: compared with
    its value before)."""
    def steps(executor: str) -> float:
        return REGISTRY.get_sample_value("deltalog_query_steps_total",
                                         {"executor": executor}) or 0.0

    before = {executor: steps(executor) for executor in ("local", "spark")}
    lines: list[str] = []
    assert run_demo(executor="spark", spark_master="local[1]", out=lines.append) == 0
    assert lines[-1].startswith(f"done: {len(KARATE) + len(PEOPLE)} transactions")
    assert any(line.endswith("executor spark (Spark local[1])") for line in lines), lines[:3]
    assert any(line.startswith("query steps by where they ran: ") for line in lines)
    assert steps("local") == before["local"]
    assert steps("spark") > before["spark"]
