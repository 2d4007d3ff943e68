"""Pull one entity's map from the database, and find the entities whose map a tick may change.

The map (Datomic's pull, https://docs.datomic.com/query/query-pull.html):

- a forward attribute gives its value, or a vector of its values when it is
  cardinality-many (every undeclared attribute is: :mod:`workers.db.schema`), at most
  ``:limit`` of them (1000 unless given; ``nil``: all);
- a value of a declared ``:db.type/ref`` attribute is ``{:db/id v}``; with a nested pattern
  (``{:friend [:name]}``) a value is the referenced entity pulled with that pattern, whatever
  the attribute's type, and an entity that pulls to nothing is left out;
- a reverse attribute (``:_parent``) gives the vector of entities pointing here through it;
- a missing attribute is left out, or ``:default`` stands in; ``:as`` renames the key;
- ``*`` pulls every forward attribute of the entity and ``:db/id``; an entity with nothing to
  show pulls to ``nil``;
- a recursive spec (``{:friend ...}``, ``{:friend 2}``) pulls the entities it references with
  the pattern it is part of, at most its limit of times along a path; as in Datascript, an
  entity already expanded on the path (by a recursion, or a component pulled whole) shows as
  ``{:db/id e}``, and an entity past the limit is left out.

Values of a collection come in a fixed order (by kind, then value — :func:`value_order`),
so a map depends on the database only, never on how its indexes were built.

**Which roots a datom can change.**  Pulling ``e`` with pattern ``P`` reads the datoms
``[x a _]`` for each node of ``P`` that reads ``a`` forward at an entity ``x`` it reached, and
``[_ a x]`` for each reverse one.  A tick's datom ``[x a y]`` therefore changes at most the
roots from which some node reaches ``x`` (forward ``a``) or ``y`` (reverse ``a``); they are
found by walking from that node back to the pattern's root along the edges it followed —
``[p b x]`` for a forward edge ``b``, ``[x b p]`` for a reverse one.  The walk reads the
database *after* the tick: take any path root → ... → x that the tick changes the pull
along, and its first datom the tick changed; the path up to there is in both states, so
walking up from that datom's own node finds the root.  A recursive spec is an edge from its
node back to the same node, walked up like any other.  A schema datom about an attribute
the pattern reads (any, under ``*``) can change how every value of it reads (cardinality,
ref): a tick with one changes every root.
"""

from __future__ import annotations

import datetime
import sys
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from edn_format import ImmutableList

from workers.arrangements import ArrangementRegistry
from workers.arrangements.delta import DatomColumns, IdDelta
from workers.arrangements.keys import IndexOrder
from workers.datalog.ast import AttrSpec, PullPattern
from workers.datalog.functions import sort_key
from workers.datalog.pull import DB_ID, PulledMap
from workers.db import Schema
from workers.db.schema import SCHEMA_ATTRIBUTES
from workers.db.values import is_entity_id

EAV, VAE = IndexOrder.EAV, IndexOrder.VAE
IdDatom = tuple[int, int, int]


def value_order(x: Any) -> tuple[Any, ...]:
    """The order of a pulled collection: by kind, then value; the type's name breaks the tie
    between values Python finds equal (``1`` and ``1.0``)."""
    try:
        return (0, sort_key(x), type(x).__name__)
    except TypeError:  # a date, or anything else sort_key does not rank
        return (1, _other_rank(x), str(x), type(x).__name__)


def _other_rank(x: Any) -> int:
    return 0 if isinstance(x, datetime.date) else 1 if isinstance(x, uuid.UUID) else 2


@dataclass(frozen=True, slots=True)
class _Node:
    """A pattern node reached from its parent along ``attribute`` (``reverse``: backwards).
    Its recursive specs lead back to itself: ``loops``, as (attribute, reverse)."""

    pattern: PullPattern
    parent: int | None
    attribute: Any = None
    reverse: bool = False

    @property
    def loops(self) -> list[tuple[Any, bool]]:
        return [(spec.attribute, spec.reverse) for spec in self.pattern.attrs if spec.recursive]


def _nodes(pattern: PullPattern) -> list[_Node]:
    """The pattern's nodes, root first, each after its parent."""
    nodes = [_Node(pattern, None)]
    for i, node in enumerate(nodes):  # grows while iterated: breadth first
        nodes += [_Node(spec.pattern, i, spec.attribute, spec.reverse)
                  for spec in node.pattern.attrs if spec.pattern is not None]
    return nodes


UNBOUNDED_DEPTH = 2**31  # a pattern that recurses without a limit


