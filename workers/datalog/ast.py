"""The query AST: frozen dataclasses named after the grammar productions.

Every node keeps the EDN form it came from (``source``) for error messages; it does not
take part in equality, so two queries that mean the same compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
        return tuple(dict.fromkeys(t for t in self.terms if isinstance(t, Variable)))


@dataclass(frozen=True, slots=True)
class Query:
    """A conjunctive query: ``:find`` variables over ``:where`` patterns, ``:in`` scalars."""

    find: tuple[Variable, ...]
    where: tuple[Pattern, ...]
    inputs: tuple[Variable, ...] = ()
    source: Any = field(default=None, compare=False, hash=False)

    @property
    def variables(self) -> tuple[Variable, ...]:
        """Every distinct variable of the ``:where`` clause, in order of appearance."""
        return tuple(dict.fromkeys(v for p in self.where for v in p.variables))
