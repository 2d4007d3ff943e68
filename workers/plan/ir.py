"""The plan IR: plain frozen data that says how every executor evaluates one query.

A :class:`JoinProgram` is one GenericJoin: rows start from a seed (a pattern read from one
view, or rows handed in), are filtered by ``checks`` (patterns already fully bound), then
extended one variable per :class:`Level` — the extender with the smallest ``count``
proposes, the others ``intersect``.  An :class:`ExtenderSpec` walks one index trie with one
:class:`Step` per trie depth.  Weights multiply; a pattern's weight is applied exactly once,
at its last variable (``weighted``), and as presence before that.

A query's *body* computes its basis set (the find variables, then ``:with``): a
:class:`Plan` — the full evaluation, the support program used by ``distinct`` and the delta
terms of one strategy — when it has data patterns only, else a :class:`RulesPlan` — strata of
derived relations kept by DRed.  A :class:`QueryPlan` is what the rest of the code talks to:
the body and the :class:`Find` that turns basis rows into result rows (aggregates, ``:with``
projection, pulled maps, the find specification).  ``to_dict``/``from_dict`` round-trip
every plan through JSON-able data (constants as EDN text), so plans can be shipped and
golden-tested.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any, Self

from workers.arrangements.keys import IndexOrder
from workers.datalog.ast import AttrSpec, FindSpec, PullPattern
from workers.edn import dumps, read


class Node:
    """A plan's root: it round-trips through JSON-able data (``json.dumps`` takes it)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return _encode(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        node = _decode(data)
        if not isinstance(node, cls):
            raise ValueError(f"expected a {cls.__name__}, got {type(node).__name__}")
        return node


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


DATOMS = "$"  # the relation of the shared arrangements; other names are derived relations


@dataclass(frozen=True, slots=True)
class ExtenderSpec:
    """One literal read through one index: its steps bind zero, one or several columns.

    ``relation`` is ``$`` for a data pattern (``order`` an :class:`IndexOrder`) or the name
    of a derived relation of the query (``order`` a permutation of its columns).  Among a
    program's ops, an ExtenderSpec is a *check*: a literal whose variables are all bound.
    """

    pattern: int
    role: Role
    order: IndexOrder | tuple[int, ...]
    steps: tuple[Step, ...]
    weighted: bool = True
    relation: str = DATOMS


@dataclass(frozen=True, slots=True)
class Level:
    """Bind ``var``: the extender with the smallest count proposes, the rest intersect."""

    var: str
    extenders: tuple[ExtenderSpec, ...]


