"""The query AST: frozen dataclasses named after the grammar productions.

Every node keeps the EDN form it came from (``source``) for error messages; it does not
take part in equality, so two queries that mean the same compare equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from workers.edn import Keyword


@dataclass(frozen=True, slots=True)
class Variable:
    """A logic variable, spelled as written: ``?x`` or a plain symbol such as ``name``."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Constant:
    """A literal value in a pattern position (keyword, string, number, ...)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Blank:
    """``_``: matches anything and binds nothing (two blanks never unify)."""


Term = Variable | Constant | Blank


def variables_of(terms: tuple[Term, ...]) -> tuple[Variable, ...]:
    """The distinct variables among ``terms``, in order."""
    return tuple(dict.fromkeys(t for t in terms if isinstance(t, Variable)))


@dataclass(frozen=True, slots=True)
class Pattern:
    """A data pattern ``[e a v]``; missing trailing positions are blanks."""

    e: Term
    a: Term
    v: Term
    source: Any = field(default=None, compare=False, hash=False)

    @property
    def terms(self) -> tuple[Term, Term, Term]:
        return (self.e, self.a, self.v)

    @property
    def variables(self) -> tuple[Variable, ...]:
        """The distinct variables, in position order."""
        return variables_of(self.terms)


@dataclass(frozen=True, slots=True)
class Predicate:
    """``[(fn arg*)]``: keeps the bindings for which the built-in ``fn`` is truthy."""

    fn: str
    args: tuple[Term, ...]
    source: Any = field(default=None, compare=False, hash=False)

    @property
    def variables(self) -> tuple[Variable, ...]:
        return variables_of(self.args)


@dataclass(frozen=True, slots=True)
class BindScalar:
    """``?x``: the function's value."""

    var: Variable | Blank


@dataclass(frozen=True, slots=True)
class BindTuple:
    """``[?a ?b]``: the elements of the returned sequence, by position.  An element may be
    a nested binding form, ``[?a [?b ...]]`` (Datascript's grammar)."""

    vars: tuple[Target, ...]


@dataclass(frozen=True, slots=True)
class BindColl:
    """``[?x ...]``: one binding per element of the returned collection; the element may
    be a nested form, ``[[?k ?v] ...]``."""

    var: Target


@dataclass(frozen=True, slots=True)
class BindRel:
    """``[[?a ?b]]``: one binding per tuple of the returned relation (a collection of
    tuples: ``[[?a ?b]]`` means ``[[?a ?b] ...]``)."""

    vars: tuple[Target, ...]


Binding = BindScalar | BindTuple | BindColl | BindRel
Target = Variable | Blank | BindTuple | BindColl | BindRel  # one position of a binding form


def binding_terms(binding: Binding) -> tuple[Variable | Blank, ...]:
    """The variables and blanks a binding form fills, nested forms flattened in order."""
    targets = (binding.var,) if isinstance(binding, BindScalar | BindColl) else binding.vars
    return tuple(leaf for t in targets
                 for leaf in ((t,) if isinstance(t, Variable | Blank) else binding_terms(t)))


def is_flat_binding(binding: Binding) -> bool:
    """No nested binding form: every position is a variable or ``_``."""
    return all(isinstance(t, Variable | Blank) for t in _targets(binding))


def _targets(binding: Binding) -> tuple[Target, ...]:
    return (binding.var,) if isinstance(binding, BindScalar | BindColl) else binding.vars


def flat_bindings(clause: FnBinding, fresh: Iterator[int]) -> tuple[FnBinding, ...]:
    """``clause`` with nested binding forms taken apart: each nested position binds a fresh
    variable, destructured by an ``identity`` call — ``[(f) [[?k ?v] ...]]`` is
    ``[(f) [?#b1 ...]] [(identity ?#b1) [?k ?v]]`` — so executors see flat forms only."""
    if is_flat_binding(clause.binding):
        return (clause,)
    nested: list[FnBinding] = []

    def flat(target: Target) -> Variable | Blank:
        if isinstance(target, Variable | Blank):
            return target
        temporary = Variable(f"?#b{next(fresh)}")
        nested.append(FnBinding("identity", (temporary,), target, source=clause.source))
        return temporary

    binding = clause.binding
    top: Binding
    if isinstance(binding, BindColl):
        top = BindColl(flat(binding.var))
    else:
        assert isinstance(binding, BindTuple | BindRel)  # a scalar form is flat
        top = type(binding)(tuple(flat(t) for t in binding.vars))
    return (replace(clause, binding=top),
            *(part for inner in nested for part in flat_bindings(inner, fresh)))


@dataclass(frozen=True, slots=True)
class FnBinding:
    """``[(fn arg*) binding]``: binds the built-in function's result."""

    fn: str
    args: tuple[Term, ...]
    binding: Binding
    source: Any = field(default=None, compare=False, hash=False)

    @property
    def inputs(self) -> tuple[Variable, ...]:
        return variables_of(self.args)

    @property
    def outputs(self) -> tuple[Variable, ...]:
        return variables_of(binding_terms(self.binding))

    @property
    def variables(self) -> tuple[Variable, ...]:
        return tuple(dict.fromkeys(self.inputs + self.outputs))


