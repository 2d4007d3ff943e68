"""One Spark SQL query per step, built as named subqueries (``WITH`` CTEs).

PySpark analyses every DataFrame it builds, so a plan assembled from a few hundred
DataFrame calls spends seconds in py4j and the analyser before Spark runs anything.  The
executor writes the same relational algebra as SQL text instead: one ``spark.sql`` call,
one analysis.  :class:`Sql` collects the subqueries; identical bodies get one name, so a
relation read by several terms is written (and planned) once.

Spark inlines every deterministic CTE at each reference, so a subquery read twice is
planned and run twice — and BigJoin reads each level's counted rows once per proposer,
which doubles the plan at every level.  :meth:`Sql.materialize` runs such a subquery once
(``localCheckpoint``) and later references read the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

WEIGHT = "w"
Source: TypeAlias = "str | DataFrame"  # a subquery's body text, or a DataFrame it reads
INLINE_ROWS = 2_000  # a Z-set this small travels inside the SQL text, not as a DataFrame


class Sql:
    """A ``WITH`` query under construction, with the DataFrames it names as ``{name}``."""

    def __init__(self, session: SparkSession) -> None:
        self.session = session
        self.frames: dict[str, DataFrame] = {}
        self._bodies: dict[str, str] = {}
        self._materialized: list[DataFrame] = []

    def add(self, body: str) -> str:
        """Name the subquery ``body`` (the same body always gets the same name)."""
        name = self._bodies.get(body)
        if name is None:
            name = self._bodies[body] = f"q{len(self._bodies)}"
        return name

    def source(self, source: Source) -> str:
        """A subquery over ``source`` (body text or a DataFrame)."""
        return self.add(source) if isinstance(source, str) else self.frame(source)

    def frame(self, frame: DataFrame) -> str:
        """A subquery reading ``frame``."""
        name = f"f{len(self.frames)}"
        self.frames[name] = frame
        return self.add(f"SELECT * FROM {{{name}}}")

    def materialize(self, name: str) -> str:
        """Run subquery ``name`` now; the returned subquery reads its stored result
        (kept until :meth:`release`)."""
        stored = self.run(name).localCheckpoint(eager=True)
        self._materialized.append(stored)
        return self.frame(stored)

    def release(self) -> None:
        """Drop the stored results once the query that reads them has run."""
        for stored in self._materialized:
            free(stored)
        self._materialized.clear()

    def run(self, final: str) -> DataFrame:
        """The DataFrame of subquery ``final``."""
        frames: dict[str, Any] = self.frames
        return self.session.sql(self.text(final), **frames)

    def text(self, final: str) -> str:
        ctes = ",\n".join(f"{name} AS ({body})" for body, name in self._bodies.items())
        return f"WITH {ctes}\nSELECT * FROM {final}" if ctes else f"SELECT * FROM {final}"


def free(stored: DataFrame) -> None:
    """Drop the blocks of a ``localCheckpoint``ed frame now: ``unpersist`` does not touch them
    and Spark's cleaner would only after a JVM garbage collection (Spark Connect: best effort)."""
    jdf = getattr(stored, "_jdf", None)
    if jdf is None:
        stored.unpersist()
        return
    jdf.queryExecution().analyzed().rdd().unpersist(True)


def values(rows: Mapping[tuple[int, ...], int], names: Sequence[str]) -> str:
    """A Z-set of id tuples as an inline ``VALUES`` table with a weight column."""
    columns = ", ".join([*names, WEIGHT])
    if not rows:
        nulls = ", ".join(f"CAST(NULL AS BIGINT) AS {name}" for name in [*names, WEIGHT])
        return f"SELECT {nulls} WHERE false"
    tuples = ", ".join("(" + ", ".join(f"{x}L" for x in (*row, weight)) + ")"
                       for row, weight in rows.items())
    return f"SELECT * FROM VALUES {tuples} AS t({columns})"


def conjunction(conditions: Iterable[str]) -> str:
    return " AND ".join(conditions) or "true"
