"""Pathway (a differential-dataflow engine in Rust, driven from Python) maintaining the query
as a chain of incremental joins over one input table of facts.

Ticks enter through a python connector, one commit each. Pathway reports the end of a time
only when the subscribed table changed in it, so every tick also inserts a clock row (and
retracts the previous one) that reaches the output through a concatenation: each tick then
ends with an `on_time_end` the driver can wait for. Pathway joins are bags; `SetChanges`
turns the output's row changes into set changes (the queries' `distinct`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from typing import Any

from bench.data import Fact, Tick
from bench.peers.base import SetChanges
from bench.peers.translate import join_chain, variables
from bench.queries import Clause, Spec

CLOCK = "__clock__"
WAIT_S = 3600.0  # a tick that takes longer is the worker's time-out's problem


def pattern_table(facts: Any, clause: Clause) -> Any:
    """The facts matching one pattern, as a table with one column per variable."""
    import pathway as pw

    e, attribute, v = clause
    condition = facts.a == attribute
    if isinstance(e, int):
        condition &= facts.e == e
    if isinstance(v, int):
        condition &= facts.v == v
    if isinstance(e, str) and e == v:
        condition &= facts.e == facts.v
    rows = facts.filter(condition)
    columns: dict[str, Any] = {}
    for term, column in ((e, rows.e), (v, rows.v)):
        if isinstance(term, str):
            columns.setdefault(term, column)
    return rows.select(**columns) if columns else rows.select(_=pw.this.e)


def build(facts: Any, spec: Spec) -> Any:
    """The query's bag result as a Pathway table with the `find` columns."""
    import pathway as pw

    start, steps = join_chain(spec)
    result, bound = pattern_table(facts, start), list(variables(start))
    for step in steps:
        right = pattern_table(facts, step.clause)
        on = [result[k] == right[k] for k in step.key]
        columns = {v: pw.left[v] for v in bound} | {v: pw.right[v] for v in step.new}
        result = result.join(right, *on).select(**columns)
        bound += step.new
    return result.select(**{v: result[v] for v in spec.find})


class PathwayPeer:
    """One Pathway pipeline per query, run in a thread of the worker process."""

    name = "pathway"
    last_work: int | None = None

    def __init__(self) -> None:
        self.inbox: queue.Queue[list[tuple[bool, Fact]] | None] = queue.Queue()
        self.ended = threading.Event()
        self.changes = SetChanges()
        self.find: tuple[str, ...] = ()
        self.ticks = 0

    def unsupported(self, spec: Spec) -> str | None:
        return "closure not wired (pw.iterate)" if spec.closure is not None else None

    def open(self, query: str, spec: Spec, facts: Sequence[Fact]) -> None:
        import pathway as pw

        class Schema(pw.Schema):
            a: str
            e: int
            v: int

        inbox = self.inbox

        class Feed(pw.io.python.ConnectorSubject):
            @property
            def _deletions_enabled(self) -> bool:
                return True

            def run(self) -> None:
                while (ops := inbox.get()) is not None:
                    for add, (a, e, v) in ops:
                        (self.next if add else self.delete)(a=a, e=e, v=v)
                    self.commit()

        self.find = spec.find
        table = pw.io.python.read(Feed(), schema=Schema, autocommit_duration_ms=None)
        result = build(table, spec)
        clock = table.filter(table.a == CLOCK)
        clock = clock.select(**{v: -1 for v in spec.find}, mark=clock.e)
        output = result.select(*result, mark=0).concat_reindex(clock)
        pw.io.subscribe(output, on_change=self.on_change, on_time_end=self.on_time_end)
        threading.Thread(target=self.run, daemon=True).start()
        self.push([(True, f) for f in facts])
        self.changes.take()

    def run(self) -> None:
        import pathway as pw

        pw.run(monitoring_level=pw.MonitoringLevel.NONE)

    def on_change(self, key: Any, row: dict[str, Any], time: int, is_addition: bool) -> None:
        if not row["mark"]:
            self.changes.add(tuple(row[v] for v in self.find), 1 if is_addition else -1)

    def on_time_end(self, time: int) -> None:
        self.ended.set()

    def push(self, ops: list[tuple[bool, Fact]]) -> None:
        """Feed one commit (plus the clock rows) and wait until Pathway has finished it."""
        self.ticks += 1
        clock = [(True, (CLOCK, self.ticks, 0))]
        if self.ticks > 1:
            clock.append((False, (CLOCK, self.ticks - 1, 0)))
        self.ended.clear()
        self.inbox.put(ops + clock)
        if not self.ended.wait(WAIT_S):
            raise TimeoutError(f"Pathway did not finish tick {self.ticks}")

    def apply(self, tick: Tick) -> int:
        self.push([(False, f) for f in tick.removes] + [(True, f) for f in tick.adds])
        return self.changes.take()

    def close(self) -> None:
        self.inbox.put(None)
