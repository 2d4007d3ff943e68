"""Deletes in recursive strata, where DRed keeps a candidate that is still supported (a
derivation whose premises are unmarked and of lower levels, ``executors/rules.py``): graphs
with a hub and cycles, self-loops, ticks deleting edges with and without another path, on
closures written right- and left-recursive, non-linear, mutually recursive, negated and
negating a datom (a delete that adds derivations).
The integrated changes equal the from-scratch oracle after every tick."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.property.strategies import ADD, NAME, RETRACT, TO, reference_db
from workers.engine import Engine
from workers.executors import Work
from workers.executors.generic_join import count_support, witnessed
from workers.executors.joins import LocalJoins
from workers.plan.ir import JoinProgram
from workers.testing import evaluate_from_scratch
from workers.zset import add_into
from workers.zset.row import Row

HUB = 0
NODES = range(6)
RIGHT = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]"
LEFT = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) (reach ?a ?c) [?c :g/to ?b]]]"
DOUBLE = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) (reach ?a ?c) (reach ?c ?b)]]"
EVEN_ODD = ("[[(odd ?a ?b) [?a :g/to ?b]] [(odd ?a ?b) [?a :g/to ?c] (even ?c ?b)]"
            " [(even ?a ?b) [?a :g/to ?c] (odd ?c ?b)]]")
CUT = RIGHT[:-1] + " [(cut ?a ?b) [?a :name] [?b :name] (not (reach ?a ?b))]]"
# a node with a self-loop is closed: retracting the loop (a delete) adds derivations
OPEN = ("[[(reach ?a ?b) [?a :g/to ?b]]"
        " [(reach ?a ?b) [?a :g/to ?c] (not [?c :g/to ?c]) (reach ?c ?b)]]")
PAIRS = "[:find ?a ?b :in $ % :where ({} ?a ?b)]"
QUERIES = {
    "right-recursive closure": (PAIRS.format("reach"), RIGHT),
    "left-recursive closure": (PAIRS.format("reach"), LEFT),
    "non-linear closure": (PAIRS.format("reach"), DOUBLE),
    "closure from the hub": (f"[:find ?b :in $ % :where (reach {HUB} ?b)]", LEFT),
    "mutual recursion": (PAIRS.format("even"), EVEN_ODD),
    "negation of a closure": (PAIRS.format("cut"), CUT),
    "closure through open nodes": (PAIRS.format("reach"), OPEN),
}

edges = st.tuples(st.sampled_from(NODES), st.sampled_from(NODES))
# the hub reaches every node, and most nodes lead back to it: many alternative paths
hub_graph = st.sets(edges, max_size=10).map(
    lambda extra: {(HUB, n) for n in NODES if n != HUB} | extra)
ticks = st.lists(st.lists(st.tuples(st.booleans(), edges), min_size=1, max_size=3),
                 min_size=1, max_size=10)


def tx_of(ops: list[tuple[bool, tuple[int, int]]]) -> list[list[Any]]:
    return [[ADD if add else RETRACT, a, TO, b] for add, (a, b) in ops]


@pytest.mark.parametrize(("query", "rules"), [pytest.param(q, r, id=name)
                                              for name, (q, r) in QUERIES.items()])
@settings(max_examples=50, deadline=None)
@given(graph=hub_graph, stream=ticks)
@example(graph={(0, 1), (1, 2), (2, 1), (0, 2)}, stream=[[(False, (0, 1))], [(False, (0, 2))]])
@example(graph={(0, 0), (0, 1), (1, 0), (1, 1)}, stream=[[(False, (0, 1))], [(False, (0, 0))],
                                                         [(True, (0, 1))]])
@example(graph={(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 3)},
         stream=[[(False, (1, 3))], [(False, (2, 3))], [(True, (1, 3))],
                 [(False, (0, 1)), (False, (4, 3))]])
@example(graph={(1, 2), (2, 3), (3, 5), (5, 4)},  # reach(4, 4) kept through the new 4 → 1
         stream=[[(True, (4, 5))], [(False, (5, 4)), (True, (4, 1))]])
# the hub's pair (0, 4) has three derivations; the first listed may rest on a marked pair
@example(graph={(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)},
         stream=[[(False, (1, 4))], [(False, (3, 4))], [(True, (1, 4)), (False, (2, 4))]])
# a delete-only tick that opens node 3: reach(0, 2) (level 5) loses 0 → 1 → 5 → 6 → 7 → 2,
# is kept through the open 3 and reach(3, 2) (level 4), which the cut 9 → 2 marks rounds
# later: only the new state (3 open) leads from reach(3, 2) back to reach(0, 2)
@example(graph={(0, 1), (1, 5), (5, 6), (6, 7), (7, 2), (0, 3), (3, 3), (3, 4), (4, 8),
                (8, 9), (9, 2)},
         stream=[[(False, (1, 5)), (False, (3, 3)), (False, (9, 2))]])
# the check may see reach(0, 3) through reach(1, 3), which the cut 5 → 3 marks later: the
# rederive step must not put reach(0, 3) back through it (0 → 6 → ... → 3 does)
@example(graph={(0, 2), (2, 3), (0, 1), (1, 4), (4, 5), (5, 3), (0, 6), (6, 7), (7, 8),
                (8, 9), (9, 3)},
         stream=[[(False, (0, 2)), (False, (5, 3))], [(False, (6, 7))]])
# reach(1, 3) (level 2) gets an edge of its own, then loses its path: the support check asks
# the base rule last (after the witness finds nothing), and it keeps the pair
@example(graph={(1, 2), (2, 3)}, stream=[[(True, (1, 3))], [(False, (2, 3))],
                                         [(True, (2, 3)), (False, (1, 3))]])
@example(graph={(1, 2), (2, 3), (3, 4)}, stream=[[(True, (1, 4)), (False, (2, 3))]])
# reach(0, 2) is seen derived only through the marked reach(1, 2), which comes back through
# reach(3, 2): the insert step, not the rederive step, brings reach(0, 2) back
@example(graph={(0, 1), (1, 2), (1, 3), (3, 2)}, stream=[[(False, (1, 2))]])
def test_deletes_in_recursive_strata_match_recompute(
        query: str, rules: str, graph: set[tuple[int, int]],
        stream: list[list[tuple[bool, tuple[int, int]]]]) -> None:
    engine, reference = Engine(), reference_db()
    initial = [[ADD, n, NAME, f"n{n}"] for n in NODES] + tx_of(
        [(True, edge) for edge in sorted(graph)])
    engine.transact(initial)
    reference.transact(initial)
    view = engine.register("q", query, [rules])
    assert view == evaluate_from_scratch(query, reference.datoms, [rules])
    for ops in stream:
        tx = tx_of(ops)
        if reference.transact(tx):
            add_into(view, engine.transact(tx).get("q", {}))
        assert view == evaluate_from_scratch(query, reference.datoms, [rules]), tx


@pytest.mark.parametrize("rules", [pytest.param(QUERIES[name][1], id=name) for name in (
    "right-recursive closure", "left-recursive closure", "non-linear closure",
    "mutual recursion")])
@settings(max_examples=50, deadline=None)
@given(graph=hub_graph, stream=ticks)
def test_a_round_at_once_answers_as_a_search_per_row(
        rules: str, graph: set[tuple[int, int]],
        stream: list[list[tuple[bool, tuple[int, int]]]]) -> None:
    """A program of one level answers a round's support check, and the rederive step's,
    at once (``witnessed_at_once``): the same rows as GenericJoin's search per row, in
    every tick's mid-delete state (the tick's delta, the marked tuples, the levels)."""
    witnessed_at_once, derivable_at_once = LocalJoins.witnessed, LocalJoins.derivable
    rounds: list[int] = []

    def witnessed_both(joins: LocalJoins, program: JoinProgram, rows: Iterable[Row],
                       accept: Callable[[Row], bool], work: Work) -> set[Row]:
        rows = list(rows)
        found = witnessed_at_once(joins, program, rows, accept, work)
        compiled = joins.compiled(program)
        assert found == {row for row in rows if witnessed(compiled, row, accept, Work())}
        rounds.append(len(rows))
        return found

    def derivable_both(joins: LocalJoins, program: JoinProgram, rows: Iterable[Row],
                       work: Work) -> set[Row]:
        rows = list(rows)
        found = derivable_at_once(joins, program, rows, work)
        compiled = joins.compiled(program)
        assert found == {row for row in rows if count_support(compiled, row, 1, Work())}
        return found

    engine, reference = Engine(), reference_db()
    engine.transact(tx_of([(True, edge) for edge in sorted(graph)]))
    engine.register("q", PAIRS.format("reach" if "reach" in rules else "even"), [rules])
    present, deleted = set(graph), False  # a present edge deleted: a round is checked
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LocalJoins, "witnessed", witnessed_both)
        patch.setattr(LocalJoins, "derivable", derivable_both)
        for ops in stream:
            if not reference.transact(tx_of(ops)):  # refused (an edge added and retracted)
                continue
            engine.transact(tx_of(ops))
            deleted = deleted or any(not add and edge in present for add, edge in ops)
            present = ({edge for add, edge in ops if add}
                       | (present - {edge for add, edge in ops if not add}))
    assert rounds or not deleted
