"""Kùzu recomputing the query after every tick: a graph database whose planner uses
worst-case-optimal (multiway intersection) joins for cyclic patterns such as triangles.

Every value is an integer entity id, so each becomes a node `N(id)` and each attribute a
relationship table. A tick deletes and creates relationships (creating missing nodes first),
then the query runs from scratch and its rows are diffed with the previous result in Python
(Cypher has no `EXCEPT` over results).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from bench.data import Fact, Tick
from bench.peers.translate import table, to_cypher
from bench.queries import Spec


def by_rel(facts: Iterable[Fact]) -> dict[str, list[list[int]]]:
    """Facts grouped into [from, to] pairs per relationship table."""
    pairs: defaultdict[str, list[list[int]]] = defaultdict(list)
    for attribute, e, v in facts:
        pairs[table(attribute)].append([e, v])
    return pairs


class KuzuRecompute:
    """An in-memory Kùzu database; bulk load with COPY, ticks with UNWIND'd parameter lists."""

    name = "kuzu"
    last_work: int | None = None

    def __init__(self) -> None:
        self.con: Any = None
        self.cypher = ""
        self.rows: set[tuple[int, ...]] = set()
        self.nodes: set[int] = set()
        self.rels: tuple[str, ...] = ()

    def unsupported(self, spec: Spec) -> str | None:
        if spec.closure is not None:
            return "Cypher's variable-length paths are bounded (30 hops by default): no closure"
        return None

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        import kuzu
        import pandas as pd

        self.con = kuzu.Connection(kuzu.Database())
        self.rels = tuple(table(a) for a in spec.attributes)
        facts = [f for f in facts if table(f[0]) in self.rels]
        self.nodes = {x for _, e, v in facts for x in (e, v)}
        self.con.execute("CREATE NODE TABLE N(id INT64, PRIMARY KEY(id))")
        nodes = pd.DataFrame({"id": sorted(self.nodes)})  # noqa: F841 (read by COPY)
        self.con.execute("COPY N FROM nodes")
        for rel in self.rels:
            self.con.execute(f"CREATE REL TABLE {rel}(FROM N TO N)")
        for rel, pairs in by_rel(facts).items():
            frame = pd.DataFrame(pairs, columns=["from", "to"])  # noqa: F841 (read by COPY)
            self.con.execute(f"COPY {rel} FROM frame")
        self.cypher = to_cypher(spec)
        self.rows = self.evaluate()

    def evaluate(self) -> set[tuple[int, ...]]:
        return {tuple(row) for row in self.con.execute(self.cypher).get_all()}

    def apply(self, tick: Tick) -> int:
        for rel, pairs in by_rel(tick.removes).items():
            if rel in self.rels:
                self.con.execute(
                    f"UNWIND $p AS p MATCH (a:N {{id: p[1]}})-[r:{rel}]->(b:N {{id: p[2]}}) "
                    "DELETE r", {"p": pairs})
        adds = [f for f in tick.adds if table(f[0]) in self.rels]
        fresh = sorted({x for _, e, v in adds for x in (e, v)} - self.nodes)
        if fresh:
            self.con.execute("UNWIND $ids AS i CREATE (:N {id: i})", {"ids": fresh})
            self.nodes.update(fresh)
        for rel, pairs in by_rel(adds).items():
            self.con.execute(
                f"UNWIND $p AS p MATCH (a:N {{id: p[1]}}), (b:N {{id: p[2]}}) "
                f"CREATE (a)-[:{rel}]->(b)", {"p": pairs})
        rows = self.evaluate()
        changed = len(rows ^ self.rows)
        self.rows = rows
        return changed

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
