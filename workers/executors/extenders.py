"""Prefix extenders over index tries: ``count``, ``propose``, ``intersect`` (GenericJoin's
three verbs), plus ``weight`` for fully bound checks and ``enumerate`` for seeds.

An extender walks one trie with the steps of its :class:`ExtenderSpec`.  The leading
constant/bound steps are a direct lookup (the *prefix*); the remaining steps bind, repeat
or scan.  A weighted extender returns the pattern's Z-set weight (summed over ``_`` scans);
an unweighted one returns presence (1) because the pattern's weight is applied at a later
level.  The ``new`` view is the old trie and the tick's delta trie read together
(:class:`OverlayExtender`); presence there may over-approximate (a key whose datoms the
delta all retracts), which is safe: the pattern's exact weight, applied later, is 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workers.arrangements import MemoryArrangement
from workers.arrangements.relation import RelationArrangement
from workers.plan.ir import DATOMS, ExtenderSpec, Role, Step, StepKind
from workers.zset import add_into

Row = tuple[Any, ...]
Candidates = Mapping[Any, int]
Arrangement = MemoryArrangement | RelationArrangement
Relations = Mapping[str, tuple[RelationArrangement, RelationArrangement]]

_LOOKUP = (StepKind.CONST, StepKind.BOUND)


class TrieExtender:
    """One pattern over one trie (a state or a delta)."""

    __slots__ = ("_shape", "_tail", "_weighted", "node")

    def __init__(self, spec: ExtenderSpec, arrangement: Arrangement) -> None:
        depth = next((d for d, s in enumerate(spec.steps) if s.kind not in _LOOKUP),
                     len(spec.steps))
        # The trie is mutated in place and never replaced, so the lookup can hold it.
        trie = arrangement.index(spec.order)  # type: ignore[arg-type]  # order fits its relation
        self.node = _prefix_lookup(trie, spec.steps[:depth])
        self._tail: tuple[Step, ...] = spec.steps[depth:]
        self._weighted = spec.weighted
        kinds = tuple(s.kind for s in self._tail)
        self._shape = ("leaf" if kinds == (StepKind.BIND,) else
                       "scan" if kinds == (StepKind.BIND, StepKind.FREE) else
                       "pairs" if kinds == (StepKind.BIND, StepKind.BIND) else "walk")

    def count(self, row: Row) -> int:
        node = self.node(row)
        return 0 if node is None else len(node)

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
            return {x: w * v for x, w in candidates.items() if (v := node.get(x))}
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

    def enumerate(self, row: Row = ()) -> dict[Row, int]:
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


class OverlayExtender:
    """The ``new`` state of one pattern: the old trie plus the tick's delta trie."""

    __slots__ = ("_delta", "_old", "_weighted")

    def __init__(self, old: TrieExtender, delta: TrieExtender, weighted: bool) -> None:
        self._old, self._delta, self._weighted = old, delta, weighted

    def count(self, row: Row) -> int:
        return self._old.count(row) + self._delta.count(row)

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
        return {x: w * candidates[x] for x, w in self.weights(row, candidates).items()}

    def weight(self, row: Row) -> int:
        return self._old.weight(row) + self._delta.weight(row)


Extender = TrieExtender | OverlayExtender


def compile_extender(spec: ExtenderSpec, old: MemoryArrangement, delta: MemoryArrangement,
                     relations: Relations | None = None) -> Extender:
    """Bind a spec to the arrangements its role reads: the shared datoms', or a derived
    relation's from ``relations`` (name → (state, change))."""
    if spec.relation != DATOMS:
        assert relations is not None, f"no arrangements for relation {spec.relation}"
        old, delta = relations[spec.relation]  # type: ignore[assignment]
    if spec.role is Role.OLD:
        return TrieExtender(spec, old)
    if spec.role is Role.DELTA:
        return TrieExtender(spec, delta)
    return OverlayExtender(TrieExtender(spec, old), TrieExtender(spec, delta), spec.weighted)


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