@dataclass(frozen=True, slots=True)
class RuleCall:
    """``(name arg*)``: the rule's relation, unified with ``args``.  ``required``: the
    positions the rule's head requires bound (``[[?p] ...]``), known once the rules are."""

    name: str
    args: tuple[Term, ...]
    source: Any = field(default=None, compare=False, hash=False)
    required: tuple[int, ...] = ()

    @property
    def variables(self) -> tuple[Variable, ...]:
        return variables_of(self.args)

    @property
    def inputs(self) -> tuple[Variable, ...]:
        """The variables the call must find bound: its arguments at required positions."""
        return variables_of(tuple(self.args[i] for i in self.required))


@dataclass(frozen=True, slots=True)
class Not:
    """``(not clause+)`` (``join`` None: every variable unifies with the enclosing clauses)
    or ``(not-join [?x ...] clause+)``."""

    join: tuple[Variable, ...] | None
    clauses: tuple[Clause, ...]
    source: Any = field(default=None, compare=False, hash=False)

    @property
    def variables(self) -> tuple[Variable, ...]:
        """The variables shared with the enclosing clauses."""
        return self.join if self.join is not None else clause_variables(self.clauses)


@dataclass(frozen=True, slots=True)
class Or:
    """``(or branch+)`` or ``(or-join [?x ...] branch+)``; a branch is one clause or an
    ``(and clause+)``, kept here as a tuple of clauses."""

    join: tuple[Variable, ...] | None
    branches: tuple[tuple[Clause, ...], ...]
    source: Any = field(default=None, compare=False, hash=False)
    required: tuple[Variable, ...] = ()  # or-join [[?req] ?opt]: bound around the or

    @property
    def variables(self) -> tuple[Variable, ...]:
        """The variables shared with the enclosing clauses: for ``or``, those of every
        branch (a branch may leave out a variable bound outside the ``or``)."""
        if self.join is not None:
            return self.join
        return clause_variables(tuple(c for branch in self.branches for c in branch))


Clause = Pattern | Predicate | FnBinding | RuleCall | Not | Or


def clause_variables(clauses: tuple[Clause, ...]) -> tuple[Variable, ...]:
    """Every variable the clauses share with their scope, in order of appearance."""
    return tuple(dict.fromkeys(v for c in clauses for v in c.variables))


def walk(clauses: tuple[Clause, ...]) -> Iterator[Clause]:
    """Every clause, nested ones (inside ``not``/``or``) included, depth first."""
    for clause in clauses:
        yield clause
        if isinstance(clause, Not):
            yield from walk(clause.clauses)
        elif isinstance(clause, Or):
            for branch in clause.branches:
                yield from walk(branch)


@dataclass(frozen=True, slots=True)
class Rule:
    """One definition ``[(name ?param*) clause+]``; a rule may have several.  ``required``:
    the positions of the params every call must bind — as parsed, the leading ones written
    ``[?p ...]``; once checked, also those the body cannot bind by itself."""

    name: str
    params: tuple[Variable, ...]
    body: tuple[Clause, ...]
    source: Any = field(default=None, compare=False, hash=False)
    required: tuple[int, ...] = ()


AGGREGATES = ("count", "count-distinct", "sum", "min", "max", "avg", "median", "variance",
              "stddev", "distinct")
# (min n ?x), (max n ?x): the n least/greatest values of the bag, as a vector.
AGGREGATES_OF_N = ("min", "max")


@dataclass(frozen=True, slots=True)
class Aggregate:
    """``(fn ?x)`` or ``(fn n ?x)`` in ``:find``: one value per group of the other find
    variables.  ``n`` is a constant, or an ``:in`` variable until the inputs are bound."""

    fn: str
    var: Variable
    source: Any = field(default=None, compare=False, hash=False)
    n: Variable | Constant | None = None

    @property
    def name(self) -> str:
        n = "" if self.n is None else f"{self.n if isinstance(self.n, Variable) else self.n.value} "
        return f"({self.fn} {n}{self.var})"


# The pull pattern, as data (parsed by workers.datalog.pull, read by workers.pull).
DEFAULT_LIMIT = 1000  # values of a cardinality-many attribute, as Datomic and Datascript


@dataclass(frozen=True, slots=True)
class AttrSpec:
    """One attribute of a pattern: forward (``:friend``) or reverse (``:_friend``), under
    ``key`` in the pulled map; ``pattern`` pulls referenced entities (None: as values, or
    ``{:db/id n}`` for a declared ref); ``limit`` bounds a collection (None: unbounded);
    ``default`` stands in when the attribute is missing (``has_default``).  A recursive spec
    (``{:friend ...}``, ``{:friend 2}``: ``recursive``) pulls referenced entities with the
    pattern it is part of, at most ``recursion`` times along a path (None: until an entity
    comes round again)."""

    attribute: Keyword
    reverse: bool
    key: Any
    limit: int | None = DEFAULT_LIMIT
    has_default: bool = False
    default: Any = None
    pattern: PullPattern | None = None
    recursive: bool = False
    recursion: int | None = None