def depth(pattern: PullPattern) -> int:
    """How many references deep the pattern reads at most (0: the root entity's datoms
    only): its nodes' depth, and each recursive spec's limit, which may all be used along
    one path (a recursion returns to its own node)."""
    nodes = _nodes(pattern)
    depths = [0] * len(nodes)
    for i, node in enumerate(nodes):
        if node.parent is not None:
            depths[i] = depths[node.parent] + 1
    limits = [spec.recursion for node in nodes for spec in node.pattern.attrs if spec.recursive]
    if None in limits:
        return UNBOUNDED_DEPTH
    return max(depths) + sum(limit for limit in limits if limit is not None)


def attributes_read(pattern: PullPattern) -> tuple[Any, ...] | None:
    """Every attribute whose datoms can change the pattern's maps, schema attributes
    included; None when it has a wildcard (any attribute can)."""
    nodes = _nodes(pattern)
    if any(node.pattern.wildcard for node in nodes):
        return None
    return tuple(dict.fromkeys([*(spec.attribute for node in nodes
                                  for spec in node.pattern.attrs if spec.attribute != DB_ID),
                                *sorted(SCHEMA_ATTRIBUTES, key=value_order)]))


EVERYTHING = PullPattern(True, ())  # [*]: how a component is pulled
# A recursive pull's map nests as deep as the chain it follows (Datascript's suite pulls
# 2,900 levels), and reading, comparing, hashing and printing it recurse about four frames
# a level: the interpreter's default of 1,000 frames would end a map ~250 levels deep.  From
# Python 3.11 a call between Python functions takes no C stack; the C frames of a nested
# map's hash and equality, a few hundred bytes a level, fit the main thread's 8 MiB.
RECURSION_LIMIT = 20_000
sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))


@dataclass(frozen=True, slots=True)
class _Path:
    """What a pull carries down its branch: the entities expanded on the way (``seen``) and
    how many more times each limited recursive spec may recurse (``left``)."""

    seen: frozenset[Any]
    left: dict[AttrSpec, int]


