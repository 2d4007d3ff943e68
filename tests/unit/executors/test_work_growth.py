"""Work per tick, from the executors' counters (never wall time), as the database grows.

- Seed 001's instance: R = {(1,1),(1,3),..,(1,2n-1)}, S = {(2,1),(4,1),..,(2n,1)}, insert
  T(1,1).  No triangle appears, yet R(1,·) and S(·,1) must be intersected: linear for
  every strategy (the seed's point), and no worse than linear for ``delta``.
- A skewed triangle instance: a hub with n out-edges gets one more edge to a fresh vertex.
  GenericJoin proposes from the empty side, so ``delta``'s work stays constant; the binary
  plan joins the hub's n edges before it can filter them: linear.
"""

from __future__ import annotations

from itertools import pairwise

from workers.edn import keyword
from workers.engine import Engine
from workers.executors import Work

SEED_QUERY = "{:find [?x ?y ?z] :where [[?x :r ?y] [?y :s ?z] [?x :t ?z]]}"
TRIANGLE = "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}"
SIZES = (100, 200, 400, 800)
ADD, R, S, TO = keyword("db/add"), keyword("r"), keyword("s"), keyword("g/to")


def seed_instance_work(strategy: str, n: int) -> int:
    engine = Engine(strategy=strategy)
    engine.register("q", SEED_QUERY)
    engine.transact([[ADD, 1, R, y] for y in range(1, 2 * n, 2)] +
                    [[ADD, y, S, 1] for y in range(2, 2 * n + 1, 2)])
    assert engine.transact("[[:db/add 1 :t 1]]") == {}
    return _elements(engine.last_work["q"])


def hub_work(strategy: str, n: int) -> int:
    engine = Engine(strategy=strategy)
    engine.register("tri", TRIANGLE)
    engine.transact([[ADD, 0, TO, b] for b in range(1, n + 1)])
    assert engine.transact(f"[[:db/add 0 :g/to {n + 1}]]") == {}
    return _elements(engine.last_work["tri"])


def _elements(work: Work) -> int:
    return work.elements


def test_seed_instance_work_is_linear_for_delta() -> None:
    works = [seed_instance_work("delta", n) for n in SIZES]
    for small, large in pairwise(works):
        assert 1.8 * small <= large <= 2.2 * small, works


def test_hub_insert_work_is_constant_for_delta_and_linear_for_binary() -> None:
    delta = [hub_work("delta", n) for n in SIZES]
    binary = [hub_work("binary", n) for n in SIZES]
    assert len(set(delta)) == 1, delta
    for small, large in pairwise(binary):
        assert large >= 1.9 * small, binary
    assert binary[-1] > 100 * delta[-1], (delta, binary)