@dataclass(frozen=True, slots=True)
class Compute:
    """A function binding: ``fn`` of ``args`` (CONST or BOUND steps) through a binding
    ``shape`` (scalar, tuple, coll, rel) whose ``targets`` BIND new columns (``outputs``),
    compare with BOUND ones, or are FREE (``_``)."""

    fn: str
    args: tuple[Step, ...]
    shape: str
    targets: tuple[Step, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Filter:
    """A predicate: rows for which ``fn`` of ``args`` is not truthy are dropped."""

    fn: str
    args: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Absent:
    """A negation: rows whose tuple (every step a lookup) is in the relation are dropped."""

    spec: ExtenderSpec


Op = Level | ExtenderSpec | Compute | Filter | Absent


def columns_added(op: Op) -> tuple[str, ...]:
    """The variables an op appends to the row."""
    if isinstance(op, Level):
        return (op.var,)
    if isinstance(op, Compute):
        return op.outputs
    return ()


@dataclass(frozen=True, slots=True)
class JoinProgram:
    """Seed → checks → ops → output projection (indices into the row layout).

    ``levels`` is the sequence of ops: GenericJoin levels, and function bindings, predicates,
    negations and late checks placed as soon as their variables are bound."""

    seed: ExtenderSpec | None
    seed_vars: tuple[str, ...]
    checks: tuple[ExtenderSpec, ...]
    levels: tuple[Op, ...]
    output: tuple[int, ...]

    @property
    def layout(self) -> tuple[str, ...]:
        """The row's columns: seed variables, then those each op adds."""
        return self.seed_vars + tuple(v for op in self.levels for v in columns_added(op))


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
class SeededProgram:
    """A rule body run from the changed tuples of one of its literals (the seed).

    ``unify`` turns a tuple of the literal's relation into a row over the literal's
    variables (CONST: must equal, BIND: new column, SAME: must equal that column, FREE).
    ``old`` reads every other literal before the tick (DRed's over-deletion), ``new`` after
    it (insertion).  ``negated``: the literal is a negation, so a tuple entering its
    relation removes derivations.  ``recursive``: the relation is in the rule's own stratum.
    """

    literal: int
    relation: str
    unify: tuple[Step, ...]
    negated: bool
    recursive: bool
    old: JoinProgram
    new: JoinProgram


@dataclass(frozen=True, slots=True)
class Premise:
    """A literal of the rule's own stratum read in a witness: the relation, and how its
    tuple is built from a witness row (CONST values, BOUND columns)."""

    relation: str
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class RulePlan:
    """One rule of a derived relation: its programs output the head's columns, but
    ``witness`` (seeded by heads, each derivation as the head then its premises' other
    variables; None when the rule reads nothing of its own stratum, or a premise has a
    blank)."""

    source: str
    full: JoinProgram
    support: JoinProgram
    seeded: tuple[SeededProgram, ...]
    witness: JoinProgram | None = None
    premises: tuple[Premise, ...] = ()


@dataclass(frozen=True, slots=True)
class RelationPlan:
    name: str
    arity: int
    rules: tuple[RulePlan, ...]


@dataclass(frozen=True, slots=True)
class Stratum:
    """Relations computed together: recursive when they depend on each other."""

    relations: tuple[RelationPlan, ...]
    recursive: bool


@dataclass(frozen=True, slots=True)
class RulesPlan(Node):
    """A query with derived relations (``or``, ``not``, rules): strata in dependency
    order, the last one holding the query's own relation ``root``."""

    find: tuple[str, ...]
    attributes: tuple[Any, ...] | None
    strategy: str
    strata: tuple[Stratum, ...]
    root: str

    @property
    def keeps_relations(self) -> bool:
        """Its derived relations are state of the query, kept in process and rebuilt from
        the database (on registration and restore)."""
        return True


@dataclass(frozen=True, slots=True)
class Plan(Node):
    """Data patterns only: everything an executor needs; names no arrangement object."""

    find: tuple[str, ...]
    patterns: tuple[str, ...]
    attributes: tuple[Any, ...] | None
    strategy: str
    full: JoinProgram
    support: JoinProgram
    terms: tuple[Term, ...]

    @property
    def keeps_relations(self) -> bool:
        """Stateless: every step reads the shared arrangements only (so it may run on any
        executor, Spark included)."""
        return False


Body = Plan | RulesPlan  # how a query's basis set is computed


@dataclass(frozen=True, slots=True)
class FindColumn:
    """One ``:find`` element over the basis row: column ``index`` as it is (a group column
    when others aggregate), aggregated by ``fn`` (``n`` of ``(min n ?x)``), or the entity it
    holds shown as the map ``pull`` reads."""

    index: int
    fn: str | None = None
    n: int | None = None
    pull: PullPattern | None = None


@dataclass(frozen=True, slots=True)
class Find:
    """How basis rows become the query's rows: ``columns`` (one per ``:find`` element), the
    ``:with`` variables ``with_`` (without aggregates the result is their projection, a
    bag), the one-shot result's shape ``spec`` (relation, collection, tuple, scalar) and its
    ``keys`` (``(":keys" | ":strs" | ":syms", names)``)."""

    columns: tuple[FindColumn, ...]
    with_: tuple[str, ...] = ()
    spec: FindSpec = "relation"
    keys: tuple[str, tuple[str, ...]] | None = None

    @property
    def aggregated(self) -> bool:
        return any(c.fn is not None for c in self.columns)

    @property
    def bag(self) -> bool:
        """``:with`` without aggregates: the basis projected on the find columns."""
        return bool(self.with_) and not self.aggregated

    @property
    def pulls(self) -> bool:
        return any(c.pull is not None for c in self.columns)


@dataclass(frozen=True, slots=True)
class QueryPlan(Node):
    """A whole query: ``body`` computes the basis set (:class:`Plan` or :class:`RulesPlan`),
    ``find`` turns its changes into the result's."""

    body: Body
    find: Find

    @property
    def attributes(self) -> tuple[Any, ...] | None:
        """The attributes whose datoms can change the basis (None: any); pulls read more."""
        return self.body.attributes

    @property
    def keeps_state(self) -> bool:
        """Derived relations, aggregate groups or pulled maps: state built from the current
        database, even for a query resumed without emitting its result."""
        return self.body.keeps_relations or self.find.aggregated or self.find.pulls


_NODES = {cls.__name__: cls for cls in (
    Step, ExtenderSpec, Level, JoinProgram, DeltaTerm, BinaryTerm, RecursiveStage, Plan,
    Compute, Filter, Absent, SeededProgram, Premise, RulePlan, RelationPlan, Stratum, RulesPlan,
    FindColumn, Find, QueryPlan, PullPattern, AttrSpec)}
_ENUMS = {cls.__name__: cls for cls in (Role, StepKind, IndexOrder)}


def _encode(node: Any) -> Any:
    if isinstance(node, Step) and node.kind is StepKind.CONST:
        return {"node": "Step", "kind": _encode(node.kind), "arg": _encode_value(node.arg)}
    if dataclasses.is_dataclass(node):
        fields = {f.name: _encode(getattr(node, f.name)) for f in dataclasses.fields(node)}
        return {"node": type(node).__name__, **fields}
    if isinstance(node, Enum):
        return {"enum": type(node).__name__, "name": node.name}
    if isinstance(node, tuple):
        return [_encode(x) for x in node]
    if node is None or isinstance(node, bool | int | str):
        return node
    return _encode_value(node)


def _encode_value(value: Any) -> dict[str, Any]:
    """A value as EDN text — but a tuple (a row or a relation, as inputs are bound) and a
    list holding one keep their kind, which EDN's one vector would lose."""
    if isinstance(value, tuple):
        return {"tuple": [_encode_value(x) for x in value]}
    if isinstance(value, list):
        return {"vector": [_encode_value(x) for x in value]}
    return {"edn": dumps(value)}


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return tuple(_decode(x) for x in data)
    if not isinstance(data, dict):
        return data
    if "enum" in data:
        return _ENUMS[data["enum"]][data["name"]]
    if "node" not in data:
        return _decode_value(data)
    fields = {k: _decode(v) for k, v in data.items() if k != "node"}
    return _NODES[data["node"]](**fields)


def _decode_value(data: dict[str, Any]) -> Any:
    if "tuple" in data:
        return tuple(_decode_value(x) for x in data["tuple"])
    if "vector" in data:
        return [_decode_value(x) for x in data["vector"]]
    return read(data["edn"])
