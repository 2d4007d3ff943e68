"""The from-scratch oracle for queries with ``pull``: the query's rows from
:func:`workers.testing.evaluate_from_scratch` (the entity in each pulled column), each entity
then pulled by a plain recursive walk over the set of datoms — no indexes, no ids, nothing
shared with :mod:`workers.pull` but the order of a collection's values."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from edn_format import ImmutableList

from workers.datalog import compile_query
from workers.datalog.ast import AttrSpec, Pull, PullPattern
from workers.datalog.pull import DB_ID, PulledMap
from workers.db.values import is_entity_id
from workers.pull.read import value_order
from workers.testing import evaluate_from_scratch
from workers.zset import ZSet
from workers.zset.row import Row

Datom = tuple[Any, Any, Any]


def pulled_from_scratch(query: str, datoms: Iterable[Datom], cardinality_one: Collection[Any],
                        refs: Collection[Any] = (), inputs: Sequence[Any] = (),
                        components: Collection[Any] = ()) -> ZSet[Row]:
    """The query's result as a bag: rows of equal maps add up."""
    datoms = set(datoms)
    compiled = compile_query(query, inputs)
    pulls = {i: e.pattern for i, e in enumerate(compiled.find) if isinstance(e, Pull)}
    out: Counter[tuple[Any, ...]] = Counter()
    for row, weight in evaluate_from_scratch(query, datoms, inputs).items():
        out[tuple(pull(datoms, Schema(cardinality_one, refs, components), pulls[i], x)
                  if i in pulls else x
                  for i, x in enumerate(row))] += weight
    return dict(out)


@dataclass(frozen=True)
class Schema:
    """What the pull reads of the schema: the cardinality-one, ref and component attributes."""

    one: Collection[Any]
    refs: Collection[Any]
    components: Collection[Any] = ()


EVERYTHING = PullPattern(True, ())


def pull(datoms: set[Datom], schema: Schema, pattern: Any, entity: Any,
         seen: frozenset[Any] = frozenset(), left: tuple[tuple[AttrSpec, int], ...] = ()
         ) -> Any:
    """One entity's map (None when empty), as the pull documentation describes it: a
    component pulled whole (``[*]``) unless a map spec says otherwise, its reverse one map.
    Datascript's recursion: a recursive spec pulls with the pattern it is in; an entity
    reached by a recursion or a whole component's expansion that was already expanded on the
    way (``seen``) is ``{:db/id e}``; a limited spec recurses its limit of times along a path
    (``left``: the times left of those that began)."""
    assert isinstance(pattern, PullPattern)
    out: dict[Any, Any] = {}
    explicit = {s.attribute for s in pattern.attrs if not s.reverse}
    if pattern.wildcard:
        if DB_ID not in explicit:
            out[DB_ID] = entity
        for a in sorted({a for e, a, _ in datoms if e == entity} - explicit, key=value_order):
            out[a] = _show(datoms, schema, AttrSpec(a, False, a),
                           [v for e, b, v in datoms if e == entity and b == a], pattern, seen,
                           left)
    for spec in pattern.attrs:
        if spec.attribute == DB_ID:
            out[spec.key] = entity
            continue
        if spec.reverse:
            values = [e for e, a, v in datoms if a == spec.attribute and v == entity]
        else:
            values = [v for e, a, v in datoms if e == entity and a == spec.attribute]
        shown = _show(datoms, schema, spec, values, pattern, seen, left)
        if shown is not None:
            out[spec.key] = shown
        elif spec.has_default:
            out[spec.key] = spec.default
    return PulledMap(out) if out else None


def _show(datoms: set[Datom], schema: Schema, spec: AttrSpec, values: list[Any],
          within: PullPattern, seen: frozenset[Any], left: tuple[tuple[AttrSpec, int], ...]
          ) -> Any:
    component = spec.attribute in schema.components
    many = not component if spec.reverse else spec.attribute not in schema.one
    values = sorted(values, key=value_order)
    if many and spec.limit is not None:
        values = values[:spec.limit]
    if spec.recursive:
        pattern: PullPattern | None = within
    else:
        pattern = spec.pattern or (EVERYTHING if component and not spec.reverse else None)
    if pattern is not None:
        items = []
        for v in values:
            if not is_entity_id(v):
                continue
            if not (spec.recursive or (component and pattern.wildcard)):
                items.append(pull(datoms, schema, pattern, v, seen, left))
                continue
            if v in seen:
                items.append(PulledMap({DB_ID: v}))
                continue
            limits = dict(left)
            times = limits.get(spec, spec.recursion)
            if times is not None:
                if times == 0:
                    continue
                limits[spec] = times - 1
            items.append(pull(datoms, schema, pattern, v, seen | {v}, tuple(limits.items())))
        items = [m for m in items if m is not None]
    elif spec.reverse or spec.attribute in schema.refs:
        items = [PulledMap({DB_ID: v}) for v in values]
    else:
        items = values
    if not items:
        return None
    return ImmutableList(items) if many else items[0]
