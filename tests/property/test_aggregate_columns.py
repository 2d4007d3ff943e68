"""An aggregate's bootstrap and ticks from the vectorised executor's columns
(``Aggregation.reset_columns`` and ``step_columns``, no Python row per basis tuple) equal the
from-scratch oracle and the row path: every aggregate query of the feature tests whose plan
the vectorised executor takes, registered on a populated database with every evaluation and
step vectorised (``vector_datoms=0``), and the triangle count of ``python -m bench
livejournal``."""

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


# Ids as the database numbers values: 1, 1.0 and true are three ids, as are "1" and :a.
VALUES = {0: 1, 1: 1.0, 2: True, 3: "1", 4: keyword("a"), 5: 2, 6: -3, 7: 2.5}
AGGREGATED = [(fn, None) for fn in ("count", "count-distinct", "distinct", "min", "max",
                                   "sum", "avg", "median")] + [("min", 2), ("max", 2)]


def values(column: np.ndarray) -> list[Any]:
    return [VALUES[i] for i in column.tolist()]


@pytest.mark.parametrize(("fn", "n"), AGGREGATED)
@pytest.mark.parametrize("seed", range(4))
def test_step_columns_equals_the_row_step_and_a_fresh_reset(fn: str, n: int | None,
                                                            seed: int) -> None:
    """Ticks of additions and retractions, weights above 1, empty ticks, groups that empty
    and come back: the columnar step gives the row step's changes, both keep the same
    groups, and the changes integrate to the groups reset from the whole basis."""
    rng = random.Random(seed)
    columns = (FindColumn(index=0), FindColumn(index=1, fn=fn, n=n))
    by_columns, by_rows = Aggregation(columns), Aggregation(columns)
    scalar = Aggregation((FindColumn(index=1, fn=fn, n=n),))  # no group column
    numeric = [0, 1, 5, 6, 7] if fn in ("sum", "avg", "median") else list(VALUES)
    basis: dict[tuple[int, int], int] = {}
    views: list[dict[Row, int]] = [{}, {}]
    for _ in range(12):
        changes: dict[tuple[int, int], int] = {}
        for _ in range(rng.choice([0, 1, 3, 10])):
            row = (rng.choice([0, 3, 4]), rng.choice(numeric))
            changes[row] = rng.choice([-basis.get(row, 0), rng.randrange(1, 3)]) or 1
        changes = {row: w for row, w in changes.items() if w}
        ids = [np.array([row[j] for row in changes], np.int64) for j in range(2)]
        weights = np.array(list(changes.values()), np.int64)
        rows = {Row(values(np.array(row))): w for row, w in changes.items()}
        stepped = by_columns.step_columns(ids, weights, values)
        assert stepped == by_rows.step(rows)
        add_into(views[0], stepped)
        add_into(views[1], scalar.step_columns(ids, weights, values))
        add_into(basis, changes)
        whole = {Row(values(np.array(row))): w for row, w in basis.items()}
        assert by_columns.groups == by_rows.groups
        assert views[0] == Aggregation(columns).reset(whole)
        assert views[1] == Aggregation(scalar.columns).reset(whole)


def test_a_vectorised_tick_steps_the_count_from_columns(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The engine hands a vectorised step's frame to ``step_columns``: with the row step
    failing, the triangle count's ticks still equal a brute-force count."""
    def row_step(self: Aggregation, changes: Any) -> Any:
        raise AssertionError("a vectorised tick decoded its rows")

    monkeypatch.setattr(Aggregation, "step", row_step)
    rng = random.Random(7)
    edges = {(rng.randrange(30), rng.randrange(30)) for _ in range(250)}
    edges = {(u, v) for u, v in edges if u != v}
    engine = Engine(vector_datoms=0)
    us, vs = zip(*sorted(edges), strict=True)
    engine.transact_columns(np.array(us), TO, np.array(vs))
    view = dict(engine.register("t", TRIANGLES))
    for _ in range(8):
        flips = {(u, v) for u, v in {(rng.randrange(30), rng.randrange(30))
                                     for _ in range(15)} if u != v}
        added = [edge not in edges for edge in flips]
        edges ^= flips
        us, vs = zip(*flips, strict=True)
        add_into(view, engine.transact_columns(np.array(us), TO, np.array(vs),
                                               added=added).get("t", {}))
        assert view == {Row((triangles(edges)[0],)): 1}