@dataclass(frozen=True, slots=True)
class PullPattern:
    """``[attr-spec+]``: ``wildcard`` pulls every forward attribute (and ``:db/id``);
    ``attrs`` are the explicit specs, which take precedence over the wildcard for their
    attribute."""

    wildcard: bool
    attrs: tuple[AttrSpec, ...]


@dataclass(frozen=True, slots=True)
class Pull:
    """``(pull ?e pattern)`` in ``:find``: the entity ``var`` as the map ``pattern`` pulls
    (:mod:`workers.datalog.pull`); a Variable until the ``:in`` value naming it is bound."""

    var: Variable
    pattern: PullPattern | Variable
    source: Any = field(default=None, compare=False, hash=False)


FindElement = Variable | Aggregate | Pull
# find-rel ?a ?b | find-coll [?a ...] | find-tuple [?a ?b] | find-scalar ?a .  (Datomic)
FindSpec = Literal["relation", "collection", "tuple", "scalar"]


@dataclass(frozen=True, slots=True)
class InScalar:
    var: Variable


@dataclass(frozen=True, slots=True)
class InTuple:
    vars: tuple[Target, ...]


@dataclass(frozen=True, slots=True)
class InColl:
    var: Target


@dataclass(frozen=True, slots=True)
class InRel:
    vars: tuple[Target, ...]


@dataclass(frozen=True, slots=True)
class InRules:
    """``%``: the rule set is passed as an input."""


@dataclass(frozen=True, slots=True)
class InSource:
    """``$name`` other than ``$``: a collection of tuples, matched by the data patterns
    prefixed with its name (:mod:`workers.datalog.sources`)."""

    name: str


InBinding = InScalar | InTuple | InColl | InRel | InRules | InSource


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query.  After :func:`~workers.datalog.check.bind_inputs`, ``inputs`` is
    empty: scalars became constants, collections ``ground`` clauses, rules ``rules``."""

    find: tuple[FindElement, ...]
    where: tuple[Clause, ...]
    inputs: tuple[InBinding, ...] = ()
    with_: tuple[Variable, ...] = ()
    rules: tuple[Rule, ...] = ()
    keys: tuple[str, tuple[str, ...]] | None = None  # (":keys" | ":strs" | ":syms", names)
    source: Any = field(default=None, compare=False, hash=False)
    find_spec: FindSpec = "relation"  # the shape of a one-shot result (Engine.query)

    @property
    def variables(self) -> tuple[Variable, ...]:
        """Every distinct variable of the ``:where`` clause, in order of appearance."""
        return clause_variables(self.where)

    @property
    def find_variables(self) -> tuple[Variable, ...]:
        """The variables ``:find`` returns or aggregates, in order."""
        return tuple(e.var if isinstance(e, Aggregate | Pull) else e for e in self.find)

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        return tuple(e for e in self.find if isinstance(e, Aggregate))

    @property
    def pulls(self) -> tuple[Pull, ...]:
        return tuple(e for e in self.find if isinstance(e, Pull))

    @property
    def basis(self) -> tuple[Variable, ...]:
        """The columns of the set the result is built from: find variables, then ``:with``."""
        return tuple(dict.fromkeys(self.find_variables + self.with_))

    @property
    def is_flat(self) -> bool:
        """Data patterns only: planned by delta terms, stateless, on every executor.  Any
        other clause makes the query a program of derived relations."""
        return all(isinstance(c, Pattern) for c in self.where)


def renamed(clause: Clause, renames: dict[Variable, Variable]) -> Clause:
    """``clause`` with variables replaced by ``renames`` (nested clauses included)."""
    def term(t: Any) -> Any:
        return renames.get(t, t) if isinstance(t, Variable) else t

    def terms(ts: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(term(t) for t in ts)

    def clauses(cs: tuple[Clause, ...]) -> tuple[Clause, ...]:
        return tuple(renamed(c, renames) for c in cs)

    if isinstance(clause, Pattern):
        return Pattern(term(clause.e), term(clause.a), term(clause.v), source=clause.source)
    if isinstance(clause, Predicate | RuleCall):
        return replace(clause, args=terms(clause.args))
    if isinstance(clause, FnBinding):
        return replace(clause, args=terms(clause.args),
                       binding=_renamed_binding(clause.binding, renames))
    join = None if clause.join is None else terms(clause.join)
    if isinstance(clause, Not):
        return replace(clause, join=join, clauses=clauses(clause.clauses))
    return replace(clause, join=join, branches=tuple(clauses(b) for b in clause.branches),
                   required=terms(clause.required))


def _renamed_binding(binding: Any, renames: dict[Variable, Variable]) -> Any:
    """A binding form (or one of its positions) with variables replaced, nested ones too."""
    if isinstance(binding, Variable):
        return renames.get(binding, binding)
    if isinstance(binding, Blank):
        return binding
    if isinstance(binding, BindScalar | BindColl):
        return type(binding)(_renamed_binding(binding.var, renames))
    return type(binding)(tuple(_renamed_binding(t, renames) for t in binding.vars))
