"""Prefix extenders: ``count``, ``propose``, ``intersect`` (GenericJoin's three verbs), plus
``weight`` for fully bound checks and ``enumerate`` for seeds, over value ids.

An extender reads one index with the steps of its :class:`ExtenderSpec`.  The leading
constant/bound steps are a direct lookup (the *prefix*); the remaining steps bind, repeat
or scan.  A weighted extender returns the pattern's Z-set weight (summed over ``_`` scans);
an unweighted one returns presence (1) because the pattern's weight is applied at a later
level.  The database state is a spine (:class:`SpineExtender`); a tick's delta and a
derived relation are dict tries (:class:`TrieExtender`).  The ``new`` view is the old state
and the tick's delta read together (:class:`OverlayExtender`); presence there may
over-approximate (a key whose datoms the delta all retracts), which is safe: the pattern's
exact weight, applied later, is 0.  Rows, keys and constants are value ids (a spec's
constants are numbered when it is compiled, :func:`with_ids`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from workers.arrangements import ArrangementRegistry, IndexOrder, MemoryArrangement
from workers.arrangements.relation import RelationArrangement
from workers.arrangements.spine import SpineArrangement
from workers.arrangements.values import Numbering
from workers.plan.ir import DATOMS, ExtenderSpec, Role, Step, StepKind
from workers.zset import ZSet, add_into
from workers.zset.row import Row

Candidates = Mapping[Any, int]
Arrangement = MemoryArrangement | RelationArrangement
Relations = Mapping[str, tuple[RelationArrangement, RelationArrangement]]

_LOOKUP = (StepKind.CONST, StepKind.BOUND)


def with_ids(spec: ExtenderSpec, ids: Numbering) -> ExtenderSpec:
    """``spec`` with its constants replaced by their value ids (numbered now if new)."""
    if not any(s.kind is StepKind.CONST for s in spec.steps):
        return spec
    return replace(spec, steps=tuple(Step(s.kind, ids.intern(s.arg))
                                     if s.kind is StepKind.CONST else s for s in spec.steps))


def _shape(tail: Sequence[Step]) -> str:
    kinds = tuple(s.kind for s in tail)
    return ("leaf" if kinds == (StepKind.BIND,) else
            "scan" if kinds == (StepKind.BIND, StepKind.FREE) else
            "pairs" if kinds == (StepKind.BIND, StepKind.BIND) else "walk")


def lookup_depth(spec: ExtenderSpec) -> int:
    """How many leading steps are lookups (constants, bound columns): the prefix."""
    return next((d for d, s in enumerate(spec.steps) if s.kind not in _LOOKUP), len(spec.steps))


class TrieExtender:
    """One pattern over one trie (a state or a delta)."""

    __slots__ = ("_shape", "_tail", "_weighted", "node", "prefix")

    def __init__(self, spec: ExtenderSpec, arrangement: Arrangement) -> None:
        depth = lookup_depth(spec)
        # The trie is mutated in place and never replaced, so the lookup can hold it.
        trie = arrangement.index(spec.order)  # type: ignore[arg-type]  # order fits its relation
        self.node = _prefix_lookup(trie, spec.steps[:depth])
        self.prefix = _prefix_of(spec.steps[:depth])  # the keys ``node`` looks up
        self._tail: tuple[Step, ...] = spec.steps[depth:]
        self._weighted = spec.weighted
        self._shape = _shape(self._tail)

    def count(self, row: Row) -> int:
        node = self.node(row)
        return 0 if node is None else len(node)

    def small(self, row: Row) -> Candidates | None:
        """:meth:`propose` when it is one trie node read as is (the ``leaf`` shape), else
        None: see :meth:`SpineExtender.small`."""
        if self._shape != "leaf":
            return None
        return self.node(row) or _EMPTY

    def propose(self, row: Row) -> Candidates:
        node = self.node(row)
        if node is None:
            return {}
        if self._shape == "leaf":
            return node  # type: ignore[no-any-return]  # read-only view of the trie
        if self._shape == "scan":
            if self._weighted:
                return {x: w for x, sub in node.items() if (w := sum(sub.values()))}
            return dict.fromkeys(node, 1)
        out: dict[Any, int] = {}
        _walk(node, self._tail, 0, row, [None], out, self._weighted, single=True)
        return _nonzero(out)

    def weights(self, row: Row, candidates: Candidates) -> dict[Any, int]:
        """This pattern's weight (or presence) for each candidate that has one."""
        node = self.node(row)
        if node is None:
            return {}
        if self._shape == "leaf":
            return {x: w for x in candidates if (w := node.get(x))}
        if self._shape == "scan":
            if self._weighted:
                return {x: w for x in candidates
                        if (sub := node.get(x)) and (w := sum(sub.values()))}
            return {x: 1 for x in candidates if x in node}
        out: dict[Any, int] = {}
        for x in candidates:
            _walk(node, self._tail, 0, row, [x], out, self._weighted, single=True, fixed=True)
        return _nonzero(out)

    def intersect(self, row: Row, candidates: Candidates) -> dict[Any, int]:
        if self._shape == "leaf":
            node = self.node(row)
            if not node:
                return {}
            return {x: candidates[x] * v for x in candidates.keys() & node.keys()
                    if (v := node[x])}
        return {x: w * candidates[x] for x, w in self.weights(row, candidates).items()}

    def weight(self, row: Row) -> int:
        """The weight of a fully bound pattern (a check)."""
        node = self.node(row)
        if node is None:
            return 0
        if not self._tail:
            return node if self._weighted else 1  # type: ignore[no-any-return]
        out: dict[Any, int] = {}
        _walk(node, self._tail, 0, row, [], out, self._weighted, single=False)
        return out.get((), 0)

    def enumerate(self, row: Row = ()) -> ZSet[Row]:
        """Every binding of the spec's BIND columns with its weight (a seed)."""
        node = self.node(row)
        if node is None:
            return {}
        if self._shape == "pairs":
            if self._tail[0].arg == 0:
                return {(x, y): w for x, sub in node.items() for y, w in sub.items()}
            return {(y, x): w for x, sub in node.items() for y, w in sub.items()}
        binds = sum(s.kind is StepKind.BIND for s in self._tail)
        out: dict[Any, int] = {}
        _walk(node, self._tail, 0, row, [None] * binds, out, self._weighted, single=False)
        return _nonzero(out)


