"""A stable text rendering of everything a QueryPlan holds (golden-tested in
``tests/data/golden/plans/``; printed by ``deltalog explain``).

First the ``:find`` (aggregates, pulls with their patterns, ``:with``, the find
specification and keys), then the body: a flat plan's patterns, full, support and delta
terms; a rules plan's strata, and for each rule its full, support (rederive), seeded (old:
over-delete, new: insert) and witness (over-delete candidates' support check, with its
premises) programs.

An extender prints as ``p1 old AEV[:g/to ?a +?c]``: pattern, role, index — of the datoms,
or a derived relation and the order of its columns (``rule:reach/10``) — then one item per
trie depth: a constant, a bound column (``?a``), a bound-here column (``+?c``), a repeat of
it (``=?c``) or a scan (``_``); ``*`` marks the extender whose weight is applied.
"""

from __future__ import annotations

from workers.arrangements.keys import IndexOrder
from workers.datalog.ast import DEFAULT_LIMIT, AttrSpec, PullPattern
from workers.edn import keyword, show
from workers.plan.ir import (
    Absent,
    BinaryTerm,
    DeltaTerm,
    ExtenderSpec,
    Filter,
    Find,
    FindColumn,
    JoinProgram,
    Level,
    Op,
    Plan,
    QueryPlan,
    RecursiveStage,
    RulePlan,
    RulesPlan,
    Step,
    StepKind,
)


def explain(plan: QueryPlan) -> str:
    body = plan.body
    lines = [*_find(plan.find, body.find), f"basis    {' '.join(body.find)}",
             f"strategy {body.strategy}"]
    lines += _flat(body) if isinstance(body, Plan) else _rules(body)
    return "\n".join(lines) + "\n"


def _find(find: Find, basis: tuple[str, ...]) -> list[str]:
    """The ``:find`` elements over the basis columns, and how the result is shaped."""
    lines = [f"find     {' '.join(_column(c, basis) for c in find.columns)}"]
    if find.with_:
        lines.append(f"with     {' '.join(find.with_)}")
    result = ("grouped by the other columns" if find.aggregated
              else "a bag: the basis projected on the find columns" if find.bag
              else "the basis set")
    lines.append(f"result   {result}")
    keys = "" if find.keys is None else f" {find.keys[0]} [{' '.join(find.keys[1])}]"
    lines.append(f"spec     {find.spec}{keys}")
    return lines


def _column(column: FindColumn, basis: tuple[str, ...]) -> str:
    var = basis[column.index]
    if column.fn is not None:
        return f"({column.fn} {'' if column.n is None else f'{column.n} '}{var})"
    if column.pull is not None:
        return f"(pull {var} {_pull_pattern(column.pull)})"
    return var


def _pull_pattern(pattern: PullPattern) -> str:
    """The pattern as Datomic's pull grammar writes it (options only where not defaults)."""
    return "[" + " ".join((["*"] if pattern.wildcard else []) +
                          [_attr_spec(spec) for spec in pattern.attrs]) + "]"


def _attr_spec(spec: AttrSpec) -> str:
    written = spec.attribute
    if spec.reverse:
        namespace, slash, name = spec.attribute.name.rpartition("/")
        written = keyword(f"{namespace}{slash}_{name}")
    options = ([] if spec.key == written else [f":as {show(spec.key)}"]) + (
        [] if spec.limit == DEFAULT_LIMIT else [f":limit {show(spec.limit)}"]) + (
        [f":default {show(spec.default)}"] if spec.has_default else [])
    text = f"[{show(written)} {' '.join(options)}]" if options else show(written)
    return text if spec.pattern is None else f"{{{text} {_pull_pattern(spec.pattern)}}}"


def _flat(plan: Plan) -> list[str]:
    """Patterns, the full and support programs, then the strategy's delta terms."""
    lines = ["patterns", *(f"  p{i} {text}" for i, text in enumerate(plan.patterns))]
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
    return lines


def _rules(plan: RulesPlan) -> list[str]:
    """Strata in evaluation order; every program of every rule."""
    lines = [f"derived relations (root {plan.root})"]
    for k, stratum in enumerate(plan.strata):
        kind = "recursive" if stratum.recursive else "non-recursive"
        lines.append(f"stratum {k} ({kind})")
        for relation in stratum.relations:
            for rule in relation.rules:
                lines += [f"  {relation.name}/{relation.arity} <- {rule.source}",
                          *_rule(rule)]
    return lines


def _rule(rule: RulePlan) -> list[str]:
    lines = ["    full", *_program(rule.full, "      "),
             "    support (rederive)", *_program(rule.support, "      ")]
    for seeded in rule.seeded:
        what = "not " if seeded.negated else ""
        own = ", in the stratum" if seeded.recursive else ""
        unify = " ".join(_step(s, (), seeded.old.seed_vars) for s in seeded.unify)
        lines.append(f"    seeded by changes of {what}{seeded.relation}[{unify}] "
                     f"(literal {seeded.literal}{own})")
        lines += ["      old (over-delete)", *_program(seeded.old, "        "),
                  "      new (insert)", *_program(seeded.new, "        ")]
    if rule.witness is not None:
        witness = rule.witness
        columns = tuple(witness.layout[i] for i in witness.output)
        premises = " ".join(f"{p.relation}[{' '.join(_step(s, columns, ()) for s in p.steps)}]"
                            for p in rule.premises)
        lines += [f"    witness (support check) -> premises {premises}",
                  *_program(witness, "      ")]
    return lines


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
    args = " ".join(_step(s, layout, ()) for s in op.args)
    if isinstance(op, Filter):
        return f"filter ({op.fn} {args})"
    return f"bind   ({op.fn} {args}) -> {op.shape} +{' +'.join(op.outputs) or '_'}"


def _extender(spec: ExtenderSpec, layout: tuple[str, ...], binds: tuple[str, ...]) -> str:
    items = " ".join(_step(step, layout, binds) for step in spec.steps)
    weight = "*" if spec.weighted else ""
    order = spec.order.name if isinstance(spec.order, IndexOrder) else \
        f"{spec.relation}/{''.join(str(i) for i in spec.order)}"
    return f"p{spec.pattern} {spec.role.value} {order}[{items}]{weight}"


def _step(step: Step, layout: tuple[str, ...], binds: tuple[str, ...]) -> str:
    """A constant, a bound column, a column bound here (``+``), a repeat of one (``=``), or
    a scan (``_``)."""
    if step.kind is StepKind.CONST:
        return show(step.arg)
    if step.kind is StepKind.BOUND:
        return layout[step.arg]
    if step.kind is StepKind.BIND:
        return "+" + binds[step.arg]
    if step.kind is StepKind.SAME:
        return "=" + binds[step.arg]
    return "_"
