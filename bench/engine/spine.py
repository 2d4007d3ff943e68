"""The spine (issue 15) against the dict tries: bytes per datom, load rate, verb latencies.

    python -m bench spine [--edges 1000000] [--chunk 100000] [--samples 10000] [--seed S]

For a seeded power-law graph (one datom `[u :g/to v]` per edge), each structure is loaded
in its own subprocess (`--one dict|spine`), so neither inherits the other's heap:

- **dict**: today's `MemoryArrangement` (four nested-dict tries over the values), loaded in
  chunks of `--chunk` datoms, each chunk a `{datom: 1}` delta;
- **spine**: `ValueIds` + `SpineArrangement`, each chunk interned as columns and written as
  one batch (`update_columns`), batches merged geometrically.

Reported: the process RSS grown by the load, per datom (the input columns are read before
the first reading; `malloc_trim` hands freed temporaries back before it, and the untrimmed
growth is shown too), the arrays' own bytes for the spine, the load rate, the mean cost of a
tick of one new datom afterwards, and the median latency of the one-prefix verbs a
triangle's GenericJoin calls (the dict side through today's `TrieExtender`; the spine as the
ticks left it, then compacted into one batch), plus the batch-of-prefixes verbs per prefix.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow.csv

from bench.data import powerlaw_graph, powerlaw_path
from bench.harness import (
    MismatchError,
    Results,
    log,
    markdown_table,
    percentile,
    run_json,
    time_calls,
)
from workers.arrangements import IndexOrder, MemoryArrangement
from workers.arrangements.spine import SpineArrangement
from workers.arrangements.values import ValueIds
from workers.edn import keyword
from workers.executors.extenders import TrieExtender
from workers.plan.ir import ExtenderSpec, Role, Step, StepKind

TO = keyword("g/to")
SIDES = ("dict", "spine")
VERBS = ("count out", "propose out", "intersect in", "weight edge")


def rss(trim: bool = True) -> int:
    """The process's resident set, in bytes (Linux); ``trim``: after handing the allocators'
    free memory back (``malloc_trim``, and PyArrow's pool: a load's freed temporaries are not
    the structure's — reading a graph of 10^7 edges left ~540 MB in PyArrow's pool, handed
    back later, in the midst of the load measured)."""
    gc.collect()
    if trim:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        pyarrow.default_memory_pool().release_unused()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def grown_since(before: int) -> dict[str, int]:
    """RSS growth since ``before`` (trimmed), without trimming and then trimmed."""
    untrimmed = rss(trim=False) - before
    return {"rss_untrimmed_bytes": untrimmed, "rss_bytes": rss() - before}


def edge_columns(edges: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The cached graph as two int64 columns, never as Python tuples."""
    table = pyarrow.csv.read_csv(powerlaw_path(edges, seed))
    return (table.column("from").to_numpy().astype(np.int64),
            table.column("to").to_numpy().astype(np.int64))


def median_ns(call: Callable[[Any], Any], payloads: Sequence[Any]) -> float:
    latencies, _ = time_calls(call, payloads)
    return percentile(latencies, 0.5)


def mean_ns(call: Callable[[Any], Any], payloads: Sequence[Any]) -> float:
    """The mean, not the median: a tick that freezes the layer and merges counts in it."""
    latencies, _ = time_calls(call, payloads)
    return sum(latencies) / len(latencies)


def spec(order: IndexOrder, *steps: Step) -> ExtenderSpec:
    return ExtenderSpec(pattern=0, role=Role.OLD, order=order, steps=steps)


# --- the two sides, each in its own process ------------------------------------------------