class SpineExtender:
    """One data pattern over the database state (a set of datoms, as a spine of id batches)."""

    __slots__ = ("_free_tail", "_order", "_shape", "_spine", "_tail", "_weighted", "_whole",
                 "prefix")

    def __init__(self, spec: ExtenderSpec, spine: SpineArrangement) -> None:
        depth = lookup_depth(spec)
        assert isinstance(spec.order, IndexOrder)
        self._spine, self._order = spine, spec.order
        self.prefix = _prefix_of(spec.steps[:depth])
        self._tail: tuple[Step, ...] = spec.steps[depth:]
        self._free_tail = all(s.kind is StepKind.FREE for s in self._tail)  # a check's weight
        self._weighted = spec.weighted
        self._shape = _shape(self._tail)
        self._whole = self._shape == "leaf" or self._shape == "scan"  # the spine's sums

    def count(self, row: Row) -> int:
        """An upper bound (GenericJoin only ranks extenders by it), O(sources)."""
        return self._spine.estimate(self._order, self.prefix(row))

    def small(self, row: Row) -> Candidates | None:
        """:meth:`propose` when the spine reads the node whole (a small one), else None.
        Then :meth:`count` is its size and :meth:`intersect` its product with the
        candidates, key by key: GenericJoin reads each extender once per row
        (:func:`~workers.executors.generic_join.extend_one`)."""
        if not self._whole:
            return None
        sums = self._spine.small(self._order, self.prefix(row))
        return sums if sums is None or self._weighted else dict.fromkeys(sums, 1)

    def propose(self, row: Row) -> Candidates:
        if self._shape == "leaf" or self._shape == "scan":
            sums = self._spine.propose(self._order, self.prefix(row))
            return sums if self._weighted else dict.fromkeys(sums, 1)
        return self._walk(row, single=True)

    def weights(self, row: Row, candidates: Candidates) -> dict[Any, int]:
        """This pattern's weight (or presence) for each candidate that has one."""
        if self._shape == "leaf" or self._shape == "scan":
            found = self._spine.intersect(self._order, self.prefix(row),
                                          dict.fromkeys(candidates, 1))
            return found if self._weighted else dict.fromkeys(found, 1)
        every = self._walk(row, single=True)
        return {x: w for x in candidates if (w := every.get(x))}

    def intersect(self, row: Row, candidates: Candidates) -> dict[Any, int]:
        if self._weighted and (self._shape == "leaf" or self._shape == "scan"):
            return self._spine.intersect(self._order, self.prefix(row), candidates)
        return {x: w * candidates[x] for x, w in self.weights(row, candidates).items()}

    def weight(self, row: Row) -> int:
        """The weight of a fully bound pattern (a check)."""
        if self._free_tail:
            total = self._spine.weight(self._order, self.prefix(row))
            return total if self._weighted or not total else 1
        return self._walk(row, single=False).get((), 0)

    def enumerate(self, row: Row = ()) -> ZSet[Row]:
        """Every binding of the spec's BIND columns with its weight (a seed)."""
        leaves = self._spine.enumerate(self._order, self.prefix(row))
        if self._shape == "pairs":
            if self._tail[0].arg == 0:
                return leaves
            return {(y, x): w for (x, y), w in leaves.items()}
        return self._walk(row, single=False, leaves=leaves)

    def _walk(self, row: Row, *, single: bool,
              leaves: dict[tuple[int, ...], int] | None = None) -> dict[Any, int]:
        """The tail's steps over the datoms under the prefix: each binding's weight (or
        presence), keyed by the bound column (``single``) or the tuple of BIND columns."""
        if leaves is None:
            leaves = self._spine.enumerate(self._order, self.prefix(row))
        binds = sum(s.kind is StepKind.BIND for s in self._tail)
        out: dict[Any, int] = {}
        for suffix, weight in leaves.items():
            binding = _match(self._tail, suffix, row, [None] * binds)
            if binding is not None:
                key = binding[0] if single else tuple(binding)
                out[key] = out.get(key, 0) + weight if self._weighted else 1
        return _nonzero(out)