class PullReader:
    """Pulls over the database as it stands (value ids inside, values out)."""

    __slots__ = ("db", "schema")

    def __init__(self, db: ArrangementRegistry, schema: Schema) -> None:
        self.db, self.schema = db, schema

    def pull(self, pattern: PullPattern, entity: Any) -> PulledMap | None:
        """``entity``'s map; None when the pattern finds nothing on it."""
        return self._pull(pattern, entity, _Path(frozenset(), {}))

    def _pull(self, pattern: PullPattern, entity: Any, path: _Path) -> PulledMap | None:
        found = self.db.ids.lookup(entity)
        out: dict[Any, Any] = {}
        explicit = {spec.attribute for spec in pattern.attrs if not spec.reverse}
        if pattern.wildcard:
            if DB_ID not in explicit:
                out[DB_ID] = entity
            value = self.db.ids.value
            held = {} if found is None else self.db.state.enumerate(EAV, (found,))
            by_attribute: dict[Any, list[Any]] = {}
            for (a, v), _ in held.items():
                by_attribute.setdefault(value(a), []).append(value(v))
            for attribute, values in sorted(by_attribute.items(), key=lambda p: value_order(
                    p[0])):
                if attribute not in explicit:
                    out[attribute] = self._shown(AttrSpec(attribute, False, attribute),
                                                 values, pattern, path)
        for spec in pattern.attrs:
            if spec.attribute == DB_ID and not spec.reverse:
                out[spec.key] = entity
                continue
            shown = self._shown(spec, self._read(found, spec), pattern, path)
            if shown is not None:
                out[spec.key] = shown
            elif spec.has_default:
                out[spec.key] = spec.default
        return PulledMap(out) if out else None

    def _read(self, entity: int | None, spec: AttrSpec) -> list[Any]:
        """The attribute's values on the entity (reverse: the entities pointing at it)."""
        attribute = self.db.ids.lookup(spec.attribute)
        if entity is None or attribute is None:
            return []
        order = VAE if spec.reverse else EAV
        return [self.db.ids.value(x) for x in self.db.state.propose(order, (entity, attribute))]

    def _shown(self, spec: AttrSpec, values: list[Any], enclosing: PullPattern, path: _Path
               ) -> Any:
        """The values as the map holds them, or None when there is nothing to show.  A
        component is pulled whole (``[*]``, recursively) unless the spec says otherwise, and
        has one owner: its reverse attribute is one map, not a vector (Datomic's pull).
        ``enclosing``: the pattern ``spec`` is part of, which a recursive spec pulls with."""
        declared = self.schema[spec.attribute]
        many = (not declared.component) if spec.reverse else not declared.cardinality_one
        values.sort(key=value_order)
        if many and spec.limit is not None:
            values = values[:spec.limit]
        pattern = enclosing if spec.recursive else spec.pattern or (
            EVERYTHING if declared.component and not spec.reverse else None)
        if pattern is not None:
            expanding = spec.recursive or (declared.component and pattern.wildcard)
            items = [m for v in values if is_entity_id(v) and (
                m := self._nested(spec, pattern, v, path) if expanding
                else self._pull(pattern, v, path))]
        elif spec.reverse or self.schema.is_ref(spec.attribute):
            items = [PulledMap({DB_ID: v}) for v in values]
        else:
            items = values
        if not items:
            return None
        return ImmutableList(items) if many else items[0]

    def _nested(self, spec: AttrSpec, pattern: PullPattern, entity: Any, path: _Path
                ) -> PulledMap | None:
        """An entity reached through a spec that expands without end of its own (a
        recursive one, or a component pulled whole), as Datascript's pull: one already
        expanded on the way here shows as ``{:db/id e}``; past a recursion limit, nothing."""
        if entity in path.seen:
            return PulledMap({DB_ID: entity})
        left = path.left.get(spec, spec.recursion)
        if left is not None and left <= 0:
            return None
        return self._pull(pattern, entity, _Path(
            path.seen | {entity}, path.left if left is None else {**path.left, spec: left - 1}))

    def _owners(self, entity: int, components: set[int]) -> set[int]:
        """The entities ``entity`` is a component of, directly or not (ids)."""
        owners: set[int] = set()
        stack = [entity]
        while stack and components:
            part = stack.pop()
            for attribute in components:
                for owner in self.db.state.propose(VAE, (part, attribute)):
                    if owner not in owners:
                        owners.add(owner)
                        stack.append(owner)
        return owners

    def roots(self, pattern: PullPattern, delta: IdDelta) -> set[Any] | None:
        """The entities whose map under ``pattern`` the tick's ``delta`` may have changed
        (see the module doc); None: every entity's (the tick changed the schema)."""
        lookup = self.db.ids.lookup
        nodes = _nodes(pattern)
        forward = [{lookup(s.attribute) for s in n.pattern.attrs if not s.reverse} for n in nodes]
        backward = [{lookup(s.attribute) for s in n.pattern.attrs if s.reverse} for n in nodes]
        edges = [lookup(n.attribute) for n in nodes]
        schema = {lookup(a) for a in SCHEMA_ATTRIBUTES}
        read = set().union(*forward, *backward) - {None}
        wildcard = any(n.pattern.wildcard for n in nodes)
        components = {i for i in map(lookup, self.schema.component_attributes())
                      if i is not None}
        # The nodes that pull components whole: a change inside one changes its owners' maps.
        expanding = [i for i, n in enumerate(nodes) if components and (
            n.pattern.wildcard or any(lookup(s.attribute) in components and s.pattern is None
                                      for s in n.pattern.attrs if not s.reverse))]
        seeds: set[tuple[int, int]] = set()
        for x, a, y in _datoms(delta, None if wildcard or expanding else read | schema):
            if a in schema and (wildcard or x in read):  # how an attribute read reads
                return None
            for i, node in enumerate(nodes):
                if node.pattern.wildcard or a in forward[i]:
                    seeds.add((i, x))
                if a in backward[i]:
                    seeds.add((i, y))
            seeds.update((i, owner) for owner in self._owners(x, components) for i in expanding)
        # Up each edge: to the parent along the node's own, to the node itself along its
        # recursive specs'.
        up = [[(lookup(a), reverse, i) for a, reverse in n.loops]
              + ([] if n.parent is None else [(edges[i], n.reverse, n.parent)])
              for i, n in enumerate(nodes)]
        found: set[Any] = set()
        seen, stack = set(seeds), list(seeds)
        while stack:
            i, x = stack.pop()
            if nodes[i].parent is None:
                found.add(self.db.ids.value(x))
            for edge, reverse, parent in up[i]:
                if edge is None:
                    continue
                order = EAV if reverse else VAE  # [x b p] backwards, [p b x] forwards
                for p in self.db.state.propose(order, (x, edge)):
                    if (parent, p) not in seen:
                        seen.add((parent, p))
                        stack.append((parent, p))
        return found


def _datoms(delta: IdDelta, attributes: set[int | None] | None) -> Iterator[IdDatom]:
    """The delta's datoms (ids), only those of ``attributes`` when given."""
    if isinstance(delta, DatomColumns):
        e, a, v = delta.e, delta.a, delta.v
        if attributes is not None:
            keep = np.isin(a, np.fromiter(attributes, np.int64, len(attributes)))
            e, a, v = e[keep], a[keep], v[keep]
        yield from zip(e.tolist(), a.tolist(), v.tolist(), strict=True)
        return
    datoms: Iterable[IdDatom] = delta
    yield from (d for d in datoms if attributes is None or d[1] in attributes)
