"""A JoinProgram as SQL, the BigJoin way (Ammar et al.; DESIGN §5).

Rows are subqueries with columns ``c0..c{n-1}`` (the program's layout) and ``w``.  Checks
and single-extender levels are plain joins.  A level with several extenders does
GenericJoin's three verbs as dataflow over all rows at once:

1. **count**: join every row with each extender's per-prefix candidate count;
2. **choose**: the extender with the smallest count proposes for that row (first on ties);
3. **propose** from it and **intersect** with every other extender — joins on the prefix
   and the proposed value.

Weights multiply along the joins; the output projection sums them and drops zeros.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workers.executors.spark.relations import Relation, bind, key
from workers.executors.spark.sql import WEIGHT, Sql, conjunction
from workers.plan.ir import ExtenderSpec, JoinProgram, Level

RelationOf = Callable[[ExtenderSpec], Relation]
ONE = f"SELECT 1L AS {WEIGHT}"  # the single empty row


def column(i: int) -> str:
    """The name of row column ``i``."""
    return f"c{i}"


def seed_rows(sql: Sql, program: JoinProgram, relation_of: RelationOf) -> str:
    """The seed pattern's tuples as rows, or the single empty row."""
    if program.seed is None:
        return sql.add(ONE)
    seed = relation_of(program.seed)
    columns = "".join(f"{bind(j)} AS {column(j)}, " for j in range(seed.binds))
    return sql.add(f"SELECT {columns}{WEIGHT} FROM {seed.name}")


def run(sql: Sql, program: JoinProgram, rows: str, relation_of: RelationOf,
        output: Sequence[int] | None = None) -> str:
    """Extend ``rows`` through the program and project onto ``output`` (default: the
    program's own), consolidated."""
    width = len(program.seed_vars)
    for check in program.checks:
        rows = sql.add(_joins(rows, width, [relation_of(check)], proposer=None))
    for level in program.levels:
        assert isinstance(level, Level), "Spark runs data-pattern levels only"
        rows = _extend(sql, rows, [relation_of(spec) for spec in level.extenders], width)
        width += 1
    return project(sql, rows, program.output if output is None else output)


def project(sql: Sql, rows: str, output: Sequence[int]) -> str:
    columns = "".join(f"{column(i)} AS {column(j)}, " for j, i in enumerate(output))
    group = f" GROUP BY {', '.join(column(i) for i in output)}" if output else ""
    return sql.add(f"SELECT {columns}SUM({WEIGHT}) AS {WEIGHT} FROM {rows}{group} "
                   f"HAVING SUM({WEIGHT}) != 0")


def union(sql: Sql, parts: Sequence[str]) -> str:
    return sql.add(" UNION ALL ".join(f"SELECT * FROM {part}" for part in parts))


def _extend(sql: Sql, rows: str, relations: Sequence[Relation], width: int) -> str:
    if len(relations) == 1:
        return sql.add(_joins(rows, width, relations, proposer=0))
    counted = sql.materialize(sql.add(_counted(sql, rows, relations, width)))
    parts = [sql.add(_joins(counted, width, relations, proposer=i, where=f"r.p = {i}"))
             for i in range(len(relations))]
    return union(sql, parts)


def _counted(sql: Sql, rows: str, relations: Sequence[Relation], width: int) -> str:
    """Each row with its proposer ``p``: the extender with the fewest candidates."""
    joins, sizes = [], []
    for i, rel in enumerate(relations):
        keys = ", ".join(key(k) for k in rel.keys)
        counts = sql.add(f"SELECT {keys + ', ' if keys else ''}COUNT(*) AS n FROM {rel.name}"
                         + (f" GROUP BY {keys}" if keys else ""))
        on = conjunction(f"r.{column(k)} = n{i}.{key(k)}" for k in rel.keys)
        joins.append(f" JOIN {counts} n{i} ON {on}")
        sizes.append(f"n{i}.n")
    least = f"LEAST({', '.join(sizes)})"
    choice = " ".join(f"WHEN {size} = {least} THEN {i}" for i, size in enumerate(sizes))
    columns = "".join(f"r.{column(i)}, " for i in range(width))
    return f"SELECT {columns}r.{WEIGHT}, CASE {choice} END AS p FROM {rows} r{''.join(joins)}"


def _joins(rows: str, width: int, relations: Sequence[Relation], proposer: int | None,
           where: str = "true") -> str:
    """``rows`` joined with every relation on its keys; the ``proposer``'s ``x0`` becomes
    column ``width`` and the others must hold that value too; weights multiply."""
    columns = [f"r.{column(i)}" for i in range(width)]
    if proposer is not None:
        columns.append(f"t{proposer}.{bind(0)} AS {column(width)}")
    weight = " * ".join([f"r.{WEIGHT}", *(f"t{i}.{WEIGHT}" for i in range(len(relations)))])
    joins = []
    order = [proposer] if proposer is not None else []
    order += [i for i in range(len(relations)) if i != proposer]
    for i in order:
        rel = relations[i]
        on = [f"r.{column(k)} = t{i}.{key(k)}" for k in rel.keys]
        if proposer is not None and i != proposer:
            on.append(f"t{i}.{bind(0)} = t{proposer}.{bind(0)}")
        joins.append(f" JOIN {rel.name} t{i} ON {conjunction(on)}")
    select = ", ".join([*columns, f"{weight} AS {WEIGHT}"])
    return f"SELECT {select} FROM {rows} r{''.join(joins)} WHERE {where}"