def _match(steps: Sequence[Step], keys: Sequence[Any], row: Row,
           binding: list[Any]) -> list[Any] | None:
    """``binding`` filled from one datom's keys under the steps, or None if they disagree."""
    for step, key in zip(steps, keys, strict=True):
        kind = step.kind
        if kind is StepKind.BIND:
            binding[step.arg] = key
        elif kind is StepKind.CONST:
            if key != step.arg:
                return None
        elif kind is StepKind.BOUND:
            if key != row[step.arg]:
                return None
        elif kind is StepKind.SAME and key != binding[step.arg]:
            return None
    return binding


def _prefix_of(steps: Sequence[Step]) -> Callable[[Row], tuple[Any, ...]]:
    """A function from a row to the ids of the constant/bound prefix."""
    keys = tuple((s.kind is StepKind.CONST, s.arg) for s in steps)
    if all(is_const for is_const, _ in keys):
        constant = tuple(arg for _, arg in keys)
        return lambda row: constant
    if len(keys) == 1:
        column = keys[0][1]
        return lambda row: (row[column],)
    if len(keys) == 2:
        (first_const, a), (second_const, b) = keys
        if first_const:
            return lambda row: (a, row[b])
        if second_const:
            return lambda row: (row[a], b)
        return lambda row: (row[a], row[b])
    if [is_const for is_const, _ in keys] == [False, True, False]:  # a whole datom: a check
        (_, a), (_, b), (_, c) = keys
        return lambda row: (row[a], b, row[c])
    return lambda row: tuple(arg if is_const else row[arg] for is_const, arg in keys)


class OverlayExtender:
    """The ``new`` state of one pattern: the old trie plus the tick's delta trie."""

    __slots__ = ("_delta", "_old", "_weighted", "prefix")

    def __init__(self, old: SpineExtender | TrieExtender, delta: TrieExtender,
                 weighted: bool) -> None:
        self._old, self._delta, self._weighted = old, delta, weighted
        self.prefix = old.prefix  # the delta's too: one spec

    def count(self, row: Row) -> int:
        return self._old.count(row) + self._delta.count(row)

    def small(self, row: Row) -> Candidates | None:
        """:meth:`propose` when both sides read their node whole, else None."""
        old = self._old.small(row)
        if old is None:
            return None
        delta = self._delta.small(row)
        if delta is None:
            return None
        return _merge(old, delta, self._weighted) if delta else old

    def propose(self, row: Row) -> Candidates:
        old, delta = self._old.propose(row), self._delta.propose(row)
        if not delta:
            return old
        return _merge(old, delta, self._weighted)

    def weights(self, row: Row, candidates: Candidates) -> dict[Any, int]:
        old = self._old.weights(row, candidates)
        delta = self._delta.weights(row, candidates)
        return _merge(old, delta, self._weighted) if delta else old

    def intersect(self, row: Row, candidates: Candidates) -> dict[Any, int]:
        if self._weighted:  # weights add: each side's intersection, then their sum
            old, delta = self._old.intersect(row, candidates), self._delta.intersect(row,
                                                                                candidates)
            return add_into(old, delta) if delta else old
        return {x: w * candidates[x] for x, w in self.weights(row, candidates).items()}

    def weight(self, row: Row) -> int:
        return self._old.weight(row) + self._delta.weight(row)


