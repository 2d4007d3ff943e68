"""One query spec, every peer's language: SQL, Cypher, and a join chain for dataflow engines.

Generated from `bench.queries.Spec` so that every system runs exactly the same query; the
per-tick change counts then check that the translations agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.queries import Clause, Spec, Term


def table(attribute: str) -> str:
    """The table (or relationship type) holding one attribute's facts."""
    return "f_" + "".join(c if c.isalnum() else "_" for c in attribute)


def to_sql(spec: Spec) -> str:
    """A `SELECT DISTINCT` over one two-column table `(e, v)` per attribute; the closure as
    a recursive CTE with `UNION` (set semantics, so it terminates on cycles too)."""
    if spec.closure is not None:
        t = table(spec.closure)
        return (
            f"WITH RECURSIVE reach(a, b) AS (SELECT e, v FROM {t} UNION "
            f"SELECT r.a, t.v FROM reach r JOIN {t} t ON r.b = t.e) SELECT a, b FROM reach"
        )
    first: dict[str, str] = {}
    conditions: list[str] = []
    for i, (e, _, v) in enumerate(spec.where):
        for column, term in (("e", e), ("v", v)):
            ref = f"p{i}.{column}"
            if isinstance(term, int):
                conditions.append(f"{ref} = {term}")
            elif term in first:
                conditions.append(f"{ref} = {first[term]}")
            else:
                first[term] = ref
    columns = ", ".join(f"{first[v]} AS {v}" for v in spec.find)
    tables = ", ".join(f"{table(a)} p{i}" for i, (_, a, _) in enumerate(spec.where))
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT DISTINCT {columns} FROM {tables}{where}"


def to_cypher(spec: Spec) -> str:
    """A Cypher `MATCH` over nodes `N(id)` and one relationship table per attribute."""
    if spec.closure is not None:
        raise ValueError("no unbounded closure in this Cypher translation")

    def node(term: Term) -> str:
        return f"(:N {{id: {term}}})" if isinstance(term, int) else f"(n_{term}:N)"

    paths = ", ".join(f"{node(e)}-[:{table(a)}]->{node(v)}" for e, a, v in spec.where)
    columns = ", ".join(f"n_{v}.id" for v in spec.find)
    return f"MATCH {paths} RETURN DISTINCT {columns}"


@dataclass(frozen=True)
class Step:
    """Join the running result (columns `left`) with pattern `clause` on the `key` variables;
    `new` are the pattern's variables the result does not have yet."""

    clause: Clause
    key: tuple[str, ...]
    new: tuple[str, ...]


def variables(clause: Clause) -> tuple[str, ...]:
    """A pattern's variables, in order, without repeats."""
    return tuple(dict.fromkeys(t for t in (clause[0], clause[2]) if isinstance(t, str)))


def join_chain(spec: Spec) -> tuple[Clause, list[Step]]:
    """A left-deep join order for a bag-semantics dataflow: start from the first pattern,
    then repeatedly take the first pattern sharing a variable with what is joined so far
    (the same connected order a user would write by hand)."""
    if not spec.where:
        raise ValueError("a join chain needs data patterns")
    start, rest = spec.where[0], list(spec.where[1:])
    bound = list(variables(start))
    steps = []
    while rest:
        clause = next((c for c in rest if set(variables(c)) & set(bound)), rest[0])
        rest.remove(clause)
        key = tuple(v for v in variables(clause) if v in bound)
        new = tuple(v for v in variables(clause) if v not in bound)
        steps.append(Step(clause, key, new))
        bound += new
    return start, steps


def matches(clause: Clause, fact: tuple[str, int, int]) -> bool:
    """Whether `fact` fits the pattern's attribute, constants and repeated variables."""
    e, attribute, v = clause
    if fact[0] != attribute:
        return False
    if (isinstance(e, int) and fact[1] != e) or (isinstance(v, int) and fact[2] != v):
        return False
    return not (isinstance(e, str) and e == v and fact[1] != fact[2])


def binding(clause: Clause, fact: tuple[str, int, int]) -> tuple[int, ...]:
    """The values a matching fact gives the pattern's variables, in `variables` order."""
    values: dict[str, int] = {}
    for term, value in ((clause[0], fact[1]), (clause[2], fact[2])):
        if isinstance(term, str):
            values.setdefault(term, value)
    return tuple(values.values())
