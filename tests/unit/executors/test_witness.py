"""The support check's existence question (``Joins.witnessed``): the local join stops at a
candidate's first accepted derivation, and goes on past rejected ones — a hub's candidate
has one derivation per successor, and listing them all was the deletes' tail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from workers.edn import keyword
from workers.engine import Engine
from workers.executors import Work
from workers.executors.extenders import OverlayExtender
from workers.executors.rules import PreparedRules
from workers.plan.ir import JoinProgram
from workers.zset.row import Row

RIGHT = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]"
ADD, TO = keyword("db/add"), keyword("g/to")
HUB, SINK, FANOUT = 0, 999, 100  # more successors than one chunk of the lazy search


def hub_closure() -> tuple[PreparedRules, JoinProgram, Row]:
    """The closure of a hub with ``FANOUT`` successors, each leading to the sink: the pair
    (hub, sink) has one derivation per successor.  Its witness program and that pair."""
    engine = Engine()
    engine.register("reach", "[:find ?a ?b :in $ % :where (reach ?a ?b)]", [RIGHT])
    engine.transact([[ADD, HUB, TO, c] for c in range(1, FANOUT + 1)] +
                    [[ADD, c, TO, SINK] for c in range(1, FANOUT + 1)])
    prepared = engine._queries["reach"].prepared.local
    assert isinstance(prepared, PreparedRules)
    witness = next(rule.witness for s in prepared.strata for r in s.relations
                   for rule in r.rules if rule.witness is not None)
    ids = engine.db.ids
    return prepared, witness, (ids.intern(HUB), ids.intern(SINK))


def test_witnessed_stops_at_the_first_accepted_derivation() -> None:
    prepared, witness, pair = hub_closure()
    seen: list[Row] = []

    def accept(row: Row) -> bool:
        seen.append(row)
        return True

    assert prepared.joins.witnessed(witness, [pair], accept, Work()) == {pair}
    assert len(seen) == 1


def test_witnessed_goes_past_rejected_derivations() -> None:
    prepared, witness, pair = hub_closure()
    seen: list[Row] = []

    def accept_the_last(row: Row) -> bool:
        seen.append(row)
        return len(seen) == FANOUT

    assert prepared.joins.witnessed(witness, [pair], accept_the_last, Work()) == {pair}
    assert len({row[2:] for row in seen}) == FANOUT  # every successor tried, once
    assert prepared.joins.witnessed(witness, [pair], lambda row: False, Work()) == set()


def test_derivable_without_a_search_for_a_program_of_checks_alone() -> None:
    """The base rule's support program only checks a datom per head: one pass over the
    rows (``LocalJoins.derivable``), the same answer as a search per row."""
    prepared, _, (hub, sink) = hub_closure()
    base = next(rule.support for s in prepared.strata for r in s.relations
                for rule in r.rules if rule.witness is None)
    assert not prepared.joins.compiled(base).levels  # the path without a search
    successors = [(hub, row[1]) for row in prepared.root.state.rows if row[0] == hub
                  and row[1] != sink]
    assert len(successors) == FANOUT
    rows = [*successors, (hub, sink), (sink, hub)]
    assert prepared.joins.derivable(base, rows, Work()) == set(successors)


def test_a_round_reads_a_prefix_shared_by_its_rows_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hub delete's candidates ``(hub, b)`` all extend through the hub's successors: a
    witness of one level proposes them once for the whole round, not once per row (a
    search per row read them through the spine and the tick's delta every time)."""
    prepared, witness, (hub, _) = hub_closure()
    successors, _ = prepared.joins.compiled(witness).levels[0]  # type: ignore[misc]
    reads: list[Row] = []

    def counted(read: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(extender: OverlayExtender, row: Row, *args: Any) -> Any:
            if extender is successors:
                reads.append(row)
            return read(extender, row, *args)
        return wrapper

    for verb in ("propose", "intersect"):
        monkeypatch.setattr(OverlayExtender, verb, counted(getattr(OverlayExtender, verb)))
    rows = [row for row in prepared.root.state.rows if row[0] == hub]  # (hub, b), b below
    assert len(rows) == FANOUT + 1
    assert prepared.joins.witnessed(witness, rows, lambda row: False, Work()) == set()
    assert len(reads) == 1
