"""The pure logic behind `python -m bench peers`: ticks, count checks, set changes,
query translation and the catch-up / stop rules."""

import sqlite3

import pytest

from bench.data import Tick
from bench.harness import MismatchError
from bench.peers.base import SetChanges, check_counts
from bench.peers.suite import Cell, predicted_s
from bench.peers.translate import join_chain, to_cypher, to_sql
from bench.queries import SPECS, render

A, B, C = ("g/to", 1, 2), ("g/to", 2, 3), ("g/to", 1, 3)


def test_equal_counts_pass():
    check_counts("x", [0, 3, 1], [0, 3, 1])


def test_first_differing_tick_is_named():
    with pytest.raises(MismatchError, match="tick 1 changed 2 rows, the reference 3"):
        check_counts("x", [0, 3, 1], [0, 2, 1])


def test_more_ticks_than_the_reference_fail():
    with pytest.raises(MismatchError, match="ran 2 ticks"):
        check_counts("x", [0], [0, 0])


def test_fewer_ticks_than_the_reference_pass():
    check_counts("x", [0, 3, 1], [0])


def test_net_tick_cancels_an_add_then_retract():
    ticks = [Tick(adds=(A, B)), Tick(removes=(A,), adds=(C,)), Tick(removes=(B,))]
    assert Tick.net(ticks) == Tick(adds=(C,))


def test_net_tick_keeps_a_retract_of_a_loaded_fact():
    assert Tick.net([Tick(removes=(A,)), Tick(adds=(B,))]) == Tick(adds=(B,), removes=(A,))


def test_tick_round_trips_through_json():
    tick = Tick(adds=(A,), removes=(B,))
    assert Tick.from_json({k: [list(f) for f in v] for k, v in tick.to_json().items()}) == tick


def test_set_changes_count_presence_flips_only():
    changes = SetChanges()
    changes.add(("a",), 1)
    changes.add(("a",), 1)  # a second derivation: still one row
    changes.add(("b",), 1)
    assert changes.take() == 2
    changes.add(("a",), -1)  # one derivation left: no change
    changes.add(("b",), -1)
    changes.add(("b",), 1)  # gone and back within one tick: no change
    assert changes.take() == 0
    changes.add(("a",), -1)
    assert changes.take() == 1


def run_sql(spec_name: str, facts: list[tuple[str, int, int]]) -> set[tuple[int, ...]]:
    con = sqlite3.connect(":memory:")
    spec = SPECS[spec_name]
    for attribute in spec.attributes:
        name = "f_" + "".join(c if c.isalnum() else "_" for c in attribute)
        con.execute(f"CREATE TABLE {name} (e, v)")
        con.executemany(f"INSERT INTO {name} VALUES (?, ?)",
                        [(e, v) for a, e, v in facts if a == attribute])
    return set(con.execute(to_sql(spec)).fetchall())


def test_sql_triangle():
    assert run_sql("triangle", [A, B, C]) == {(1, 2, 3)}


def test_sql_two_path_is_a_set():
    assert run_sql("2path", [A, B, C, ("g/to", 1, 4), ("g/to", 4, 3)]) == {(1, 3)}


def test_sql_closure():
    assert run_sql("tc", [A, B]) == {(1, 2), (2, 3), (1, 3)}


def test_sql_star_uses_its_constants():
    sql = to_sql(SPECS["star"])
    assert "p0.v = 10000" in sql and "p1.v = 30" in sql


def test_cypher_matches_constants_by_id():
    assert to_cypher(SPECS["star"]).startswith("MATCH (n_p:N)-[:f_person_city]->(:N {id: 10000})")


def test_join_chain_follows_shared_variables():
    start, steps = join_chain(SPECS["4cycle"])
    assert start == ("a", "g/to", "b")
    assert [(s.key, s.new) for s in steps] == [(("b",), ("c",)), (("c",), ("d",)),
                                               (("d", "a"), ())]


def test_render_keeps_the_original_query_text():
    assert render(SPECS["triangle"]) == (
        "{:find [?a ?b ?c] :where [[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]}")


def test_prediction_extrapolates_from_the_largest_tick():
    cell = Cell(1, ns=[2_000_000], counts=[0], catchup=(39, 78_000_000))
    assert predicted_s([cell], 100) == pytest.approx(0.2)
    assert predicted_s([], 100) == 0.0
