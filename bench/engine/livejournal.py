"""A LiveJournal-sized run: a power-law directed graph of 4.8 M nodes and 6.9×10^7 edges, bulk
loaded, the triangle count registered, ticks of 1,000 random edge changes (issue 37).

    python -m bench livejournal [--nodes 4847571] [--edges 68993773] [--laptop]
                                [--count triangles|apexes] [--tx-datoms 1000000]
                                [--ticks 200] [--tick-edges 1000] [--duckdb|--no-duckdb]
                                [--duckdb-timeout 1800] [--oracle|--no-oracle]
                                [--no-bootstrap] [--max-rss-gb 14] [--seed S]
                                [--executor local|spark] [--spark-master local[2]]

**The graph** (:func:`chung_lu`): SNAP's soc-LiveJournal1 has 4,847,571 nodes and 68,993,773
directed edges, a heavy-tailed degree distribution (power-law tail, exponent ~2.5; largest
out-degree 20,293, in-degree 13,906) and in- and out-degrees that go together (most links are
reciprocated).  A Chung–Lu expected-degree model reproduces that part of it and nothing else:
node ``i`` gets the weight ``(i + 1 + offset) ** -(2/3)`` (degree tail exponent
1 + 3/2 = 2.5), the offset chosen so the largest expected degree is LiveJournal's ~20,000
(without it the first node would expect 136,000 edges); an edge's source and target are both
drawn by weight, so a node's in- and out-degree are both its weight (correlated, as on
LiveJournal).  Self-loops and repeated pairs are dropped and drawn again until the graph has
``--edges`` distinct edges.  Chosen over R-MAT/Kronecker (whose degrees oscillate and whose
node count is a power of two) and over preferential attachment (sequential, not vectorisable)
because it is one vectorised draw per chunk: 6.9×10^7 edges are drawn in chunks of 5×10^6
(``searchsorted`` of uniform numbers in the cumulative weights), kept as one sorted
``int64`` array of ``source · nodes + target`` (552 MB) and cached as ``.npy``.  What it does
*not* have is LiveJournal's clustering (communities: LiveJournal has ~2.9×10^8 undirected
triangles): its triangles come from the hubs only.

**The run**: the edges are sent in source order (as SNAP's file lists them) through
``Engine.transact_columns`` (the bulk path), ``--tx-datoms`` at a time, with no query
registered; the engine is then idle (the spine's batches merged), and the count is
registered: its bootstrap timed.  ``--count triangles`` (default) is
``[:find (count ?a) . :with ?b ?c :where [?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]]``: the
``:with`` makes it count triangles (Datomic's basis is the *set* of find and with
variables: without it, ``(count ?a)`` counts the distinct ``?a`` at the corner of some
triangle, ``--count apexes``).  Then ``--ticks`` ticks of ``--tick-edges`` changed edges, each
half retractions of present edges and half additions of new edges drawn from the same model
(one ``transact_columns`` with ``added`` flags per tick).  Reported: the load rate, the process
RSS grown by the load per datom (``malloc_trim`` first) after the idle merge, the bootstrap
(seconds, CPU of all threads, RSS after it), the ticks' p50 / p99 / max wall time and CPU time
(the ticking thread's, and the process's: a big step runs on two threads), the elements a tick
touched, the count's step alone (its ``Work.seconds``: the rest of a tick is normalising and
applying), and the changed edges per second at the p50; each phase's peak RSS.
``--no-bootstrap``: the count's groups start empty (its evaluation skipped, a bench-only
stand-in), so the ticks cost what the count's do where the bootstrap would not finish in time,
but the count is only their net change.  ``--oracle`` (default on below 10^7 edges): the count kept
through the ticks must equal a fresh evaluation (``Engine.result``) and DuckDB's count of the
final graph.  ``--duckdb``: DuckDB (in a subprocess, so its memory is not the engine's; at most
``--duckdb-timeout`` seconds) counts the loaded graph's triangles (``count(*)`` of the
three-way self-join), the bootstrap's peer.  ``--max-rss-gb``: a watchdog ends the run when
the process grows past it (the machine is shared), after writing what was measured so far.

``--laptop``: 4.8×10^5 nodes and 6.9×10^6 edges (a tenth of each).

``--executor spark``: the same run with the database in Spark's state and the count's
bootstrap and steps on Spark (``--spark-master``, ``local[2]`` by default, or a cluster's
``spark://`` URL); the RSS and CPU columns are then the driver's Python process alone, and
the JVM and its Python workers' PSS (anonymous, and of mapped files) and CPU time (this
process's descendants: on a cluster, only what runs on this machine) are reported beside
them, at each phase's end and per tick.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.data import cache_dir
from bench.engine.spine import rss
from bench.engine.tx import TO, settle
from bench.harness import Results, log, markdown_table, percentile, run_json
from workers.engine import Engine
from workers.executors import Work
from workers.executors.dispatch import Prepared
from workers.executors.vectorised import Frame

LIVEJOURNAL_NODES, LIVEJOURNAL_EDGES = 4_847_571, 68_993_773  # SNAP soc-LiveJournal1
LIVEJOURNAL_MAX_DEGREE = 20_293  # its largest out-degree (in-degree: 13,906)
EXPONENT = 2 / 3  # weight (i + 1 + offset)^-EXPONENT: a degree tail of 1 + 1/EXPONENT = 2.5
DRAW_CHUNK = 5_000_000
BODY = "[?a :g/to ?b] [?a :g/to ?c] [?b :g/to ?c]"
COUNTS = {
    "triangles": f"[:find (count ?a) . :with ?b ?c :where {BODY}]",
    "apexes": f"[:find (count ?a) . :where {BODY}]",
}
DUCKDB_SQL = {
    "triangles": "SELECT count(*) FROM e AS p JOIN e AS q ON p.a = q.a "
                 "JOIN e AS r ON r.a = p.b AND r.b = q.b",
    "apexes": "SELECT count(DISTINCT p.a) FROM e AS p JOIN e AS q ON p.a = q.a "
              "JOIN e AS r ON r.a = p.b AND r.b = q.b",
}


# --- the graph --------------------------------------------------------------------------------


def weights(nodes: int, edges: int) -> np.ndarray:
    """Each node's expected degree: ``(i + 1 + offset)^-EXPONENT`` scaled to ``edges`` in all,
    the offset the one that makes the largest LiveJournal's largest out-degree scaled to
    ``edges`` (so a tenth of the graph has a tenth of the hubs' degree)."""
    ranks = np.arange(1, nodes + 1, dtype=np.float64)
    wanted = LIVEJOURNAL_MAX_DEGREE * edges / LIVEJOURNAL_EDGES
    low, high = 0.0, float(nodes)  # the largest weight falls as the offset grows
    for _ in range(60):
        offset = (low + high) / 2
        w = (ranks + offset) ** -EXPONENT
        if w[0] / w.sum() * edges > wanted:
            low = offset
        else:
            high = offset
    w = (ranks + high) ** -EXPONENT
    return w / w.sum() * edges


def draw(rng: np.random.Generator, cumulative: np.ndarray, count: int) -> np.ndarray:
    """``count`` node ids drawn by weight (``cumulative``: the weights' running sum, ending
    at 1), in increasing order (sorted needles walk the table in order: ~10× faster)."""
    picked = np.searchsorted(cumulative, np.sort(rng.random(count)), side="right")
    return np.minimum(picked, len(cumulative) - 1).astype(np.int64)


def draw_keys(rng: np.random.Generator, cumulative: np.ndarray, count: int) -> np.ndarray:
    """``count`` edges (with repeats and no self-loops) as ``source · nodes + target``."""
    us, vs = draw(rng, cumulative, count), draw(rng, cumulative, count)
    rng.shuffle(vs)  # independent of the sources
    keep = us != vs
    return us[keep] * len(cumulative) + vs[keep]


def chung_lu(nodes: int, edges: int, seed: int) -> np.ndarray:
    """``edges`` distinct directed edges on ``nodes`` nodes, sorted keys
    ``source · nodes + target``, drawn in chunks of ``DRAW_CHUNK``."""
    if edges > nodes * (nodes - 1) // 2:
        raise ValueError(f"{edges} edges is too dense for {nodes} nodes")
    w = weights(nodes, edges)
    cumulative = np.cumsum(w / w.sum())
    cumulative[-1] = 1.0
    rng = np.random.default_rng(seed)
    found = np.zeros(0, np.int64)
    while len(found) < edges:
        wanted = int((edges - len(found)) * 1.02) + 16
        pieces = [draw_keys(rng, cumulative, min(DRAW_CHUNK, wanted - done))
                  for done in range(0, wanted, DRAW_CHUNK)]
        found = np.unique(np.concatenate([found, *pieces]))
        log(f"  {len(found):,} distinct edges drawn")
    if len(found) > edges:  # drop the surplus at random, keep the order
        drop = rng.choice(len(found), len(found) - edges, replace=False)
        found = np.delete(found, drop)
    return found


def graph_path(nodes: int, edges: int, seed: int) -> Path:
    return cache_dir() / f"chunglu-n{nodes}-m{edges}-seed{seed}.npy"


def graph(nodes: int, edges: int, seed: int) -> np.ndarray:
    """The cached graph's sorted keys, generated (and cached) the first time."""
    path = graph_path(nodes, edges, seed)
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    log(f"generating a Chung-Lu graph: {nodes:,} nodes, {edges:,} edges")
    keys = chung_lu(nodes, edges, seed)
    log(f"  generated in {time.perf_counter() - started:.0f} s")
    np.save(path, keys)
    return keys


def degrees(keys: np.ndarray, nodes: int) -> dict[str, Any]:
    """The largest out- and in-degree and the median degree of a node with an edge."""
    out = np.bincount(keys // nodes, minlength=nodes)
    into = np.bincount(keys % nodes, minlength=nodes)
    return {"max_out": int(out.max()), "max_in": int(into.max()),
            "median_out_of_sources": float(np.median(out[out > 0])),
            "nodes_with_edges": int(np.count_nonzero(out + into)),
            "sum_out_squared": int((out.astype(np.float64) ** 2).sum())}


# --- DuckDB, in its own process -----------------------------------------------------------------


def duckdb_count(path: Path, nodes: int, count: str, removed: Path | None = None,
                 added: Path | None = None, spill: Path | None = None) -> dict[str, Any]:
    """DuckDB's count of the graph's triangles (``count``): the keys of ``path``, minus
    those of ``removed``, plus those of ``added``; the seconds of the count alone."""
    import duckdb
    import pyarrow as pa

    keys = np.load(path)
    if removed is not None and added is not None:
        keys = np.union1d(np.setdiff1d(keys, np.load(removed)), np.load(added))
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET memory_limit = '6GB'")  # a shared machine: spill beyond it
    if spill is not None:  # (the full graph's count spilled 27 GB before its timeout)
        con.execute(f"SET temp_directory = '{spill}'")
    con.register("edge_list", pa.table({"a": keys // nodes, "b": keys % nodes}))
    del keys
    started = time.perf_counter()
    con.execute("CREATE TABLE e AS SELECT * FROM edge_list")
    con.unregister("edge_list")
    loaded = time.perf_counter()
    (value,) = con.execute(DUCKDB_SQL[count]).fetchall()[0]
    return {"count": int(value), "load_s": loaded - started,
            "count_s": time.perf_counter() - loaded, "duckdb_version": duckdb.__version__}


def duckdb_in_child(args: argparse.Namespace, removed: Path | None = None,
                    added: Path | None = None) -> dict[str, Any]:
    """:func:`duckdb_count` in a subprocess, at most ``--duckdb-timeout`` seconds."""
    cmd = [sys.executable, "-m", "bench", "livejournal", "--one-duckdb",
           "--nodes", str(args.nodes), "--edges", str(args.edges), "--seed", str(args.seed),
           "--count", args.count]
    if removed is not None and added is not None:
        cmd += ["--removed", str(removed), "--added", str(added)]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="duckdb-spill-") as spill:  # gone even if killed
        try:
            return run_json_timeout([*cmd, "--spill", spill], args.duckdb_timeout)
        except subprocess.TimeoutExpired:
            return {"timeout_s": args.duckdb_timeout, "wall_s": time.perf_counter() - started}


def run_json_timeout(cmd: Sequence[str], timeout: float) -> dict[str, Any]:
    """:func:`run_json` with a timeout (the child is killed when it passes)."""
    if timeout <= 0:
        return run_json(cmd)
    import json

    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-20:])
        raise RuntimeError(f"{' '.join(cmd)} failed (status {proc.returncode}):\n{tail}")
    return dict(json.loads(lines[-1]))


# --- the engine -------------------------------------------------------------------------------


def watchdog(limit_bytes: int, output: Results, result: dict[str, Any],
             with_descendants: bool = False) -> None:
    """End the process (after writing the results so far) when its RSS passes the limit;
    meanwhile note each phase's peak RSS (``peak_rss_gib``).  ``with_descendants``: count
    its descendants' anonymous PSS too (Spark's JVM and Python workers: the machine is
    shared; the state files they map are page cache, left out)."""
    peaks = result.setdefault("peak_rss_gib", {})

    def watch() -> None:
        while True:
            with open("/proc/self/statm") as statm:
                resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            if with_descendants:
                resident += descendants()[0]  # anonymous: page cache is reclaimable
            phase = result.get("phase", "?")
            peaks[phase] = max(peaks.get(phase, 0.0), round(resident / 2**30, 3))
            if resident > limit_bytes:
                result["stopped"] = (f"RSS {resident / 2**30:.1f} GiB passed the limit "
                                     f"{limit_bytes / 2**30:.1f} GiB during "
                                     f"{result.get('phase', '?')}")
                log(result["stopped"])
                output.write({"result": result})
                os._exit(3)
            time.sleep(0.5 if with_descendants else 0.05)  # their smaps cost the driver CPU
    threading.Thread(target=watch, daemon=True).start()


def descendants() -> tuple[int, int, float]:
    """This process's descendants' memory — anonymous and file-backed (the state files their
    Python workers map: page cache, which the kernel may drop), both PSS so that shared
    pages count once — in bytes, and CPU time (seconds, with their reaped children's):
    under Spark ``local[N]`` the JVM and its Python workers, whose work and memory are the
    executor's, not the driver's."""
    anon = mapped = ticks = 0
    pending = [os.getpid()]
    while pending:
        pid = pending.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                pending += [int(c) for c in (task / "children").read_text().split()]
            except OSError:  # ended meanwhile
                continue
        if pid != os.getpid():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                rollup = dict(line.split()[:2] for line in Path(
                    f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
            except OSError:
                continue
            ticks += sum(map(int, stat[11:15]))  # utime stime cutime cstime
            anon += int(rollup["Pss_Anon:"]) + int(rollup["Pss_Shmem:"])
            mapped += int(rollup["Pss_File:"])
    return anon * 1024, mapped * 1024, ticks / os.sysconf("SC_CLK_TCK")


def engine_for(args: argparse.Namespace) -> Engine:
    """The engine on ``--executor``: under Spark on ``--spark-master``."""
    if args.executor == "local":
        return Engine()
    from workers.executors.spark import SparkSettings  # PySpark only when asked

    started = time.perf_counter()
    engine = Engine(executor="spark", spark=SparkSettings(master=args.spark_master))
    log(f"Spark engine ({args.spark_master}) made in {time.perf_counter() - started:.1f} s")
    return engine


def load(engine: Engine, keys: np.ndarray, nodes: int, tx_datoms: int) -> float:
    """Send the edges through ``transact_columns``, ``tx_datoms`` at a time; the seconds."""
    started = time.perf_counter()
    for offset in range(0, len(keys), tx_datoms):
        piece = keys[offset:offset + tx_datoms]
        engine.transact_columns(piece // nodes, TO, piece % nodes, tx_id=offset // tx_datoms)
        if offset // tx_datoms % 10 == 9:
            done = offset + len(piece)
            log(f"  {done:,} edges in {time.perf_counter() - started:.0f} s, "
                f"RSS {rss(trim=False) / 2**30:.2f} GiB")
    return time.perf_counter() - started


class Changes:
    """The graph's edits since the load: which loaded edges are retracted, which new ones
    added; picks ticks of present edges to retract and absent ones to add."""

    def __init__(self, keys: np.ndarray, nodes: int, seed: int) -> None:
        self.keys, self.nodes = keys, nodes
        w = weights(nodes, len(keys))
        self.cumulative = np.cumsum(w / w.sum())
        self.cumulative[-1] = 1.0
        self.rng = np.random.default_rng(seed)
        self.removed: set[int] = set()
        self.added: set[int] = set()

    def loaded(self, key: int) -> bool:
        i = int(np.searchsorted(self.keys, key))
        return i < len(self.keys) and int(self.keys[i]) == key

    def tick(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``size // 2`` present edges to retract and ``size - size // 2`` absent to add:
        keys and ``added`` flags."""
        retract: list[int] = []
        while len(retract) < size // 2:
            if self.added and self.rng.random() < len(self.added) / len(self.keys):
                key = self.added.pop()  # a formerly added edge, now retracted
            else:
                key = int(self.keys[self.rng.integers(len(self.keys))])
                if key in self.removed or key in retract:
                    continue
                self.removed.add(key)
            retract.append(key)
        add: list[int] = []
        while len(add) < size - size // 2:
            for key in draw_keys(self.rng, self.cumulative, 2 * size).tolist():
                present = (self.loaded(key) and key not in self.removed) or key in self.added
                if not present and key not in add and key not in retract:
                    add.append(key)
                    if len(add) == size - size // 2:
                        break
        for key in add:
            if key in self.removed:
                self.removed.discard(key)
            else:
                self.added.add(key)
        keys = np.array(retract + add, dtype=np.int64)
        flags = np.array([False] * len(retract) + [True] * len(add))
        return keys, flags

    def save(self, directory: Path) -> tuple[Path, Path]:
        removed, added = directory / "removed.npy", directory / "added.npy"
        np.save(removed, np.array(sorted(self.removed), dtype=np.int64))
        np.save(added, np.array(sorted(self.added), dtype=np.int64))
        return removed, added


def scalar(rows: dict[Any, int]) -> int:
    """The count a scalar find's result holds (0 for no row: no triangle)."""
    present = [row for row, weight in rows.items() if weight > 0]
    assert len(present) <= 1, rows  # without the bootstrap, the net change (maybe < 0)
    return int(present[0][0]) if present else 0


def ticks(engine: Engine, changes: Changes, count: int, size: int, current: dict[Any, int],
          result: dict[str, Any]) -> tuple[list[float], list[float]]:
    """Step ``count`` ticks of ``size`` changed edges; wall and thread-CPU seconds of each.
    ``current`` (the count's result) follows the changes."""
    wall, cpu = [], []
    process, elements = result.setdefault("tick_process_cpu_s", []), []
    steps = result.setdefault("tick_step_s", [])  # the count's step alone (Work.seconds)
    spark = engine.dispatch.mode == "spark"
    spark_cpu = result.setdefault("tick_spark_cpu_s", [])  # the JVM and its Python workers'
    nodes = changes.nodes
    for t in range(count):
        keys, flags = changes.tick(size)
        started_spark = descendants()[2] if spark else 0.0  # read outside the timed tick
        started, started_cpu = time.perf_counter(), time.thread_time()
        started_process = time.process_time()  # all threads: a big step runs on several
        report = engine.transact_columns(keys // nodes, TO, keys % nodes, added=flags)
        wall.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - started_cpu)
        process.append(time.process_time() - started_process)
        elements.append(sum(work.elements for work in engine.last_work.values()))
        steps.append(sum(work.seconds for work in engine.last_work.values()))
        if spark:
            spark_cpu.append(descendants()[2] - started_spark)
        for row, weight in report.get("count", {}).items():
            current[row] = current.get(row, 0) + weight
            if not current[row]:
                del current[row]
        if t % 50 == 49:  # the newer batches grow from tick to tick: the last 50's p50 too
            windows = result.setdefault("tick_p50_by_50_s", [])
            windows.append(percentile(wall[-50:], 0.5))
            log(f"  {t + 1} ticks, p50 so far {percentile(wall, 0.5) * 1e3:.1f} ms, "
                f"of the last 50 {windows[-1] * 1e3:.1f} ms")
            result["ticks_done"] = t + 1
    result["tick_elements_p50"] = percentile(elements, 0.5)
    return wall, cpu


# --- the command --------------------------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line."""
    parser.add_argument("--nodes", type=int, default=None,
                        help=f"nodes (default LiveJournal's {LIVEJOURNAL_NODES})")
    parser.add_argument("--edges", type=int, default=None,
                        help=f"distinct edges (default LiveJournal's {LIVEJOURNAL_EDGES})")
    parser.add_argument("--laptop", action="store_true",
                        help="a tenth of LiveJournal: 484757 nodes, 6899377 edges")
    parser.add_argument("--count", choices=tuple(COUNTS), default="triangles",
                        help="triangles (with ?b ?c), or the distinct ?a of the issue's "
                             "query without :with (default triangles)")
    parser.add_argument("--tx-datoms", type=int, default=1_000_000,
                        help="edges per bulk-load transaction (default 1000000)")
    parser.add_argument("--ticks", type=int, default=200, help="ticks (default 200)")
    parser.add_argument("--tick-edges", type=int, default=1000,
                        help="changed edges per tick (default 1000)")
    parser.add_argument("--duckdb", action=argparse.BooleanOptionalAction, default=True,
                        help="DuckDB counts the loaded graph (default on)")
    parser.add_argument("--duckdb-timeout", type=float, default=1800,
                        help="seconds DuckDB may take, in its subprocess (default 1800)")
    parser.add_argument("--oracle", action=argparse.BooleanOptionalAction, default=None,
                        help="check the count after the ticks against a fresh evaluation "
                             "and DuckDB (default: below 10^7 edges)")
    parser.add_argument("--bootstrap", action=argparse.BooleanOptionalAction, default=True,
                        help="evaluate the count when it registers (default on); off: its "
                             "groups start empty (the evaluation skipped), so the ticks cost "
                             "what the count's do but its value is only their net change")
    parser.add_argument("--max-rss-gb", type=float, default=14.0,
                        help="end the run when the process passes this RSS (default 14)")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    parser.add_argument("--executor", choices=("local", "spark"), default="local",
                        help="where the database and the count run (default local)")
    parser.add_argument("--spark-master", default="local[2]",
                        help="Spark's master under --executor spark (default local[2])")
    parser.add_argument("--one-duckdb", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--removed", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--added", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--spill", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    scale = 10 if args.laptop else 1
    args.nodes = args.nodes or LIVEJOURNAL_NODES // scale
    args.edges = args.edges or LIVEJOURNAL_EDGES // scale
    if args.oracle is None:
        args.oracle = args.edges < 10_000_000 and args.bootstrap
    if args.oracle and not args.bootstrap:
        parser.error("--oracle needs the bootstrap")
    if min(args.nodes, args.edges, args.tx_datoms, args.ticks, args.tick_edges) < 2:
        parser.error("--nodes, --edges, --tx-datoms, --ticks, --tick-edges must be >= 2")
    return args


def run(args: argparse.Namespace) -> None:
    """Generate, load, register, tick; print the table and write the results file."""
    if args.one_duckdb:
        print(__import__("json").dumps(duckdb_count(
            graph_path(args.nodes, args.edges, args.seed), args.nodes, args.count,
            args.removed, args.added, args.spill)))
        return
    output = Results("livejournal", args)
    keys = graph(args.nodes, args.edges, args.seed)
    shape = degrees(keys, args.nodes)
    result: dict[str, Any] = {"nodes": args.nodes, "edges": len(keys), "degrees": shape,
                              "query": COUNTS[args.count], "phase": "load"}
    log(f"graph: {shape}")
    spark = args.executor == "spark"
    watchdog(int(args.max_rss_gb * 2**30), output, result, with_descendants=spark)
    engine = engine_for(args)
    note_spark(result, spark, "started")
    before = rss()
    log(f"loading {len(keys):,} edges through transact_columns, {args.tx_datoms:,} at a time")
    load_s = load(engine, keys, args.nodes, args.tx_datoms)
    datoms = engine.datoms
    loaded = rss() - before
    started = time.perf_counter()
    engine.idle()
    settle(engine)
    result.update(datoms=datoms, load_s=load_s, load_datoms_per_s=datoms / load_s,
                  rss_bytes_per_datom_loaded=loaded / datoms,
                  idle_s=time.perf_counter() - started,
                  rss_bytes_per_datom=(rss() - before) / datoms, phase="bootstrap")
    note_spark(result, spark, "loaded")
    output.write({"result": result})
    log(f"loaded: {datoms / load_s:,.0f} datoms/s, {result['rss_bytes_per_datom']:.1f} B/datom")
    if args.duckdb:  # the engine's memory stays what it is: DuckDB runs in a child
        log("DuckDB counting the loaded graph (a subprocess)")
        result["duckdb_bootstrap"] = duckdb_in_child(args)
        log(f"  {result['duckdb_bootstrap']}")
        output.write({"result": result})
    log(f"registering {COUNTS[args.count]}")
    started, started_cpu = time.perf_counter(), time.process_time()
    if not args.bootstrap:  # the full evaluation skipped: an empty result to start from
        evaluate = engine.dispatch.evaluate
        def empty(prepared: Prepared) -> tuple[Frame, Work]:
            return Frame([np.zeros(0, np.int64)] * 3, np.zeros(0, np.int64),
                         np.zeros(0, np.int64)), Work()

        engine.dispatch.evaluate = empty  # type: ignore[method-assign]
    current = dict(engine.register("count", COUNTS[args.count]))
    if not args.bootstrap:
        engine.dispatch.evaluate = evaluate  # type: ignore[method-assign]
    result.update(bootstrap_s=time.perf_counter() - started,
                  bootstrap_cpu_s=time.process_time() - started_cpu,  # all its threads
                  bootstrap_count=scalar(current),
                  rss_bytes_per_datom_bootstrapped=(rss() - before) / datoms, phase="ticks")
    note_spark(result, spark, "bootstrapped")
    output.write({"result": result})
    log(f"  {result['bootstrap_count']:,} in {result['bootstrap_s']:.1f} s")
    changes = Changes(keys, args.nodes, args.seed + 1)
    wall, cpu = ticks(engine, changes, args.ticks, args.tick_edges, current, result)
    p50 = percentile(wall, 0.5)
    result.update(ticks={"count": len(wall), "edges": args.tick_edges, "p50_s": p50,
                         "p99_s": percentile(wall, 0.99), "max_s": max(wall),
                         "cpu_p50_s": percentile(cpu, 0.5), "cpu_p99_s": percentile(cpu, 0.99),
                         "process_cpu_p50_s": percentile(result["tick_process_cpu_s"], 0.5),
                         "process_cpu_p99_s": percentile(result["tick_process_cpu_s"], 0.99),
                         "step_p50_s": percentile(result["tick_step_s"], 0.5),
                         "edges_per_s_p50": args.tick_edges / p50,
                         "edges_per_cpu_s_p50": args.tick_edges / percentile(cpu, 0.5)},
                  final_count=scalar(current), phase="oracle",
                  rss_bytes_per_datom_ticked=(rss() - before) / datoms)
    note_spark(result, spark, "ticked")
    if spark:
        result["ticks"]["spark_cpu_p50_s"] = percentile(result["tick_spark_cpu_s"], 0.5)
    output.write({"result": result})
    if args.oracle:
        fresh = scalar(engine.result("count"))
        result["oracle"] = {"incremental": scalar(current), "fresh": fresh}
        removed, added = changes.save(Path(output_dir()))
        duck = duckdb_in_child(args, removed, added)
        result["oracle"]["duckdb"] = duck.get("count")
        log(f"oracle: {result['oracle']}")
        if not scalar(current) == fresh == duck.get("count", fresh):
            result["phase"] = "oracle failed"
            output.write({"result": result})
            raise SystemExit(f"the count kept through the ticks differs: {result['oracle']}")
    result["phase"] = "done"
    print(table(args, result))
    output.write({"result": result})


def note_spark(result: dict[str, Any], spark: bool, at: str) -> None:
    """Under Spark, the JVM and its Python workers' anonymous and file-backed PSS (GiB) and
    CPU time so far (s) ``at`` a phase's end: the driver's RSS and CPU leave them out."""
    if spark:
        anon, mapped, cpu = descendants()
        result.setdefault("spark_pss_gib", {})[at] = round(anon / 2**30, 3)
        result.setdefault("spark_mapped_gib", {})[at] = round(mapped / 2**30, 3)
        result.setdefault("spark_cpu_s", {})[at] = round(cpu, 2)


def output_dir() -> Path:
    path = cache_dir() / "livejournal-changes"
    path.mkdir(exist_ok=True)
    return path


def table(args: argparse.Namespace, r: dict[str, Any]) -> str:
    """The run as one markdown table."""
    duck = r.get("duckdb_bootstrap", {})
    duck_cell = ("—" if not duck else f"> {duck['timeout_s']:.0f} s (stopped)"
                 if "timeout_s" in duck else f"{duck['count_s']:.1f} s ({duck['count']:,})")
    t = r["ticks"]
    header = (f"Chung-Lu graph, {r['nodes']:,} nodes, {r['edges']:,} edges (max out/in degree "
              f"{r['degrees']['max_out']:,} / {r['degrees']['max_in']:,}); {args.count}: "
              f"{r['bootstrap_count']:,}; executor {args.executor}"
              + (f" ({args.spark_master}; JVM and Python workers' anonymous PSS, GiB: "
                 f"{r['spark_pss_gib']}, mapped files: {r['spark_mapped_gib']}, "
                 f"CPU so far, s: {r['spark_cpu_s']}; a tick's p50 "
                 f"{t['spark_cpu_p50_s'] * 1e3:.0f} ms)" if "spark_pss_gib" in r else "")
              + "\n")
    return header + markdown_table(
        ["edges", "load (datoms/s)", "RSS (B/datom)", "bootstrap wall / CPU (s)", "DuckDB count",
         "RSS after bootstrap (B/datom)", f"ticks of {t['edges']:,}: p50 / p99 (ms)",
         "CPU p50, ticking thread / all (ms)", "changed edges/s at p50"],
        [[f"{r['edges']:,}", f"{r['load_datoms_per_s']:,.0f}",
          f"{r['rss_bytes_per_datom']:.1f}",
          f"{r['bootstrap_s']:.1f} / {r['bootstrap_cpu_s']:.1f}", duck_cell,
          f"{r['rss_bytes_per_datom_bootstrapped']:.1f}",
          f"{t['p50_s'] * 1e3:.1f} / {t['p99_s'] * 1e3:.1f}",
          f"{t['cpu_p50_s'] * 1e3:.1f} / {t['process_cpu_p50_s'] * 1e3:.1f}",
          f"{t['edges_per_s_p50']:,.0f}"]])
