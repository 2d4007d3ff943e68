"""The README's first command (``make demo`` → ``deltalog demo``) works: a local broker and a
worker start, the live queries' changes arrive, and the demo's closing line holds: every
query's committed change stream integrates to its from-scratch result after every tick, none
twice (``workers.testing.check_change_stream``, whatever the ticks' split)."""

from __future__ import annotations

import pytest

from workers.demo import KARATE, LIVE_QUERIES, PEOPLE, run_demo

pytestmark = pytest.mark.kafka


def test_the_demo_streams_every_transaction_through_the_live_queries() -> None:
    lines: list[str] = []
    assert run_demo(out=lines.append) == 0
    assert lines[-1] == (f"done: {len(KARATE) + len(PEOPLE)} transactions, every change "
                         "committed exactly once")
    for name in LIVE_QUERIES:  # each query printed some of its changes
        assert any(f"  {name} " in line for line in lines), name
