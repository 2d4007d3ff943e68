"""The vectorised executor cut into pieces — frames of at most ``PIECE_ROWS`` rows, each
level's rows in runs of at most ``PIECE_PROPOSALS`` estimated proposals, taken depth first
through the levels — gives the changes and results of the row-at-a-time one."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workers.arrangements import IndexOrder
from workers.arrangements import batch as batch_module
from workers.arrangements.spine import SpineArrangement
from workers.edn import keyword
from workers.engine import Engine
from workers.executors import vectorised

ADD, RETRACT, TO = keyword("db/add"), keyword("db/retract"), keyword("g/to")
QUERIES = {"triangle": "[:find ?a ?b ?c :where [?a :g/to ?b] [?b :g/to ?c] [?a :g/to ?c]]",
           "square": "[:find ?a ?c :where [?a :g/to ?b] [?b :g/to ?c] [?c :g/to ?d] "
                     "[?d :g/to ?a]]"}


@pytest.mark.parametrize(("piece_rows", "piece_proposals"), [(1, 1 << 21), (3, 1 << 21),
                                                               (1 << 16, 1), (1 << 16, 7)])
def test_frames_in_pieces_give_the_row_at_a_time_answers(monkeypatch: pytest.MonkeyPatch,
                                                          piece_rows: int,
                                                          piece_proposals: int) -> None:
    rng = random.Random(piece_rows + piece_proposals)
    edges = sorted({(rng.randrange(12), rng.randrange(12)) for _ in range(60)})
    whole, pieces = Engine(vector_datoms=10**12), Engine(vector_datoms=0)
    for engine in (whole, pieces):
        engine.transact([[ADD, a, TO, b] for a, b in edges[:40]])
    monkeypatch.setattr(vectorised, "PIECE_ROWS", piece_rows)
    monkeypatch.setattr(vectorised, "PIECE_PROPOSALS", piece_proposals)
    runs = vectorised._runs
    cut: list[int] = []
    monkeypatch.setattr(vectorised, "_runs", lambda estimates: (
        cut.append(len(r := runs(estimates))), r)[1])
    assert [pieces.register(n, q) for n, q in QUERIES.items()] == [
        whole.register(n, q) for n, q in QUERIES.items()]
    for tick in ([[ADD, a, TO, b] for a, b in edges[40:]],
                 [[RETRACT, a, TO, b] for a, b in edges[::3]]):
        assert pieces.transact(tick) == whole.transact(tick)
    assert all(pieces.result(n) == whole.result(n) for n in QUERIES)
    assert (max(cut) > 1) is (piece_proposals < 1 << 21)  # the runs were cut, or not


def test_runs_hold_their_budget_of_estimates_a_row_alone_more() -> None:
    budget = vectorised.PIECE_PROPOSALS
    estimates = np.array([budget // 2, budget // 2, 1, 3 * budget, 0, budget], np.int64)
    assert vectorised._runs(estimates) == [(0, 2), (2, 3), (3, 4), (4, 6)]
    assert vectorised._runs(np.zeros(0, np.int64)) == [(0, 0)]


@pytest.mark.parametrize(("query", "one"), [
    ("[:find ?a ?b ?c :where [?a :g/to ?b] [?b :g/to ?c] [?a :g/to ?c]]", True),
    ("[:find ?a ?c :where [?a :g/to ?b] [?b :g/to ?c]]", False),  # ?b: many derivations
    ("[:find ?a ?b :where [?a :g/to ?b] [?b :g/to _]]", False),  # `_`: one per datom
], ids=["triangle", "2-path", "blank"])
def test_distinct_recounts_only_rows_that_may_have_several_derivations(
        monkeypatch: pytest.MonkeyPatch, query: str, one: bool) -> None:
    """Where every variable is found and no `_` is left, a row's derivation change is its
    set change: the support program is not run (and the answers stay the row path's)."""
    rng = random.Random(5)
    edges = sorted({(rng.randrange(8), rng.randrange(8)) for _ in range(40)})
    rows, vector = Engine(vector_datoms=10**12), Engine(vector_datoms=0)
    for engine in (rows, vector):
        engine.transact([[ADD, a, TO, b] for a, b in edges[:25]])
        engine.register("q", query)
    supports: list[int] = []
    run = vectorised.run
    monkeypatch.setattr(vectorised, "run", lambda program, *args, **kw: (
        supports.append(not kw.get("project", True)), run(program, *args, **kw))[1])
    for tick in ([[ADD, a, TO, b] for a, b in edges[25:]],
                 [[RETRACT, a, TO, b] for a, b in edges[::3]]):
        assert vector.transact(tick) == rows.transact(tick)
    assert any(supports) is not one


def test_registering_makes_the_sieves_its_ticks_ask_and_they_answer_as_without(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With every level sieved (``SIEVE_KEYS`` 0): the triangle registered makes the state's
    sieves of both orders its lookups read, and its ticks give the row-at-a-time answers."""
    monkeypatch.setattr(batch_module, "SIEVE_KEYS", 0)
    rng = random.Random(9)
    edges = sorted({(rng.randrange(15), rng.randrange(15)) for _ in range(90)})
    rows, vector = Engine(vector_datoms=10**12), Engine(vector_datoms=0)
    for engine in (rows, vector):
        engine.transact([[ADD, a, TO, b] for a, b in edges[:60]])
        engine.db.state.compact()
    assert vector.register("t", QUERIES["triangle"]) == rows.register("t", QUERIES["triangle"])
    state = vector.db.state
    assert [list(b.orders[order]._sieves) for b in state.batches
            for order in (IndexOrder.EAV, IndexOrder.VAE)] == [[2], [2]]
    for tick in ([[ADD, a, TO, b] for a, b in edges[60:]],
                 [[RETRACT, a, TO, b] for a, b in edges[::3]]):
        assert vector.transact(tick) == rows.transact(tick)


def test_a_tick_locates_each_read_of_the_seed_frame_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The triangle's delta terms share their seed frame, and extenders of different terms
    read the same prefixes of it in the state: located once, for all of them."""
    rng = random.Random(3)
    edges = sorted({(rng.randrange(15), rng.randrange(15)) for _ in range(90)})
    rows, vector = Engine(vector_datoms=10**12), Engine(vector_datoms=0)
    for engine in (rows, vector):
        engine.transact([[ADD, a, TO, b] for a, b in edges[:60]])
        engine.register("t", QUERIES["triangle"])
    reads: list[tuple[int, IndexOrder, bytes]] = []
    locate = SpineArrangement.locate
    monkeypatch.setattr(SpineArrangement, "locate", lambda self, order, prefixes: (
        reads.append((id(self), order, prefixes.tobytes())), locate(self, order, prefixes))[1])
    assert vector.transact([[ADD, a, TO, b] for a, b in edges[60:]]) == rows.transact(
        [[ADD, a, TO, b] for a, b in edges[60:]])
    assert reads and len(set(reads)) == len(reads)
