"""An aggregate's bootstrap from the vectorised executor's columns (``Aggregation.reset_columns``,
no Python row per basis tuple) equals the from-scratch oracle, and the changes kept from it
afterwards integrate to the oracle: every aggregate query of the feature tests whose plan the
vectorised executor takes, registered on a populated database with every evaluation and step
vectorised (``vector_datoms=0``), and the triangle count of ``python -m bench livejournal``."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from tests.property.strategies import SCHEMA_TX, reference_db, tx_streams
from tests.property.test_datalog_features import FEATURES
from workers.edn import keyword
from workers.engine import Engine
from workers.find import Aggregation
from workers.plan.ir import FindColumn
from workers.testing import evaluate_from_scratch
from workers.zset import add_into
from workers.zset.row import Row

TO = keyword("g/to")
TRIANGLES = ("[:find (count ?a) . :with ?b ?c :where [?a :g/to ?b] [?a :g/to ?c] "
             "[?b :g/to ?c]]")
APEXES = "[:find (count ?a) . :where [?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]"
AGGREGATES = [(name, query, inputs) for name, query, inputs in FEATURES
              if "(" in query.split(":where")[0].split(":in")[0]
              and not Engine().plan(query, inputs).body.keeps_relations]


def test_the_aggregates_are_covered() -> None:
    assert len(AGGREGATES) >= 8, [name for name, _, _ in AGGREGATES]


@pytest.mark.parametrize(("query", "inputs"), [pytest.param(q, i, id=name)
                                               for name, q, i in AGGREGATES])
@settings(max_examples=40, deadline=None)
@given(before=tx_streams, after=tx_streams)
def test_bootstrap_from_columns_matches_recompute(query: str, inputs: list[Any],
                                                  before: list[list[Any]],
                                                  after: list[list[Any]]) -> None:
    engine, reference = Engine(vector_datoms=0), reference_db()
    engine.transact(SCHEMA_TX)
    for tx in before:
        if reference.transact(tx):
            engine.transact(tx)
    view = engine.register("q", query, inputs)
    assert view == evaluate_from_scratch(query, reference.datoms, inputs)
    for tx in after:
        if reference.transact(tx):
            add_into(view, engine.transact(tx).get("q", {}))
    assert view == evaluate_from_scratch(query, reference.datoms, inputs) == engine.result("q")


def triangles(edges: set[tuple[int, int]]) -> tuple[int, int]:
    """Triangles a→b, a→c, b→c, and their distinct corners a, counted by brute force."""
    out: dict[int, set[int]] = {}
    for u, v in edges:
        out.setdefault(u, set()).add(v)
    found = [(a, b, c) for a, bs in out.items() for b in bs for c in bs & out.get(b, set())]
    return len(found), len({a for a, _, _ in found})


@pytest.mark.parametrize("seed", range(6))
def test_triangle_count_bootstrapped_from_columns_then_ticked(seed: int) -> None:
    rng = random.Random(seed)
    nodes = rng.randrange(5, 40)
    edges = {(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(rng.randrange(0, 300))}
    edges = {(u, v) for u, v in edges if u != v}
    engines = [Engine(vector_datoms=0), Engine()]  # columns, and rows (the dict path)
    for engine in engines:
        if edges:
            us, vs = zip(*sorted(edges), strict=True)
            engine.transact_columns(np.array(us), TO, np.array(vs))
    views = [[dict(e.register("t", TRIANGLES)), dict(e.register("a", APEXES))]
             for e in engines]
    want = triangles(edges)
    for t, a in views:
        assert [sum(row[0] * w for row, w in t.items()), sum(row[0] * w for row, w in a.items())
                ] == list(want)
    for _ in range(5):
        flips = {(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(rng.randrange(1, 20))}
        flips = {(u, v) for u, v in flips if u != v}
        if not flips:
            continue
        added = [edge not in edges for edge in flips]
        edges ^= flips
        us, vs = zip(*flips, strict=True)
        for engine, (t, a) in zip(engines, views, strict=True):
            changes = engine.transact_columns(np.array(us), TO, np.array(vs), added=added)
            add_into(t, changes.get("t", {}))
            add_into(a, changes.get("a", {}))
        want = triangles(edges)
        for engine, (t, a) in zip(engines, views, strict=True):
            assert [sum(row[0] * w for row, w in t.items()),
                    sum(row[0] * w for row, w in a.items())] == list(want)
            assert t == engine.result("t") and a == engine.result("a")


def test_reset_columns_groups_ids_as_reset_groups_rows() -> None:
    """A grouped count and a sum beside it, with weights above 1; and no rows."""
    columns = (FindColumn(index=0, fn=None), FindColumn(index=1, fn="count"),
               FindColumn(index=1, fn="sum"))
    ids = [np.array([0, 0, 1, 1, 1]), np.array([5, 6, 5, 5, 7])]
    weights = np.array([1, 1, 1, 2, 1])
    decode = {0: "x", 1: "y", 5: 10, 6: 20, 7: 30}
    by_columns = Aggregation(columns).reset_columns(
        ids, weights, lambda column: [decode[i] for i in column.tolist()])
    rows: dict[Row, int] = {}
    for g, v, w in zip(*ids, weights, strict=True):
        row = Row((decode[int(g)], decode[int(v)]))
        rows[row] = rows.get(row, 0) + int(w)
    assert by_columns == Aggregation(columns).reset(rows)
    assert Aggregation(columns).reset_columns([np.zeros(0, int)] * 2, np.zeros(0, int),
                                              lambda c: []) == {}