Extender = SpineExtender | TrieExtender | OverlayExtender


def compile_extender(spec: ExtenderSpec, db: ArrangementRegistry, delta: MemoryArrangement,
                     relations: Relations | None = None) -> Extender:
    """Bind a spec to the arrangements its role reads: the shared datoms' (the database's
    spine, the tick's delta trie of ids), or a derived relation's from ``relations``
    (name → (state, change))."""
    spec = with_ids(spec, db.ids)
    if spec.relation != DATOMS:
        assert relations is not None, f"no arrangements for relation {spec.relation}"
        state, change = relations[spec.relation]
        if spec.role is Role.OLD:
            return TrieExtender(spec, state)
        if spec.role is Role.DELTA:
            return TrieExtender(spec, change)
        return OverlayExtender(TrieExtender(spec, state), TrieExtender(spec, change),
                               spec.weighted)
    if spec.role is Role.OLD:
        return SpineExtender(spec, db.state)
    if spec.role is Role.DELTA:
        return TrieExtender(spec, delta)
    return OverlayExtender(SpineExtender(spec, db.state), TrieExtender(spec, delta),
                           spec.weighted)


def _merge(old: Candidates, delta: Candidates, weighted: bool) -> dict[Any, int]:
    """``new = old + delta`` for weights; for presence, the union (an over-approximation)."""
    if weighted:
        return add_into(dict(old), delta)
    return {**old, **dict.fromkeys(delta, 1)}


def _prefix_lookup(root: dict[Any, Any], steps: Sequence[Step]) -> Callable[[Row], Any]:
    """A function from a row to the subtree under the constant/bound prefix (None if empty)."""
    keys = tuple((s.kind is StepKind.CONST, s.arg) for s in steps)
    if not keys:
        return lambda row: root or None
    if len(keys) == 1:
        (is_const, arg), = keys
        if is_const:
            return lambda row: root.get(arg)
        return lambda row: root.get(row[arg])
    if len(keys) == 2:
        return _two_key_lookup(root, keys[0], keys[1])

    def lookup(row: Row) -> Any:
        node: Any = root
        for is_const, key in keys:
            node = node.get(key if is_const else row[key])
            if node is None:
                return None
        return node

    return lookup


_EMPTY: dict[Any, Any] = {}


def _two_key_lookup(root: dict[Any, Any], first: tuple[bool, Any],
                    second: tuple[bool, Any]) -> Callable[[Row], Any]:
    """The four constant/bound combinations of a two-key prefix, without a loop."""
    (first_const, a), (second_const, b) = first, second
    if first_const and second_const:
        return lambda row: (root.get(a) or _EMPTY).get(b)
    if first_const:
        return lambda row: (root.get(a) or _EMPTY).get(row[b])
    if second_const:
        return lambda row: (root.get(row[a]) or _EMPTY).get(b)
    return lambda row: (root.get(row[a]) or _EMPTY).get(row[b])


def _nonzero(weights: dict[Any, int]) -> dict[Any, int]:
    """Sums over ``_`` scans of a delta can cancel; a Z-set keeps no zero."""
    return {x: w for x, w in weights.items() if w}


def _walk(node: Any, steps: Sequence[Step], depth: int, row: Row, binding: list[Any],
          out: dict[Any, int], weighted: bool, *, single: bool, fixed: bool = False) -> None:
    """Accumulate into ``out`` the weight (or presence) below ``node`` for each binding.

    ``fixed``: the BIND column is already set (checking one candidate, not enumerating).
    """
    if depth == len(steps):
        key = binding[0] if single else tuple(binding)
        out[key] = out.get(key, 0) + node if weighted else 1
        return
    step = steps[depth]
    kind = step.kind
    if kind is StepKind.FREE or (kind is StepKind.BIND and not fixed):
        for key, child in node.items():
            if kind is StepKind.BIND:
                binding[step.arg] = key
            _walk(child, steps, depth + 1, row, binding, out, weighted, single=single,
                  fixed=fixed)
        return
    if kind is StepKind.CONST:
        key = step.arg
    elif kind is StepKind.BOUND:
        key = row[step.arg]
    else:  # SAME, or BIND with the candidate fixed
        key = binding[step.arg]
    child = node.get(key)
    if child is not None:
        _walk(child, steps, depth + 1, row, binding, out, weighted, single=single, fixed=fixed)
