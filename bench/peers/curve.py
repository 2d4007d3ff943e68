"""Work against hub degree: the skew question answered with the engine's own counters.

`bench.engine.skew`'s instance (a hub with n out-edges into a ring) with single-edge ticks at the
hub, per strategy: the elements the executor touched (`engine.last_work`) and the latency.
Work counters do not depend on the machine or on what else runs on it, so the curve's shape
(constant, linear, quadratic in n) is the evidence; the latencies only illustrate it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bench.engine.skew import measure
from bench.harness import log
from workers.plan import STRATEGIES

# (query, tick edge direction at the hub, hub degrees): the 4-clique's binary plan is
# quadratic in n, so its curve stops early; `inward` ticks are where no plan has a cheap side.
CURVES: tuple[tuple[str, bool, tuple[int, ...]], ...] = (
    ("triangle", False, (1_000, 3_000, 10_000, 30_000, 100_000)),
    ("4clique", False, (100, 300, 1_000)),
    ("4cycle", True, (1_000, 3_000, 10_000)),
)


@dataclass
class Point:
    query: str
    inward: bool
    strategy: str
    n: int
    median_ms: float
    elements: float


def work_curve(ticks: int = 2, scale: float = 1.0) -> list[dict[str, Any]]:
    """Every curve point; `scale` < 1 drops the largest hubs (a smoke run)."""
    points = []
    for query, inward, hubs in CURVES:
        for n in hubs:
            if n > max(hubs) * scale:
                continue
            for strategy in STRATEGIES:
                latency, elements = measure(strategy, n, ticks, query, inward)
                points.append(Point(query, inward, strategy, n, latency, elements))
                log(f"curve {query} n={n} {strategy}: {elements:.0f} elements, {latency:.3f} ms")
    return [asdict(p) for p in points]
