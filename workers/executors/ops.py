"""The non-GenericJoin ops of a join program, compiled: each maps one row to the rows it
becomes (none, itself, or itself extended).

- check:   a literal whose variables are all bound — the row times its weight;
- filter:  a predicate — the row if the built-in is truthy on it;
- absent:  a negation — the row if its tuple is not in the derived relation;
- compute: a function binding — the row extended by each binding of the result.

Rows hold value ids; a built-in reads the values (decoded) and a computed value is numbered
before it joins the row, so it joins with the datoms holding the same value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from workers.arrangements.values import Numbering
from workers.datalog.functions import FUNCTIONS, CallFailed, call, truthy
from workers.executors.extenders import Extender
from workers.plan.ir import Compute, Filter, Step, StepKind
from workers.zset.row import Row

Expanded = list[tuple[Row, int]]
Getter = Callable[[Row], Any]


def _getter(step: Step, ids: Numbering) -> Getter:
    """The argument's value: a constant, or a row column decoded."""
    if step.kind is StepKind.CONST:
        value = step.arg
        return lambda row: value
    column, decode = step.arg, ids.value
    return lambda row: decode(row[column])


class CheckOp:
    __slots__ = ("_extender",)

    def __init__(self, extender: Extender) -> None:
        self._extender = extender

    def expand(self, row: Row, weight: int) -> Expanded:
        found = self._extender.weight(row)
        return [(row, weight * found)] if found else []


class AbsentOp:
    __slots__ = ("_extender",)

    def __init__(self, extender: Extender) -> None:
        self._extender = extender

    def expand(self, row: Row, weight: int) -> Expanded:
        return [] if self._extender.weight(row) else [(row, weight)]


class FilterOp:
    __slots__ = ("_args", "_fn")

    def __init__(self, op: Filter, ids: Numbering) -> None:
        self._fn = FUNCTIONS[op.fn]
        self._args = tuple(_getter(s, ids) for s in op.args)

    def expand(self, row: Row, weight: int) -> Expanded:
        try:
            keep = truthy(call(self._fn, (g(row) for g in self._args)))
        except CallFailed:
            return []
        return [(row, weight)] if keep else []


class ComputeOp:
    __slots__ = ("_args", "_fn", "_intern", "_shape", "_targets", "_width")

    def __init__(self, op: Compute, ids: Numbering) -> None:
        self._fn = FUNCTIONS[op.fn]
        self._args = tuple(_getter(s, ids) for s in op.args)
        self._intern = ids.intern
        self._shape = op.shape
        self._targets = op.targets
        self._width = len(op.outputs)

    def expand(self, row: Row, weight: int) -> Expanded:
        try:
            result = call(self._fn, (g(row) for g in self._args))
        except CallFailed:
            return []
        out: Expanded = []
        for values in _bindings(self._shape, result, len(self._targets)):
            extra = self._bind(row, values)
            if extra is not None:
                out.append((row + extra, weight))
        return out

    def _bind(self, row: Row, values: Sequence[Any]) -> Row | None:
        """The new columns, or None when a value disagrees with a bound variable."""
        extra: list[Any] = [None] * self._width
        for step, result in zip(self._targets, values, strict=True):
            value = self._intern(result)
            if step.kind is StepKind.BIND:
                extra[step.arg] = value
            elif step.kind in (StepKind.BOUND, StepKind.SAME):
                known = row[step.arg] if step.kind is StepKind.BOUND else extra[step.arg]
                if known != value:
                    return None
        return tuple(extra)


def _bindings(shape: str, result: Any, width: int) -> Iterable[Sequence[Any]]:
    """The value tuples a result binds; a result of the wrong shape binds nothing."""
    if shape == "scalar":
        return [(result,)] if result is not None else []
    if not isinstance(result, tuple | list | frozenset | set):
        return []
    if shape == "coll":
        return [(x,) for x in result]
    if shape == "tuple":
        return [tuple(result)] if len(result) == width else []
    return [tuple(r) for r in result
            if isinstance(r, tuple | list) and len(r) == width]


CompiledOp = CheckOp | AbsentOp | FilterOp | ComputeOp
