"""A stable text rendering of a Plan (golden-tested; printed by ``deltalog explain``).

An extender prints as ``p1 old AEV[:g/to ?a +?c]``: pattern, role, index, then one item per
trie depth — a constant, a bound column (``?a``), a bound-here column (``+?c``), a repeat of
it (``=?c``) or a scan (``_``); ``*`` marks the extender whose weight is applied.
"""

from __future__ import annotations

from workers.edn import show
from workers.plan.ir import (
    BinaryTerm,
    DeltaTerm,
    ExtenderSpec,
    JoinProgram,
    Plan,
    RecursiveStage,
    StepKind,
)


def explain(plan: Plan) -> str:
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


def _program(program: JoinProgram, indent: str = "  ") -> list[str]:
    layout = program.layout
    lines = []
    if program.seed is not None:
        lines.append(f"seed   {_extender(program.seed, layout, program.seed_vars)}")
    else:
        lines.append(f"rows   [{' '.join(program.seed_vars)}]")
    lines += [f"check  {_extender(c, layout, ())}" for c in program.checks]
    for level in program.levels:
        extenders = " ∩ ".join(_extender(e, layout, (level.var,)) for e in level.extenders)
        lines.append(f"level  {level.var}: {extenders}")
    lines.append(f"output [{' '.join(layout[i] for i in program.output)}]")
    return [indent + line for line in lines]


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
    return f"p{spec.pattern} {spec.role.value} {spec.order.name}[{' '.join(items)}]{weight}"
