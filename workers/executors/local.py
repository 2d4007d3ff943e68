"""LocalExecutor: the plan IR run in-process in pure Python — the low-latency path and the
reference every other executor is compared with."""

from __future__ import annotations

from dataclasses import dataclass

from workers.arrangements import ArrangementRegistry
from workers.arrangements.delta import DeltaInput, TickDelta
from workers.executors.distinct import set_changes
from workers.executors.generic_join import CompiledProgram, compile_program, run, seed_rows
from workers.executors.joins import LocalJoins
from workers.executors.rules import PreparedRules
from workers.executors.terms import CompiledTerm, compile_term, derivation_change
from workers.executors.work import Work
from workers.plan.ir import Body, RulesPlan
from workers.zset import ZSet
from workers.zset.row import Row


@dataclass(frozen=True, slots=True)
class PreparedPlan:
    full: CompiledProgram
    support: CompiledProgram
    terms: tuple[CompiledTerm, ...]


class LocalExecutor:
    """Executes every strategy's terms with GenericJoin over the in-memory arrangements; a
    query with derived relations keeps them itself (:class:`PreparedRules`).  Its plans are
    compiled once against ``db`` and its :class:`DeltaInput`'s tries, which each step fills
    from the delta it is given."""

    name = "local"

    def __init__(self, db: ArrangementRegistry) -> None:
        self.db = db
        self.input = DeltaInput()

    def prepare(self, plan: Body) -> PreparedPlan | PreparedRules:
        db, delta = self.db, self.input.arrangement
        if isinstance(plan, RulesPlan):
            return PreparedRules(plan, db.ids, delta,
                                 lambda relations: LocalJoins(db, delta, relations))
        return PreparedPlan(compile_program(plan.full, db, delta),
                            compile_program(plan.support, db, delta),
                            tuple(compile_term(term, db, delta) for term in plan.terms))

    def step(self, prepared: PreparedPlan | PreparedRules, delta: TickDelta
             ) -> tuple[ZSet[Row], Work]:
        work = Work()
        self.input.feed(delta)
        if isinstance(prepared, PreparedRules):
            return prepared.step(work), work
        derivations = derivation_change(prepared.terms, work)
        return (set_changes(prepared.support, derivations, work) if derivations else {}), work

    def evaluate(self, prepared: PreparedPlan | PreparedRules) -> tuple[ZSet[Row], Work]:
        work = Work()
        self.input.feed(None)
        if isinstance(prepared, PreparedRules):
            return prepared.evaluate(work), work
        rows = run(prepared.full, seed_rows(prepared.full, work), work)
        return dict.fromkeys(rows, 1), work
