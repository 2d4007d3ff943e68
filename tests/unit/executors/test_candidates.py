"""Which heads a delete makes over-delete candidates (``PreparedRules._candidates``): only
those whose lost derivation has every premise in the stratum below the head's level — a
head resting on a lower derivation elsewhere is neither checked nor marked.  Deleting a hub's
edge lost one derivation of every pair the hub reached through it, and checking them all
was the deletes' tail.  And a marked head the check saw no derivation of, or only through
marked pairs, is not asked again by the rederive step."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from workers.engine import Engine
from workers.executors import Work
from workers.executors.rules import PreparedRules
from workers.plan.ir import JoinProgram
from workers.zset.row import Row

REACH = "[[(reach ?a ?b) [?a :to ?b]] [(reach ?a ?b) [?a :to ?c] (reach ?c ?b)]]"
PAIRS = "[:find ?a ?b :in $ % :where (reach ?a ?b)]"


def asked_by_deleting(monkeypatch: pytest.MonkeyPatch, edges: str, edge: str,
                      ) -> tuple[set[tuple[int, ...]], set[tuple[int, ...]],
                                 dict[tuple[int, ...], int]]:
    """The pairs the support check is asked about when ``edge`` is retracted, those the
    rederive step is asked about, and the query's change."""
    engine = Engine()
    engine.transact(edges)
    engine.register("r", PAIRS, [REACH])
    prepared = engine._queries["r"].prepared.local
    assert isinstance(prepared, PreparedRules)
    checked: set[Row] = set()
    rederived: set[Row] = set()
    witnessed, derivable = prepared.joins.witnessed, prepared.joins.derivable
    recursive = next(s for s in prepared.strata if s.recursive)
    supports = {id(rule.support) for r in recursive.relations for rule in r.rules
                if rule.witness is not None}  # read by the rederive step only

    def recording(program: JoinProgram, rows: Iterable[Row], accept: Callable[[Row], bool],
                  work: Work) -> set[Row]:
        rows = list(rows)
        checked.update(rows)
        return witnessed(program, rows, accept, work)

    def recording_rederive(program: JoinProgram, rows: Iterable[Row], work: Work) -> set[Row]:
        rows = list(rows)
        if id(program) in supports:
            rederived.update(rows)
        return derivable(program, rows, work)

    monkeypatch.setattr(prepared.joins, "witnessed", recording)
    monkeypatch.setattr(prepared.joins, "derivable", recording_rederive)
    changes = engine.transact(f"[[:db/retract {edge}]]").get("r", {})
    ids = engine.db.ids
    return ({tuple(ids.value(i) for i in row) for row in checked},
            {tuple(ids.value(i) for i in row) for row in rederived}, changes)


def test_a_head_resting_on_another_lower_derivation_is_not_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """0 → 1 → 3 and 0 → 2 → 4 → 3: reach(0, 3) and reach(2, 3) come from the same join of
    the registration (one level), so removing 0 → 2 takes from reach(0, 3) a derivation
    its level does not rest on (that one goes through reach(1, 3), a level below)."""
    checked, _, changes = asked_by_deleting(
        monkeypatch, "[[:db/add 0 :to 1] [:db/add 1 :to 3] [:db/add 0 :to 2]"
                     " [:db/add 2 :to 4] [:db/add 4 :to 3]]", "0 :to 2")
    assert checked == {(0, 2), (0, 4)}
    assert changes == {(0, 2): -1, (0, 4): -1}


def test_a_head_whose_lower_derivation_is_lost_is_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """0 → 2 → 3 and 0 → 1 → 4 → 3: now the lost derivation of reach(0, 3), through
    reach(2, 3) (an edge), is the lower one; the check finds the other, through reach(1, 3)
    — derived with it — not below it, so reach(0, 3) is marked and rederived: through that
    derivation, whose premise is still unmarked, without a search."""
    checked, rederived, changes = asked_by_deleting(
        monkeypatch, "[[:db/add 0 :to 2] [:db/add 2 :to 3] [:db/add 0 :to 1]"
                     " [:db/add 1 :to 4] [:db/add 4 :to 3]]", "0 :to 2")
    assert (0, 3) in checked
    # reach(0, 2) is marked too, but the check saw it underivable
    assert rederived == set()
    assert changes == {(0, 2): -1}


