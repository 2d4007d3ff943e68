"""Markdown tables and matplotlib charts from a `python -m bench peers` results JSON.

    python -m bench peers-report bench/results/peers-<stamp>.json [--docs]

Writes `<json stem>.md` next to the JSON; with `--docs` also the PNGs into docs/img/ and the
tables into docs/benchmarks.md between the `peers:begin` / `peers:end` markers (the prose
around them is written by hand from these numbers).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from bench.harness import markdown_table

ROOT = Path(__file__).resolve().parents[2]
DOCS, IMG = ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "img"
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
# (peer, the factor deltalog delta's single-edge throughput must reach against it)
TARGETS = (("pydbsp", 10.0), ("pathway", 1.0), ("duckdb", 100.0))
STRATEGIES = ("delta", "recursive", "binary")
# one colour per target in every chart (matplotlib's tab10 order)
COLOURS = dict(zip(("delta", "recursive", "binary", "handwritten", "duckdb", "sqlite", "kuzu",
                    "pathway", "pydbsp", "delta-spark"), (f"C{i}" for i in range(10)),
                   strict=True))


def runs_of(payload: dict[str, Any], workload: str, query: str) -> list[dict[str, Any]]:
    return [r for r in payload["runs"] if (r["workload"], r["query"]) == (workload, query)]


def cell(run: dict[str, Any], size: int) -> dict[str, Any] | None:
    return next((c for c in run["cells"] if c["size"] == size and c["ns"]), None)


def median_ms(c: dict[str, Any] | None) -> float | None:
    return statistics.median(c["ns"]) / 1e6 if c else None


def ops_per_s(run: dict[str, Any], size: int) -> float | None:
    """Edge (fact) changes per second at the median tick latency."""
    ms = median_ms(cell(run, size))
    return size / ms * 1e3 if ms else None


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if value < 1 else f"{value:.{digits - 1}f}".rstrip("0").rstrip(".")


def has_strategies(payload: dict[str, Any], workload: str, query: str) -> bool:
    """Whether the binary strategy ran (so there is a work comparison to show)."""
    return any(r["target"] == "binary" and r["cells"] for r in runs_of(payload, workload, query))


def sizes_of(payload: dict[str, Any]) -> list[int]:
    return sorted({c["size"] for r in payload["runs"] for c in r["cells"]})


def latency_table(payload: dict[str, Any], workload: str, query: str) -> str:
    """Median ms per tick by target and tick size; skipped and failed targets say why."""
    sizes = sizes_of(payload)
    rows, notes = [], []
    for run in runs_of(payload, workload, query):
        if run["skipped"] or (run["error"] and not run["cells"]):
            notes.append(f"{run['target']}: {run['skipped'] or run['error']}")
            continue
        cells = [cell(run, s) for s in sizes]
        rows.append([run["target"], fmt(run["load_s"])] + [
            f"{fmt(median_ms(c))} ({len(c['ns'])})" if c else "—" for c in cells])
        if run["error"]:
            notes.append(f"{run['target']} failed: {run['error']}")
        if run.get("stopped"):
            notes.append(f"{run['target']} {run['stopped']}")
    table = markdown_table(["target", "load s", *(f"k={s:,}" for s in sizes)], rows)
    return table + "".join(f"\n- {n}" for n in notes)


def work_table(payload: dict[str, Any], workload: str, query: str) -> str:
    """Median elements touched per changed fact, by strategy and tick size."""
    sizes = sizes_of(payload)
    rows = []
    for run in runs_of(payload, workload, query):
        if run["target"] in STRATEGIES and run["cells"]:
            rows.append([run["target"]] + [
                fmt(statistics.median(c["work"]) / c["size"]) if c and c["work"] else "—"
                for c in (cell(run, s) for s in sizes)])
    return markdown_table(["strategy", *(f"k={s:,}" for s in sizes)], rows)


def target_rows(payload: dict[str, Any], workload: str = "powerlaw") -> list[list[str]]:
    """Single-edge throughput of delta against each target peer, with the verdict."""
    rows = []
    for query in ("triangle", "4cycle"):
        runs = {r["target"]: r for r in runs_of(payload, workload, query)}
        delta = ops_per_s(runs["delta"], 1) if "delta" in runs else None
        for peer, factor in TARGETS:
            other = ops_per_s(runs[peer], 1) if peer in runs else None
            ratio = delta / other if delta and other else None
            verdict = "—" if ratio is None else ("met" if ratio >= factor else "missed")
            rows.append([query, peer, fmt(delta), fmt(other), f"≥ {factor:g}×",
                         fmt(ratio), verdict])
    return rows


def curve_table(payload: dict[str, Any]) -> str:
    rows = [[p["query"] + (" (in-edge)" if p["inward"] else ""), f"{p['n']:,}", p["strategy"],
             fmt(p["elements"]), fmt(p["median_ms"])] for p in payload.get("curve", [])]
    return markdown_table(["query", "hub n", "strategy", "elements / tick", "median ms"], rows)


def markdown(payload: dict[str, Any], images: Iterable[str]) -> str:
    """The generated part of the docs: settings, tables, chart links."""
    parts = [
        f"Run {payload['timestamp']}, budget {payload['args']['budget_s']:.0f} s, "
        f"{payload['elapsed_s']:.0f} s in all (2 cores, shared with other test suites running "
        "at the same time: single numbers are noisy, medians are reported). Versions: "
        + ", ".join(f"{k} {v}" for k, v in payload["versions"].items()) + ".",
        "",
        "Workloads: " + "; ".join(f"**{w['name']}** — {w['label']}" for w in payload["workloads"])
        + ".",
        "",
        "**Targets (power-law graph, single-edge ticks, throughput at the median tick):**",
        "",
        markdown_table(["query", "peer", "delta ops/s", "peer ops/s", "target", "ratio",
                        "verdict"], target_rows(payload)),
    ]
    for w in payload["workloads"]:
        for query in w["queries"]:
            if not runs_of(payload, w["name"], query):
                continue
            parts += ["", f"**{w['name']} / {query}** — median ms per tick (ticks measured):",
                      "", latency_table(payload, w["name"], query)]
            if has_strategies(payload, w["name"], query):
                parts += ["", "Elements touched per changed fact:", "",
                          work_table(payload, w["name"], query)]
    if payload.get("curve"):
        parts += ["", "**Work against hub degree** (`python -m bench skew`'s instance):", "",
                  curve_table(payload)]
    parts += [""] + [f"![{Path(i).stem}](img/{Path(i).name})" for i in images]
    return "\n".join(parts) + "\n"


# --- charts -----------------------------------------------------------------------------


def latency_panels(payload: dict[str, Any], workload: dict[str, Any]) -> list[str]:
    """The queries of `workload` that ran, one latency panel each."""
    return [q for q in workload["queries"] if runs_of(payload, workload["name"], q)]


def work_panels(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """The (workload, query) pairs the strategies ran on, one work panel each."""
    return [(w["name"], q) for w in payload["workloads"] for q in w["queries"]
            if has_strategies(payload, w["name"], q)]


def plot_latency(payload: dict[str, Any], workload: dict[str, Any], path: Path) -> None:
    """One panel per query: median latency per tick against tick size, a line per target."""
    import matplotlib.pyplot as plt

    queries = latency_panels(payload, workload)
    fig, axes = plt.subplots(1, len(queries), figsize=(4.2 * len(queries), 3.6), squeeze=False)
    for ax, query in zip(axes[0], queries, strict=True):
        for run in runs_of(payload, workload["name"], query):
            points = [(c["size"], statistics.median(c["ns"]) / 1e6) for c in run["cells"]
                      if c["ns"]]
            if points:
                style = "-" if run["target"] in STRATEGIES else "--"
                ax.plot(*zip(*points, strict=True), style, marker="o", ms=3,
                        color=COLOURS.get(run["target"]), label=run["target"])
        ax.set(xscale="log", yscale="log", title=f"{workload['name']} / {query}",
               xlabel="changes per tick", ylabel="median ms per tick")
        ax.grid(True, which="major", alpha=0.3)
    handles = {h.get_label(): h for ax in axes[0] for h in ax.get_lines()}
    fig.legend(handles.values(), handles.keys(), fontsize=8, loc="center right")
    fig.tight_layout(rect=(0, 0, 0.88, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_curve(payload: dict[str, Any], path: Path) -> None:
    """Elements per tick against hub degree, a panel per curve, a line per strategy."""
    import matplotlib.pyplot as plt

    curves = list(dict.fromkeys((p["query"], p["inward"]) for p in payload["curve"]))
    fig, axes = plt.subplots(1, len(curves), figsize=(4.2 * len(curves), 3.6), squeeze=False)
    for ax, (query, inward) in zip(axes[0], curves, strict=True):
        for strategy in STRATEGIES:
            points = [(p["n"], max(p["elements"], 1)) for p in payload["curve"]
                      if (p["query"], p["inward"], p["strategy"]) == (query, inward, strategy)]
            ax.plot(*zip(*points, strict=True), marker="o", color=COLOURS[strategy],
                    label=strategy)
        edge = "fresh → hub" if inward else "hub → fresh"
        ax.set(xscale="log", yscale="log", title=f"{query}, tick {edge}",
               xlabel="hub degree n", ylabel="elements touched per tick")
        ax.grid(True, alpha=0.3)
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_work(payload: dict[str, Any], path: Path) -> None:
    """Elements per changed fact against tick size, per graph workload and query."""
    import matplotlib.pyplot as plt

    panels = work_panels(payload)
    cols = 4
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, (workload, query) in zip(axes.flat, panels, strict=False):
        for run in runs_of(payload, workload, query):
            if run["target"] in STRATEGIES:
                points = [(c["size"], statistics.median(c["work"]) / c["size"])
                          for c in run["cells"] if c["work"]]
                if points:
                    ax.plot(*zip(*points, strict=True), marker="o",
                            color=COLOURS[run["target"]], label=run["target"])
        ax.set(xscale="log", yscale="log", title=f"{workload} / {query}",
               xlabel="changes per tick", ylabel="elements per change")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def planned_charts(payload: dict[str, Any]) -> dict[str, Callable[[Path], None]]:
    """File name -> drawing function of every chart with something to draw (a chart of no
    panels is no chart: matplotlib refuses a grid of 0 rows or columns)."""
    plans: dict[str, Callable[[Path], None]] = {
        f"peers-{w['name']}.png": partial(plot_latency, payload, w)
        for w in payload["workloads"] if latency_panels(payload, w)
    }
    if payload.get("curve"):
        plans["skew-work-curve.png"] = partial(plot_curve, payload)
    if work_panels(payload):
        plans["work-per-change.png"] = partial(plot_work, payload)
    return plans


def charts(payload: dict[str, Any], directory: Path) -> list[Path]:
    """Every chart of the run, as PNG files in `directory`."""
    plans = planned_charts(payload)
    if not plans:
        return []
    import matplotlib

    matplotlib.use("Agg")
    directory.mkdir(parents=True, exist_ok=True)
    for name, draw in plans.items():
        draw(directory / name)
    return [directory / name for name in plans]


def write_docs(text: str) -> None:
    """Replace the generated block of docs/benchmarks.md (appended if absent)."""
    doc = DOCS.read_text()
    block = f"{BEGIN}\n{text}{END}"
    if BEGIN in doc and END in doc:
        doc = doc[: doc.index(BEGIN)] + block + doc[doc.index(END) + len(END):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    DOCS.write_text(doc)


def report(path: Path, docs: bool) -> Path:
    """Write the markdown (and with `docs`, the charts and the docs block) for one JSON."""
    payload = json.loads(path.read_text())
    images = charts(payload, IMG if docs else path.with_suffix(""))
    text = markdown(payload, [str(i) for i in images])
    out = path.with_suffix(".md")
    out.write_text(text)
    if docs:
        write_docs(text)
    return out


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser.add_argument("json", type=Path)
    parser.add_argument("--docs", action="store_true", help="write docs/img and docs block")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    """Redraw one run's report."""
    print(f"report: {report(args.json, args.docs)}")