def measure_dict(us: np.ndarray, vs: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    """Today's tries: load, one-datom ticks, verbs through the extenders."""
    tries = MemoryArrangement()
    before = rss()
    started = time.perf_counter()
    for i in range(0, len(us), args.chunk):
        tries.update({(u, TO, v): 1 for u, v in zip(us[i:i + args.chunk].tolist(),
                                                   vs[i:i + args.chunk].tolist(), strict=True)})
    load_s = time.perf_counter() - started
    grown = grown_since(before)
    fresh = int(max(us.max(), vs.max())) + 1
    ticks = [{(fresh + t, TO, fresh + t + 1): 1} for t in range(args.ticks)]
    tick_ns = mean_ns(tries.update, ticks)
    const, bound, bind = StepKind.CONST, StepKind.BOUND, StepKind.BIND
    out = TrieExtender(spec(IndexOrder.AEV, Step(const, TO), Step(bound, 0), Step(bind, 0)),
                       tries)
    into = TrieExtender(spec(IndexOrder.AVE, Step(const, TO), Step(bound, 0), Step(bind, 0)),
                        tries)
    edge = TrieExtender(spec(IndexOrder.EAV, Step(bound, 0), Step(const, TO), Step(bound, 1)),
                        tries)
    sample = sample_rows(us, vs, args)
    nodes, pairs = [(u,) for u, _ in sample], [(u, v) for u, v in sample]
    candidates = [(v_row, dict(out.propose(u_row))) for u_row, v_row in zip(
        nodes, [(v,) for _, v in sample], strict=True)]
    answers = {"count out": [out.count(r) for r in nodes],
               "propose out": [sorted(out.propose(r)) for r in nodes],
               "intersect in": [sorted(into.intersect(r, c)) for r, c in candidates],
               "weight edge": [edge.weight(r) for r in pairs]}
    verbs = {"count out": median_ns(out.count, nodes),
             "propose out": median_ns(out.propose, nodes),
             "intersect in": median_ns(lambda rc: into.intersect(*rc), candidates),
             "weight edge": median_ns(edge.weight, pairs)}
    return grown | {"load_s": load_s, "tick_ns": tick_ns, "verbs_ns": verbs, "answers": answers}


def measure_spine(us: np.ndarray, vs: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    """The spine: load as batches, one-datom ticks into the layer, verbs one prefix at a
    time and for all sampled prefixes at once."""
    values, spine = ValueIds(), SpineArrangement()
    before = rss()
    started = time.perf_counter()
    to = values.intern(TO)
    for i in range(0, len(us), args.chunk):
        e = values.intern_ints(us[i:i + args.chunk])
        v = values.intern_ints(vs[i:i + args.chunk])
        spine.update_columns(e, np.full(len(e), to, np.int32), v)
    load_s = time.perf_counter() - started
    grown = grown_since(before)
    batches = [len(batch) for batch in spine.batches]
    orders = {order.name: sum(b.orders[order].nbytes for b in spine.batches)
              for order in IndexOrder}
    orders["batches holding each id"] = spine.nbytes - sum(orders.values())
    loaded = {"array_bytes": spine.nbytes + values.nbytes, "values_bytes": values.nbytes,
              "order_bytes": orders, "values": values.size}  # as loaded, before the ticks
    fresh = int(max(us.max(), vs.max())) + 1

    def tick(t: int) -> None:
        spine.update({(values.intern(fresh + t), to, values.intern(fresh + t + 1)): 1})

    tick_ns = mean_ns(tick, range(args.ticks))
    sample = [(values.intern(u), values.intern(v)) for u, v in sample_rows(us, vs, args)]
    outs = [(to, e) for e, _ in sample]
    ins = [(to, v) for _, v in sample]
    edges = [(e, to, v) for e, v in sample]
    candidates = [(i, dict.fromkeys(spine.propose(IndexOrder.AEV, o), 1)) for i, o in zip(
        ins, outs, strict=True)]

    def decoded(ids: Any) -> list[Any]:
        return sorted(values.value(i) for i in ids)

    answers = {"count out": [spine.count(IndexOrder.AEV, p) for p in outs],
               "propose out": [decoded(spine.propose(IndexOrder.AEV, p)) for p in outs],
               "intersect in": [decoded(spine.intersect(IndexOrder.AVE, *c)) for c in candidates],
               "weight edge": [spine.weight(IndexOrder.EAV, p) for p in edges]}

    def one_prefix() -> dict[str, float]:
        return {"count out": median_ns(lambda p: spine.count(IndexOrder.AEV, p), outs),
                "propose out": median_ns(lambda p: spine.propose(IndexOrder.AEV, p), outs),
                "intersect in": median_ns(lambda c: spine.intersect(IndexOrder.AVE, *c),
                                          candidates),
                "weight edge": median_ns(lambda p: spine.weight(IndexOrder.EAV, p), edges)}

    verbs = one_prefix()
    out_rows, in_rows, edge_rows = np.array(outs), np.array(ins), np.array(edges)
    rows, keys, weights = spine.proposals(IndexOrder.AEV, out_rows)  # the candidates
    many = {"count out": lambda: spine.counts(IndexOrder.AEV, out_rows),
            "propose out": lambda: spine.proposals(IndexOrder.AEV, out_rows),
            "intersect in": lambda: spine.intersections(IndexOrder.AVE, in_rows, rows, keys,
                                                        weights),
            "weight edge": lambda: spine.weights(IndexOrder.EAV, edge_rows)}
    vectorised = {}
    for verb, call in many.items():
        call()  # the first read after a write freezes the layer for the vectorised reads
        started = time.perf_counter()
        call()
        vectorised[verb] = (time.perf_counter() - started) * 1e9 / len(sample)
    sources = [len(batch) for batch in spine.batches] + [len(spine.layer)]
    started = time.perf_counter()
    spine.compact()
    compact_s = time.perf_counter() - started
    return grown | loaded | {
        "load_s": load_s, "tick_ns": tick_ns, "verbs_ns": verbs, "compacted_ns": one_prefix(),
        "compact_s": compact_s, "sources": sources, "vectorised_ns": vectorised,
        "answers": answers, "batches": batches}


def sample_rows(us: np.ndarray, vs: np.ndarray, args: argparse.Namespace) -> list[tuple[int,
                                                                                        int]]:
    """Edges drawn at random (seeded): their endpoints are the prefixes looked up."""
    picked = np.random.default_rng(args.seed).choice(len(us), args.samples, replace=False)
    return list(zip(us[picked].tolist(), vs[picked].tolist(), strict=True))


def measure_one(args: argparse.Namespace) -> dict[str, Any]:
    us, vs = edge_columns(args.edges, args.seed)
    gc.collect()
    measure = measure_dict if args.one == "dict" else measure_spine
    return {"side": args.one, "datoms": len(us)} | measure(us, vs, args)


# --- the parent run ---------------------------------------------------------------------


def run_child(side: str, args: argparse.Namespace) -> dict[str, Any]:
    """One side in a fresh interpreter; its JSON is stdout's last line."""
    cmd = [sys.executable, "-m", "bench", "spine", "--one", side, "--edges", str(args.edges),
           "--chunk", str(args.chunk), "--samples", str(args.samples), "--ticks",
           str(args.ticks), "--seed", str(args.seed)]
    log(f"{side}: {args.edges:,} edges")
    return run_json(cmd)


def tables(results: dict[str, dict[str, Any]]) -> str:
    sides = [s for s in SIDES if s in results]
    load = [[side, f"{r['datoms']:,}", f"{r['load_s']:.2f}", f"{r['datoms'] / r['load_s']:,.0f}",
             f"{r['rss_bytes'] / r['datoms']:.1f}",
             f"{r['rss_untrimmed_bytes'] / r['datoms']:.1f}",
             f"{r['array_bytes'] / r['datoms']:.1f}" if "array_bytes" in r else "",
             f"{r['tick_ns'] / 1e3:.1f}"] for side, r in ((s, results[s]) for s in sides)]
    spine = results.get("spine")
    verbs = [[verb, *(f"{results[s]['verbs_ns'][verb]:,.0f}" for s in sides),
              *([f"{spine['compacted_ns'][verb]:,.0f}", f"{spine['vectorised_ns'][verb]:,.0f}"]
                if spine else [])] for verb in VERBS]
    out = [markdown_table(["structure", "datoms", "load s", "datoms/s", "RSS B/datom",
                           "untrimmed", "arrays B/datom", "1-datom tick µs"], load),
           markdown_table(["verb (median ns)", *sides, *(["spine compacted",
                                                          "spine, per prefix of a batch"]
                                                         if spine else [])], verbs)]
    if spine:
        n = spine["datoms"]
        parts = [[name, f"{b / n:.1f}"] for name, b in spine["order_bytes"].items()]
        parts.append([f"value dictionary ({spine['values']:,} ids)",
                      f"{spine['values_bytes'] / n:.1f}"])
        out.append(markdown_table(["spine part", "bytes/datom"], parts)
                   + f"\n\nspine batches after the load: {spine['batches']}; sources read by "
                   f"the verbs (batches, then the layer): {spine['sources']}; compacting them "
                   f"took {spine['compact_s']:.2f} s")
    return "\n\n".join(out)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate the command line (parent run, or one `--one` side)."""
    parser.add_argument("--edges", type=int, default=1_000_000,
                        help="edges of the power-law graph (default 1000000)")
    parser.add_argument("--chunk", type=int, default=100_000,
                        help="datoms per load chunk (default 100000)")
    parser.add_argument("--samples", type=int, default=10_000,
                        help="prefixes sampled for the verb latencies (default 10000)")
    parser.add_argument("--ticks", type=int, default=10_000,
                        help="one-datom ticks after the load (default 10000)")
    parser.add_argument("--seed", type=int, default=42, help="graph seed (default 42)")
    parser.add_argument("--sides", default=",".join(SIDES), help="dict,spine (default both)")
    parser.add_argument("--one", choices=SIDES, help="internal: measure one side, print JSON")
    args = parser.parse_args(argv)
    if min(args.edges, args.chunk, args.samples, args.ticks) < 1:
        parser.error("--edges, --chunk, --samples and --ticks must be positive")
    if args.samples > args.edges:
        parser.error("--samples cannot exceed --edges")
    args.sides = [s for s in args.sides.split(",") if s]
    if not set(args.sides) <= set(SIDES):
        parser.error(f"--sides takes {','.join(SIDES)}")
    return args


def run(args: argparse.Namespace) -> None:
    """`--one`: measure one side and print JSON; otherwise both, each in a subprocess."""
    if args.one is not None:
        print(json.dumps(measure_one(args)))
        return
    output = Results("spine", args)
    if not powerlaw_path(args.edges, args.seed).exists():
        powerlaw_graph(args.edges, args.seed)  # generated and cached once: the sides read it
    results = {side: run_child(side, args) for side in args.sides}
    answers = [result.pop("answers") for result in results.values()]
    if any(a != answers[0] for a in answers):
        raise MismatchError("the spine and the dict tries answered a verb differently")
    print(f"power-law graph, {args.edges:,} edges, seed {args.seed}, loaded in chunks of "
          f"{args.chunk:,}; verbs on {args.samples:,} sampled edges\n")
    print(tables(results))
    output.write({"results": results})
