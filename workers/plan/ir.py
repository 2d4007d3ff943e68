"""The plan IR: plain frozen data that says how every executor evaluates one query.

A :class:`JoinProgram` is one GenericJoin: rows start from a seed (a pattern read from one
view, or rows handed in), are filtered by ``checks`` (patterns already fully bound), then
extended one variable per :class:`Level` — the extender with the smallest ``count``
proposes, the others ``intersect``.  An :class:`ExtenderSpec` walks one index trie with one
:class:`Step` per trie depth.  Weights multiply; a pattern's weight is applied exactly once,
at its last variable (``weighted``), and as presence before that.

A :class:`Plan` holds the full evaluation, the support program used by ``distinct`` and
the delta terms of one strategy.  ``to_dict``/``from_dict`` round-trip through JSON-able
data (constants as EDN text), so plans can be shipped and golden-tested.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any

from workers.arrangements.keys import IndexOrder
from workers.edn import dumps, read


class Role(Enum):
    """Which state a pattern is read from: before the tick, after it, or the tick's change."""

    OLD = "old"
    NEW = "new"
    DELTA = "delta"


class StepKind(Enum):
    """What one trie depth does with its key."""

    CONST = "const"  # look up a constant
    BOUND = "bound"  # look up the value of row column ``arg``
    BIND = "bind"  # enumerate keys: they become output column ``arg``
    SAME = "same"  # look up the value just bound to output column ``arg`` (repeated variable)
    FREE = "free"  # enumerate keys, bind nothing (``_`` or a variable bound later)


@dataclass(frozen=True, slots=True)
class Step:
    kind: StepKind
    arg: Any = None


@dataclass(frozen=True, slots=True)
class ExtenderSpec:
    """One pattern read through one index: its steps bind zero, one or several columns."""

    pattern: int
    role: Role
    order: IndexOrder
    steps: tuple[Step, Step, Step]
    weighted: bool = True


@dataclass(frozen=True, slots=True)
class Level:
    """Bind ``var``: the extender with the smallest count proposes, the rest intersect."""

    var: str
    extenders: tuple[ExtenderSpec, ...]


@dataclass(frozen=True, slots=True)
class JoinProgram:
    """Seed → checks → levels → output projection (indices into the row layout)."""

    seed: ExtenderSpec | None
    seed_vars: tuple[str, ...]
    checks: tuple[ExtenderSpec, ...]
    levels: tuple[Level, ...]
    output: tuple[int, ...]

    @property
    def layout(self) -> tuple[str, ...]:
        """The row's columns: seed variables, then one per level."""
        return self.seed_vars + tuple(level.var for level in self.levels)


@dataclass(frozen=True, slots=True)
class DeltaTerm:
    """``new(R_<i) ⋈ ΔR_i ⋈ old(R_>i)``: one GenericJoin seeded by pattern ``pattern``'s delta."""

    pattern: int
    program: JoinProgram


@dataclass(frozen=True, slots=True)
class BinaryTerm:
    """The same delta term as a left-deep chain of binary joins (the baseline)."""

    pattern: int
    chain: tuple[JoinProgram, ...]


@dataclass(frozen=True, slots=True)
class RecursiveStage:
    """``Δ_{1..k} = Δ_{1..k-1} ⋈ new(R_k) + old(R_1 ⋈ .. ⋈ R_{k-1}) ⋈ ΔR_k``."""

    pattern: int
    extend: JoinProgram | None
    seeded: JoinProgram


Term = DeltaTerm | BinaryTerm | RecursiveStage


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything an executor needs for one query; names no arrangement object."""

    find: tuple[str, ...]
    patterns: tuple[str, ...]
    attributes: tuple[Any, ...] | None
    strategy: str
    full: JoinProgram
    support: JoinProgram
    terms: tuple[Term, ...]

    def to_dict(self) -> dict[str, Any]:
        return _encode(self)  # type: ignore[no-any-return]

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Plan:
        plan = _decode(data)
        assert isinstance(plan, Plan)
        return plan


_NODES = {cls.__name__: cls for cls in (Step, ExtenderSpec, Level, JoinProgram, DeltaTerm,
                                        BinaryTerm, RecursiveStage, Plan)}
_ENUMS = {cls.__name__: cls for cls in (Role, StepKind, IndexOrder)}


def _encode(node: Any) -> Any:
    if isinstance(node, Step) and node.kind is StepKind.CONST:
        return {"node": "Step", "kind": _encode(node.kind), "edn": dumps(node.arg)}
    if dataclasses.is_dataclass(node):
        fields = {f.name: _encode(getattr(node, f.name)) for f in dataclasses.fields(node)}
        return {"node": type(node).__name__, **fields}
    if isinstance(node, Enum):
        return {"enum": type(node).__name__, "name": node.name}
    if isinstance(node, tuple):
        return [_encode(x) for x in node]
    if node is None or isinstance(node, bool | int | str):
        return node
    return {"edn": dumps(node)}


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return tuple(_decode(x) for x in data)
    if not isinstance(data, dict):
        return data
    if "enum" in data:
        return _ENUMS[data["enum"]][data["name"]]
    if "node" not in data:
        return read(data["edn"])
    fields = {k: _decode(v) for k, v in data.items() if k not in ("node", "edn")}
    if "edn" in data:
        fields["arg"] = read(data["edn"])
    return _NODES[data["node"]](**fields)
