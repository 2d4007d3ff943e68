"""A stable text rendering of a Plan (golden-tested; printed by ``deltalog explain``).

An extender prints as ``p1 old AEV[:g/to ?a +?c]``: pattern, role, index, then one item per
trie depth — a constant, a bound column (``?a``), a bound-here column (``+?c``), a repeat of
it (``=?c``) or a scan (``_``); ``*`` marks the extender whose weight is applied.
"""

from __future__ import annotations

from workers.arrangements.keys import IndexOrder
from workers.edn import show
from workers.plan.ir import (
    Absent,
    BinaryTerm,
    DeltaTerm,
    ExtenderSpec,
    Filter,
    JoinProgram,
    Level,
    Op,
    Plan,
    RecursiveStage,
    RulesPlan,
    StepKind,
)


def explain(plan: Plan | RulesPlan) -> str:
    if isinstance(plan, RulesPlan):
        return _explain_rules(plan)
    lines = [f"find     {' '.join(plan.find)}", f"strategy {plan.strategy}", "patterns"]
    lines += [f"  p{i} {text}" for i, text in enumerate(plan.patterns)]
    lines += ["full", *_program(plan.full), "support (distinct)", *_program(plan.support)]
    for term in plan.terms:
        if isinstance(term, DeltaTerm):
            lines += [f"term Δp{term.pattern}", *_program(term.program)]
        elif isinstance(term, BinaryTerm):
            lines.append(f"term Δp{term.pattern} (binary chain)")
            for k, program in enumerate(term.chain):
                lines += [f"  join {k}", *_program(program, "    ")]
        elif isinstance(term, RecursiveStage):
            lines.append(f"stage p{term.pattern}")
            if term.extend is not None:
                lines += ["  extend Δ-so-far by new", *_program(term.extend, "    ")]
            lines += ["  seeded by Δ over old", *_program(term.seeded, "    ")]
    return "\n".join(lines) + "\n"


def _explain_rules(plan: RulesPlan) -> str:
    """Strata in evaluation order; each rule's full program and its seeded ones."""
    lines = [f"find     {' '.join(plan.find)}", f"derived relations (root {plan.root})"]
    for k, stratum in enumerate(plan.strata):
        kind = "recursive" if stratum.recursive else "non-recursive"
        lines.append(f"stratum {k} ({kind})")
        for relation in stratum.relations:
            for rule in relation.rules:
                lines += [f"  {relation.name}/{relation.arity} <- {rule.source}",
                          *_program(rule.full, "    ")]
                for seeded in rule.seeded:
                    what = "not " if seeded.negated else ""
                    lines += [f"    seeded by changes of {what}{seeded.relation} "
                              f"(literal {seeded.literal})", *_program(seeded.new, "      ")]
    return "\n".join(lines) + "\n"


def _program(program: JoinProgram, indent: str = "  ") -> list[str]:
    layout = program.layout
    lines = []
    if program.seed is not None:
        lines.append(f"seed   {_extender(program.seed, layout, program.seed_vars)}")
    else:
        lines.append(f"rows   [{' '.join(program.seed_vars)}]")
    lines += [f"check  {_extender(c, layout, ())}" for c in program.checks]
    for op in program.levels:
        lines.append(_op(op, layout))
    lines.append(f"output [{' '.join(layout[i] for i in program.output)}]")
    return [indent + line for line in lines]


def _op(op: Op, layout: tuple[str, ...]) -> str:
    if isinstance(op, Level):
        extenders = " ∩ ".join(_extender(e, layout, (op.var,)) for e in op.extenders)
        return f"level  {op.var}: {extenders}"
    if isinstance(op, ExtenderSpec):
        return f"check  {_extender(op, layout, ())}"
    if isinstance(op, Absent):
        return f"absent {_extender(op.spec, layout, ())}"
    args = " ".join(show(s.arg) if s.kind is StepKind.CONST else layout[s.arg] for s in op.args)
    if isinstance(op, Filter):
        return f"filter ({op.fn} {args})"
    return f"bind   ({op.fn} {args}) -> {op.shape} +{' +'.join(op.outputs) or '_'}"


def _extender(spec: ExtenderSpec, layout: tuple[str, ...], binds: tuple[str, ...]) -> str:
    items = []
    for step in spec.steps:
        if step.kind is StepKind.CONST:
            items.append(show(step.arg))
        elif step.kind is StepKind.BOUND:
            items.append(layout[step.arg])
        elif step.kind is StepKind.BIND:
            items.append("+" + binds[step.arg])
        elif step.kind is StepKind.SAME:
            items.append("=" + binds[step.arg])
        else:
            items.append("_")
    weight = "*" if spec.weighted else ""
    order = spec.order.name if isinstance(spec.order, IndexOrder) else \
        spec.relation + "".join(str(i) for i in spec.order)
    return f"p{spec.pattern} {spec.role.value} {order}[{' '.join(items)}]{weight}"
