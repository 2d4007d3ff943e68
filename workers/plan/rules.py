"""A lowered program → :class:`RulesPlan`: the join programs of every rule.

Each rule gets a ``full`` program (bootstrap), a ``support`` program seeded by a head tuple
(DRed's rederivation: is it still derivable?) and, for every literal whose relation can
change, a program seeded by that literal's changed tuples, in an ``old`` and a ``new``
version, and — for a rule reading its own stratum — a ``witness`` program seeded by heads
that lists each derivation's premises in the stratum (the delete's support check); see
:mod:`workers.executors.rules` for how DRed uses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workers.datalog.ast import Blank, Constant, Pattern, Query, Variable
from workers.plan.body import Atom, Literal, Negation, program, relation_of, steps
from workers.plan.ir import (
    JoinProgram,
    Premise,
    RelationPlan,
    Role,
    RulePlan,
    RulesPlan,
    SeededProgram,
    Stratum,
)
from workers.plan.lower import ROOT, DerivedRule, Program, lower
from workers.plan.order import AttributeStats, no_stats


def plan_rules(query: Query, strategy: str = "delta",
               stats: AttributeStats = no_stats) -> RulesPlan:
    """Plan a query that needs derived relations (``query.is_flat`` is false)."""
    lowered = lower(query)
    strata = tuple(_stratum(lowered, names, stats) for names in lowered.strata)
    return RulesPlan(find=tuple(v.name for v in query.basis),
                     attributes=_routing_attributes(lowered), strategy=strategy,
                     strata=strata, root=ROOT)


def _stratum(lowered: Program, names: tuple[str, ...], stats: AttributeStats) -> Stratum:
    relations = tuple(RelationPlan(name, len(lowered.relations[name][0].head),
                                   tuple(_rule(rule, set(names), stats)
                                         for rule in lowered.relations[name]))
                      for name in names)
    recursive = len(names) > 1 or any(
        isinstance(lit, Atom) and lit.relation in names
        for rule in lowered.relations[names[0]] for lit in rule.body)
    return Stratum(relations, recursive)


def _rule(rule: DerivedRule, stratum: set[str], stats: AttributeStats) -> RulePlan:
    body = rule.body
    head = tuple(t for t in rule.head if isinstance(t, Variable))
    readers = [j for j, lit in enumerate(body) if isinstance(lit, Pattern | Atom | Negation)]

    def roles(role: Role, without: int | None = None) -> dict[int, Role]:
        return {j: role for j in readers if j != without}

    seeded = []
    for j in readers:
        relation, terms = relation_of(body[j])
        seed_vars = body[j].variables
        seeded.append(SeededProgram(
            literal=j, relation=relation, unify=steps(terms, range(len(terms)), {}, seed_vars),
            negated=isinstance(body[j], Negation), recursive=relation in stratum,
            old=program(body, roles(Role.OLD, j), None, seed_vars, head, stats),
            new=program(body, roles(Role.NEW, j), None, seed_vars, head, stats)))
    witness, premises = _witness(body, head, stratum, roles(Role.NEW), stats)
    return RulePlan(source=rule.source,
                    full=program(body, roles(Role.NEW), None, (), head, stats),
                    support=program(body, roles(Role.NEW), None, head, head, stats),
                    seeded=tuple(seeded), witness=witness, premises=premises)


def _witness(body: Sequence[Literal], head: tuple[Variable, ...], stratum: set[str],
             roles: dict[int, Role], stats: AttributeStats,
             ) -> tuple[JoinProgram | None, tuple[Premise, ...]]:
    """The program listing the derivations of the heads it is seeded with, each row the
    head then its premises' other variables (so one run checks a whole frontier of the
    delete), and how each premise's tuple is read from its rows."""
    atoms = [lit for lit in body if isinstance(lit, Atom) and lit.relation in stratum]
    if not atoms or any(isinstance(t, Blank) for lit in atoms for t in lit.terms):
        return None, ()
    columns = tuple(dict.fromkeys([*head, *(v for lit in atoms for v in lit.variables)]))
    slots = {v: i for i, v in enumerate(columns)}
    premises = tuple(Premise(lit.relation, steps(lit.terms, range(len(lit.terms)), slots, ()))
                     for lit in atoms)
    return program(body, roles, None, head, columns, stats), premises


def _routing_attributes(lowered: Program) -> tuple[Any, ...] | None:
    patterns = [lit for rules in lowered.relations.values() for rule in rules
                for lit in rule.body if isinstance(lit, Pattern)]
    if any(not isinstance(p.a, Constant) for p in patterns):
        return None
    return tuple(dict.fromkeys(p.a.value for p in patterns))  # type: ignore[union-attr]


__all__ = ["Literal", "plan_rules"]
