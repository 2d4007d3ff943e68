"""Full triangle result (a query's bootstrap, `engine.register`) vs graph size and backend.

    python -m bench bootstrap [--edges 100000 1000000] [--masters local[1] local[2]]
                              [--seed S] [--no-pegase]

For the PEGASE grid and a seeded power-law graph per `--edges` size (one datom
`[a :g/to b]` per edge), the triangle query's full result is computed by the local executor,
the Spark executor once per master, and DuckDB (a SQL self-join over an edge table, the same
orientation as the Datalog query). Every measurement runs in its own subprocess
(`--one BACKEND`), so each Spark master gets a fresh JVM and no backend inherits another's
heap. Only the evaluation is timed; loading the data (and, for Spark, writing it to the
executor's state location) is reported separately, Spark startup is excluded. All backends must
return the same rows (count and an order-independent checksum). Results go to
bench/results/bootstrap-<start>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.data import Edge, load_graph, node_count, powerlaw_graph
from bench.engine.tx import load_ticks, to_tx
from bench.harness import MismatchError, Results, log, markdown_table, run_json
from bench.queries import QUERIES

QUERY = "triangle"
# Edges per load transaction (untimed): under executor=spark a tick is two Spark jobs, so
# the small ticks of other benchmarks' loads would take minutes at 10^7 edges.
LOAD_CHUNK = 100_000
PEGASE = "pegase"
CHECKSUM_MASK = (1 << 64) - 1
# [?a :g/to ?b] [?b :g/to ?c] [?a :g/to ?c], columns in the Datalog query's find order
TRIANGLE_SQL = (
    "SELECT ab.a AS a, ab.b AS b, bc.b AS c FROM edges ab "
    "JOIN edges bc ON bc.a = ab.b "
    "JOIN edges ac ON ac.a = ab.a AND ac.b = bc.b"
)


@dataclass(frozen=True)
class Backend:
    """One column of the table: what `--one` runs, and with which Spark master."""

    kind: str  # local | spark | duckdb
    master: str | None = None

    @property
    def label(self) -> str:
        return f"spark {self.master}" if self.kind == "spark" else self.kind


# --- graphs -------------------------------------------------------------------------------


def graph(spec: str, seed: int) -> tuple[list[Edge], str]:
    """The graph named by `spec` ('pegase' or an edge count) and a label."""
    if spec == PEGASE:
        return load_graph(PEGASE, seed)
    edges = powerlaw_graph(int(spec), seed)
    return edges, f"power-law (Chung-Lu, PEGASE's average degree) m={len(edges)} seed={seed}"


# --- one measurement (runs in a subprocess) -----------------------------------------------


def checksum(rows: Any) -> int:
    """Order-independent fingerprint of a row set (ints hash the same in every process)."""
    return sum(hash(tuple(row)) for row in rows) & CHECKSUM_MASK


def measure_engine(edges: list[Edge], backend: Backend) -> dict[str, Any]:
    """Load the graph into a fresh engine, then time `register` alone."""
    from workers.engine import Engine

    started = time.perf_counter()
    if backend.kind == "spark":
        from workers.executors.spark import SparkSettings

        settings = SparkSettings(master=backend.master or "local[*]")
        engine = Engine(strategy="delta", executor="spark", spark=settings)
    else:
        engine = Engine(strategy="delta", executor="local")
    ready = time.perf_counter()
    for tick in load_ticks(edges, LOAD_CHUNK):
        engine.transact(to_tx(tick))
    loaded = time.perf_counter()
    state_s = settle(engine)
    begin = time.perf_counter()
    result = engine.register(QUERY, QUERIES[QUERY])
    bootstrap_s = time.perf_counter() - begin
    return {
        "startup_s": ready - started,
        "load_s": loaded - ready,
        "state_s": state_s,
        "bootstrap_s": bootstrap_s,
        "rows": len(result),
        "checksum": checksum(result),
    }


def settle(engine: Any) -> float:
    """Let the engine be idle after the load, as a worker is when its poll comes back
    empty, and wait for what that starts: the local spine merges its batches; under Spark
    the state is written (it is written on first use) and its batches summed into an
    indexed base (``StateStore.compact_idle``) — Spark jobs that would otherwise share the
    cores with the timed one, or not, by chance.  The timed register is then the
    evaluation alone, on every backend.  Seconds."""
    started = time.perf_counter()
    spark = engine.dispatch.spark
    if spark is not None:
        spark.manifest()
        spark.state.store.settle()  # a compaction the load started
    engine.idle()
    engine.db.state.settle()
    if spark is not None:
        spark.state.store.settle()
    return time.perf_counter() - started


def measure_duckdb(edges: list[Edge]) -> dict[str, Any]:
    """Load an in-memory edge table, then time the triangle self-join, materialised as an
    Arrow table (DuckDB's fastest full fetch); the checksum is computed untimed."""
    import duckdb
    import pyarrow as pa

    started = time.perf_counter()
    con = duckdb.connect()
    con.register("edge_list", pa.table({"a": [u for u, _ in edges], "b": [v for _, v in edges]}))
    con.execute("CREATE TABLE edges AS SELECT * FROM edge_list")
    con.unregister("edge_list")
    loaded = time.perf_counter()
    result = con.sql(TRIANGLE_SQL).to_arrow_table()
    bootstrap_s = time.perf_counter() - loaded
    columns = [result.column(name).to_pylist() for name in ("a", "b", "c")]
    (threads,) = con.execute("SELECT current_setting('threads')").fetchall()[0]
    return {
        "startup_s": 0.0,
        "load_s": loaded - started,
        "state_s": 0.0,
        "bootstrap_s": bootstrap_s,
        "rows": result.num_rows,
        "checksum": checksum(zip(*columns, strict=True)),
        "duckdb_version": duckdb.__version__,
        "duckdb_threads": int(threads),
    }


def measure_one(spec: str, backend: Backend, seed: int) -> dict[str, Any]:
    """One backend on one graph, as the JSON line `--one` prints."""
    edges, _ = graph(spec, seed)
    out = measure_duckdb(edges) if backend.kind == "duckdb" else measure_engine(edges, backend)
    return {"backend": backend.label, "graph": spec, "edges": len(edges)} | out


# --- the parent run -----------------------------------------------------------------------


def run_child(spec: str, backend: Backend, seed: int) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and parse its JSON (stdout's last line)."""
    cmd = [sys.executable, "-m", "bench", "bootstrap", "--one", backend.kind,
           "--graph", spec, "--seed", str(seed)]
    if backend.master is not None:
        cmd += ["--master", backend.master]
    log(f"{spec}: {backend.label}")
    return run_json(cmd)


def check(spec: str, results: list[dict[str, Any]]) -> None:
    """Raise MismatchError unless every backend found the same triangles."""
    seen = {(r["rows"], r["checksum"]) for r in results}
    if len(seen) > 1:
        found = ", ".join(f"{r['backend']}: {r['rows']} rows (#{r['checksum']:x})"
                          for r in results)
        raise MismatchError(f"graph {spec}: backends disagree: {found}")


def seconds(value: float) -> str:
    """A seconds cell."""
    return f"{value:,.3f}"


def edges_cell(spec: str, edges: int) -> str:
    """The edges column, naming the PEGASE row."""
    return f"{edges:,} (PEGASE)" if spec == PEGASE else f"{edges:,}"


def tables(runs: list[tuple[str, list[dict[str, Any]]]], backends: list[Backend]) -> str:
    """The bootstrap table, then the (untimed) load table."""
    labels = [b.label for b in backends]
    timed = [
        [edges_cell(spec, rs[0]["edges"]), f"{rs[0]['rows']:,}"]
        + [seconds(r["bootstrap_s"]) for r in rs]
        for spec, rs in runs
    ]
    load_headers = ["edges"]
    for b in backends:
        load_headers.append(f"{b.label} load s")
        if b.kind != "duckdb":
            load_headers.append(f"{b.label} idle s")
    loads = []
    for spec, rs in runs:
        row = [edges_cell(spec, rs[0]["edges"])]
        for b, r in zip(backends, rs, strict=True):
            row.append(seconds(r["load_s"]))
            if b.kind != "duckdb":
                row.append(seconds(r["state_s"]))
        loads.append(row)
    return (
        markdown_table(["edges", "triangles", *(f"{label} s" for label in labels)], timed)
        + "\n\nnot timed above (data loading, and the idle time after it):\n\n"
        + markdown_table(load_headers, loads)
    )


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line (parent run, or one `--one` measurement)."""
    parser.add_argument("--edges", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="sizes of the generated power-law graphs (default 100000 1000000)")
    parser.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"],
                        help="Spark masters to compare (default local[1] local[2])")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    parser.add_argument("--no-pegase", action="store_true", help="skip the PEGASE graph")
    parser.add_argument("--one", choices=["local", "spark", "duckdb"],
                        help="internal: run one measurement and print it as JSON")
    parser.add_argument("--graph", default=PEGASE, help="with --one: 'pegase' or an edge count")
    parser.add_argument("--master", default="local[2]", help="with --one spark: the master")
    args = parser.parse_args(argv)
    if args.graph != PEGASE and not args.graph.isdigit():
        parser.error("--graph takes 'pegase' or an edge count")
    if any(n < 1 for n in args.edges):
        parser.error("--edges must be positive")
    return args


def run(args: argparse.Namespace) -> None:
    """`--one`: measure and print JSON; otherwise every backend on every graph, each in a
    subprocess: print tables, write JSON."""
    if args.one is not None:
        backend = Backend(args.one, args.master if args.one == "spark" else None)
        print(json.dumps(measure_one(args.graph, backend, args.seed)))
        return
    output = Results("bootstrap", args)
    backends = [Backend("local"), *(Backend("spark", m) for m in args.masters),
                Backend("duckdb")]
    specs = ([] if args.no_pegase else [PEGASE]) + [str(n) for n in args.edges]
    graphs = {}
    for spec in specs:  # generate and cache up front: subprocesses only read
        edges, label = graph(spec, args.seed)
        graphs[spec] = {"name": label, "edges": len(edges), "nodes": node_count(edges)}
        print(f"graph {spec}: {label}: {len(edges):,} edges, {graphs[spec]['nodes']:,} nodes")
    runs = []
    for spec in specs:
        results = [run_child(spec, backend, args.seed) for backend in backends]
        check(spec, results)
        runs.append((spec, results))
    threads = runs[0][1][-1].get("duckdb_threads") if runs else None
    print(f"query: {QUERIES[QUERY]}; duckdb threads: {threads}; seconds of the register "
          "call (local, spark) or of the SQL query to an Arrow table (duckdb)")
    print()
    print(tables(runs, backends))
    output.write({"graphs": graphs, "sql": TRIANGLE_SQL, "runs": dict(runs)})