def test_a_head_whose_seen_derivation_is_marked_later_is_searched_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Cutting 0 → 2 and 5 → 3 at once: the check may see reach(0, 3) derived through
    reach(1, 3) (not below it), which the cut 5 → 3 marks two rounds later — then the
    rederive step searches, and finds 0 → 6 → 7 → 8 → 9 → 3 (which derivation the check
    sees first depends on the value ids' order)."""
    checked, _, changes = asked_by_deleting(
        monkeypatch, "[[:db/add 0 :to 2] [:db/add 2 :to 3] [:db/add 0 :to 1] [:db/add 1 :to 4]"
                     " [:db/add 4 :to 5] [:db/add 5 :to 3] [:db/add 0 :to 6] [:db/add 6 :to 7]"
                     " [:db/add 7 :to 8] [:db/add 8 :to 9] [:db/add 9 :to 3]]",
                     "0 :to 2] [:db/retract 5 :to 3")
    assert (0, 3) in checked
    assert changes == {(0, 2): -1, (5, 3): -1, (4, 3): -1, (1, 3): -1}


def test_a_pair_seen_derived_only_through_itself_is_not_put_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """1 ⇄ 2 → 3, cutting 2 → 3: the check sees reach(2, 3) derived through reach(1, 3)
    (above it), which rests on reach(2, 3) and is marked next round — so the derivation
    the check saw is a cycle, and neither pair comes back."""
    checked, _, changes = asked_by_deleting(
        monkeypatch, "[[:db/add 1 :to 2] [:db/add 2 :to 1] [:db/add 2 :to 3]]", "2 :to 3")
    assert {(2, 3), (1, 3)} <= checked
    assert changes == {(2, 3): -1, (1, 3): -1}


def test_a_head_seen_derived_only_through_marked_pairs_comes_back_without_a_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """0 → 1 → 2 and 1 → 3 → 2, cutting 1 → 2: reach(1, 2) is marked (its other derivation,
    through reach(3, 2), is not below it), then reach(0, 2), whose only derivation goes
    through the marked reach(1, 2).  The rederive step puts reach(1, 2) back through the
    derivation the check saw, and does not search for reach(0, 2): the insert step
    derives it from reach(1, 2), as it would any head of a tuple put back."""
    checked, rederived, changes = asked_by_deleting(
        monkeypatch, "[[:db/add 0 :to 1] [:db/add 1 :to 2] [:db/add 1 :to 3]"
                     " [:db/add 3 :to 2]]", "1 :to 2")
    assert {(1, 2), (0, 2)} <= checked
    assert rederived == set()
    assert changes == {}


def test_the_base_rule_is_asked_about_a_marked_head_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """0 → 2 → 3 and 0 → 1 → 4 → 3, cutting 0 → 2 and 4 → 3: the check sees reach(0, 3)
    derived through reach(1, 3) (not below it), which is marked a round later, so the
    rederive step searches for reach(0, 3) — but not with the base rule: it reads only the
    edges (final for the tick), and the check asked it about every pair no witness
    supports."""
    engine = Engine()
    engine.transact("[[:db/add 0 :to 2] [:db/add 2 :to 3] [:db/add 0 :to 1]"
                    " [:db/add 1 :to 4] [:db/add 4 :to 3]]")
    engine.register("r", PAIRS, [REACH])
    prepared = engine._queries["r"].prepared.local
    assert isinstance(prepared, PreparedRules)
    base = {id(rule.support) for s in prepared.strata if s.recursive for r in s.relations
            for rule in r.rules if rule.witness is None}
    asked: list[Row] = []
    derivable = prepared.joins.derivable

    def recording(program: JoinProgram, rows: Iterable[Row], work: Work) -> set[Row]:
        rows = list(rows)
        if id(program) in base:
            asked.extend(rows)
        return derivable(program, rows, work)

    monkeypatch.setattr(prepared.joins, "derivable", recording)
    changes = engine.transact("[[:db/retract 0 :to 2] [:db/retract 4 :to 3]]").get("r", {})
    ids = engine.db.ids
    assert sorted(tuple(ids.value(i) for i in row) for row in asked) == [
        (0, 2), (0, 3), (1, 3), (4, 3)]
    assert changes == {(0, 2): -1, (0, 3): -1, (1, 3): -1, (4, 3): -1}
