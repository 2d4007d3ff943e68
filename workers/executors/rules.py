"""Derived relations kept up to date by DRed (delete and rederive), stratum by stratum.

Why DRed and not counting or DBSP's nested fixpoint: derivation counts are infinite on
cyclic recursive data (a path around a cycle), and the nested fixpoint keeps a trace per
iteration (memory grows with the recursion depth times the relation).  DRed keeps one set
per derived relation and does work proportional to the derivations that touch the change.
Each stratum, after the ones it reads (whose ``change`` is final, so their ``old`` is the
state and their ``new`` the state plus the change):

1. **over-delete**: every head derivable in the *old* state through a removed tuple (a
   removed datom or lower tuple, or a tuple that *entered* a negated relation) is marked,
   transitively through the stratum's own relations — in a recursive stratum, unless it
   is *still supported*: one derivation in the new state whose premises in the stratum are
   unmarked and of a lower *level* (below); a supported head is kept and nothing is marked
   through it;
2. **rederive**: a marked head still derivable in the *new* state (a derivation the
   support check saw whose premises are still unmarked, or else its support program,
   seeded by the head, finds one) is put back — asked only of heads the check saw a
   derivation of through unmarked premises (one through a marked tuple that comes back is
   found by step 3, from that tuple);
3. **insert**: heads derivable in the new state through an added tuple (or one that left a
   negated relation), then semi-naively through the stratum's own new tuples.

**Levels** make the one-step check exact on cyclic data.  Every tuple of a recursive
stratum carries a level, with the invariant: *it has a derivation whose premises in the
stratum are present and of lower levels* (so, by induction on the level, a well-founded
derivation tree).  A tuple added in a batch (bootstrap round, rederive, insert round) gets
a level above every level given before — it was derived from tuples present before the
batch; a kept tuple was just shown a lower-level derivation; an untouched tuple keeps its
derivation, because marking a premise, or removing a lower tuple, makes every head derived
from it a candidate again.  So a kept tuple is in the new result, circular support (two
tuples proving each other) never keeps anything — one of the two has the higher level —
and every tuple that really leaves is marked.  What is marked but still derivable comes
back in step 2, as in plain DRed.  Since a head's level rests on premises below it, a lost
derivation (through a removed or a marked tuple) makes its head a candidate only if all its
premises in the stratum are below the head.

The tick's change of the query is the root relation's change; then every relation's change
is folded into its state.  Only the shared datoms are read through ``old``/``delta``; the
derived relations belong to the query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from operator import itemgetter

from workers.arrangements import IndexOrder, MemoryArrangement
from workers.arrangements.relation import RelationArrangement
from workers.arrangements.values import Numbering
from workers.executors.extenders import Relations
from workers.executors.joins import Joins
from workers.executors.levels import Levels
from workers.executors.work import Work
from workers.plan.ir import (
    DATOMS,
    Absent,
    ExtenderSpec,
    JoinProgram,
    Level,
    Role,
    RulePlan,
    RulesPlan,
    SeededProgram,
    Step,
    StepKind,
)
from workers.zset import ZSet
from workers.zset.row import Row

Heads = dict[str, set[Row]]
# a derivation's premises in the stratum, each with its relation's marked tuples
Proof = list[tuple[set[Row], Row]]
Proofs = dict[str, dict[Row, Proof]]


@dataclass(frozen=True, slots=True)
class DerivedRelation:
    name: str
    rules: tuple[RulePlan, ...]
    state: RelationArrangement
    change: RelationArrangement
    levels: Levels | None  # each tuple's level, in a recursive stratum (module doc)

    def present(self, row: Row) -> bool:
        return self.state.weight(row) + self.change.weight(row) > 0


@dataclass(frozen=True, slots=True)
class DerivedStratum:
    relations: tuple[DerivedRelation, ...]
    recursive: bool


MakeJoins = Callable[[Relations], Joins]
# a rule's literals in its own stratum: each one's relation and how its tuple is read
Premises = tuple[tuple[DerivedRelation, tuple[Step, ...]], ...]


class PreparedRules:
    """A rules plan with the query's own relations; ``make_joins`` says where the join
    programs run (:class:`~workers.executors.joins.LocalJoins` or Spark's)."""

    def __init__(self, plan: RulesPlan, ids: Numbering, delta: MemoryArrangement,
                 make_joins: MakeJoins) -> None:
        self.plan = plan
        self._delta = delta
        # each literal's unification steps with its constants as value ids (rows are ids)
        self._unify = {id(seeded): tuple(Step(s.kind, ids.intern(s.arg))
                                         if s.kind is StepKind.CONST else s
                                         for s in seeded.unify)
                       for stratum in plan.strata for r in stratum.relations
                       for rule in r.rules for seeded in rule.seeded}
        stores = {r.name: (RelationArrangement(), RelationArrangement())
                  for stratum in plan.strata for r in stratum.relations}
        self.joins = make_joins(stores)
        self.strata = tuple(
            DerivedStratum(tuple(DerivedRelation(r.name, r.rules, *stores[r.name],
                                                 Levels(r.arity) if stratum.recursive else None)
                                 for r in stratum.relations), stratum.recursive)
            for stratum in plan.strata)
        self._relations = {r.name: r for s in self.strata for r in s.relations}
        self.root = self._relations[plan.root]
        # each rule's literals in its own stratum: the relation, and how its tuple is read
        # from a witness row (constants as value ids); none for a rule without a witness
        self._premises: dict[int, Premises] = {
            id(rule): tuple((self._relations[p.relation],
                             tuple(Step(s.kind, ids.intern(s.arg))
                                   if s.kind is StepKind.CONST else s for s in p.steps))
                            for p in rule.premises)
            for stratum in plan.strata for r in stratum.relations for rule in r.rules}
        # each seeded program of a recursive stratum's rule with a witness, run with its
        # whole row kept, to read the premises a head is derived through (their levels)
        self._traced = {id(program): traced for stratum in plan.strata if stratum.recursive
                        for r in stratum.relations for rule in r.rules
                        if rule.witness is not None
                        for seeded in rule.seeded for program in (seeded.old, seeded.new)
                        if (traced := _traced(program, rule.witness,
                                              self._premises[id(rule)])) is not None}
        # the relations each recursive literal's ``new`` program reads in the new state
        self._reads_new = {id(seeded.new): _reads_new(seeded.new)
                           for stratum in plan.strata if stratum.recursive
                           for r in stratum.relations for rule in r.rules
                           for seeded in rule.seeded if seeded.recursive}
        self._level = 0  # the last level given

    # -- the two entry points ------------------------------------------------------------

    def step(self, work: Work) -> ZSet[Row]:
        """The tick's change of the query's relation (the shared datoms' delta is read
        through the plan's ``delta`` arrangement)."""
        for stratum in self.strata:
            self._maintain(stratum, work)
        changes = dict(self.root.change.rows)
        self._commit()
        return changes

    def evaluate(self, work: Work) -> ZSet[Row]:
        """Recompute every derived relation from the current datoms."""
        for relation in self._relations.values():
            relation.state.reset()
            relation.change.reset()
            if relation.levels is not None:
                relation.levels.clear()
        for stratum in self.strata:
            found: Heads = {r.name: set() for r in stratum.relations}
            for relation in stratum.relations:
                for rule in relation.rules:
                    self._add(relation, self.joins.run(rule.full, {(): 1}, work), found)
            self._insert_recursively(stratum, found, work)
        self._commit()
        self._index_for_support_checks(work)
        return dict(self.root.state.rows)

    def _index_for_support_checks(self, work: Work) -> None:
        """Build the indexes the deletes' support checks read now, at registration: built
        by the first delete, they cost it a pass over the relation (~0.25 s for 256k
        pairs, the power-law closure).  A run over no rows compiles the program."""
        if self.joins.per_fact:
            for stratum in self.strata:
                for relation in stratum.relations if stratum.recursive else ():
                    for rule in relation.rules:
                        for program in (rule.witness, rule.support):
                            if program is not None:
                                self.joins.run(program, {}, work)

    # -- DRed ------------------------------------------------------------------------------

    def _maintain(self, stratum: DerivedStratum, work: Work) -> None:
        doomed, underivable, proofs = self._over_delete(stratum, work)
        for relation in stratum.relations:
            relation.change.update((row, -1) for row in doomed[relation.name])
        found: Heads = {r.name: set() for r in stratum.relations}
        checked = stratum.recursive and self.joins.per_fact
        for relation in stratum.relations:  # rederive
            left = doomed[relation.name] - underivable[relation.name]
            back = _still_proven(left, proofs[relation.name])
            if back:
                self._put(relation, back)
                found[relation.name] |= back
                left = left - back
            for rule in relation.rules:
                # the support check asked a rule reading only lower relations (final for
                # the tick) about every marked head, in vain: it would answer the same
                if left and not (checked and _reads_lower_only(rule)):
                    back = self.joins.derivable(rule.support, left, work)
                    self._put(relation, back)
                    found[relation.name] |= back
                    left = left - back
        for relation in stratum.relations:  # insert through the lower changes
            for rule in relation.rules:
                for seeded in rule.seeded:
                    if not seeded.recursive:
                        tuples = self._changed(seeded, removed=False)
                        self._add(relation, self._derive(seeded, seeded.new, tuples, work),
                                  found)
        self._insert_recursively(stratum, found, work)

    def _over_delete(self, stratum: DerivedStratum,
                     work: Work) -> tuple[Heads, Heads, Proofs]:
        """The marked heads; those of them the support check found no derivation of in the
        new state but through marked tuples (or none at all): the rederive step, which
        reads a part of what the check read (the new state less the marked heads, plus what
        it puts back — all present when the check ran), can find one only through a marked
        tuple it puts back, and the insert step derives the head from that tuple anyway,
        so it skips them (a head really deleted was searched twice, failing: the whole
        intersection each time); and for others, a derivation the check saw with its
        premises unmarked (not all below the head): one the rederive step needs not search
        for if none of them was marked later."""
        doomed: Heads = {r.name: set() for r in stratum.relations}
        frontier: Heads = {r.name: set() for r in stratum.relations}
        underivable: Heads = {r.name: set() for r in stratum.relations}
        proofs: Proofs = {r.name: {} for r in stratum.relations}
        for relation in stratum.relations:
            for rule in relation.rules:
                for seeded in rule.seeded:
                    if not seeded.recursive:
                        tuples = self._changed(seeded, removed=True)
                        self._doom(stratum, relation,
                                   self._candidates(seeded, seeded.old, relation, tuples,
                                                    work),
                                   doomed, frontier, underivable, proofs, work)
        grown = self._grown() if stratum.recursive and any(frontier.values()) else set()
        while stratum.recursive and any(frontier.values()):
            current, frontier = frontier, {r.name: set() for r in stratum.relations}
            for relation, seeded in self._recursive_seeds(stratum):
                marked = [(row, 1) for row in current[seeded.relation]]
                heads = self._candidates(seeded, seeded.old, relation, marked, work)
                # a head kept may rest on a marked tuple through a datom added this tick,
                # which the old state does not lead to; with none added to what the
                # literal's new program reads, it derives a part of what the old one did
                if self.joins.per_fact and self._reads_new[id(seeded.new)] & grown:
                    heads += self._candidates(seeded, seeded.new, relation, marked, work)
                self._doom(stratum, relation, heads, doomed, frontier, underivable, proofs,
                           work)
        return doomed, underivable, proofs

    def _grown(self) -> set[tuple[str, bool]]:
        """The relations whose new state holds a tuple the old one does not (``False``) or
        lacks one it holds (``True``: grown for a negation of it) — the datoms and the
        derived relations' changes (a stratum's own are empty while it over-deletes)."""
        grown = set()
        changes: list[tuple[str, Iterable[tuple[Row, int]]]] = [(DATOMS, self._delta.datoms())]
        changes += [(r.name, r.change.rows.items()) for r in self._relations.values()]
        for name, rows in changes:
            signs = {weight < 0 for _, weight in rows}
            grown |= {(name, negative) for negative in signs}
        return grown

    def _candidates(self, seeded: SeededProgram, program: JoinProgram,
                    relation: DerivedRelation, tuples: Iterable[tuple[Row, int]],
                    work: Work) -> list[Row]:
        """The heads in the state that ``program`` (the literal's old or new program)
        derives from the removed or marked ``tuples`` (with a level: present), each only
        if one of those derivations has all its
        premises in the stratum below the head's level: a derivation through a premise not
        below its head is not one the head's level rests on (module doc), so losing the
        tuple takes nothing from it — what would, removes or marks a premise of that lower
        derivation, whose own round reaches the head.

        The argument holds through the new state too: the derivation a head's level rests on
        is either its old one (an untouched head) or the one the support check accepted
        this tick (a kept head, whose level stays), and that check accepts only premises
        of levels below the head's (:meth:`_sound_witness`) — so whichever state the
        derivation is in, its premises are below the head.  A rule with no premise to read
        (no witness) makes every head it derives a candidate."""
        traced = self._traced.get(id(program))
        if traced is None:
            return [head for head in self._derive(seeded, program, tuples, work)
                    if relation.state.weight(head)]
        levels = relation.levels
        assert levels is not None
        rows = self._derive(seeded, traced.program, tuples, work)
        heads = list(map(traced.head, rows))
        # column by column (``map`` runs in C): a hub delete lists thousands of rows
        bounds = list(map(levels.get, heads))  # None: the head is not present
        for premise, read in traced.premises:
            # a premise without a level (none is: it is present) counts as below (levels
            # start at 1)
            bounds = [None if bound is None or (level or 0) >= bound else bound
                      for bound, level in zip(bounds, map(premise.get, map(read, rows)),
                                              strict=True)]
        return [head for head, bound in zip(heads, bounds, strict=True) if bound is not None]

    def _insert_recursively(self, stratum: DerivedStratum, found: Heads, work: Work) -> None:
        """Semi-naive: derive from the stratum's newest tuples until nothing is new."""
        while stratum.recursive and any(found.values()):
            current, found = found, {r.name: set() for r in stratum.relations}
            for relation, seeded in self._recursive_seeds(stratum):
                tuples = ((row, 1) for row in current[seeded.relation])
                self._add(relation, self._derive(seeded, seeded.new, tuples, work), found)

    @staticmethod
    def _recursive_seeds(stratum: DerivedStratum) -> Iterator[tuple[DerivedRelation,
                                                                     SeededProgram]]:
        for relation in stratum.relations:
            for rule in relation.rules:
                for seeded in rule.seeded:
                    if seeded.recursive:
                        yield relation, seeded

    def _doom(self, stratum: DerivedStratum, relation: DerivedRelation, heads: Iterable[Row],
              doomed: Heads, frontier: Heads, underivable: Heads, proofs: Proofs,
              work: Work) -> None:
        marked = doomed[relation.name]
        candidates = {row for row in heads if row not in marked}
        if stratum.recursive and self.joins.per_fact:
            supported, seen = self._supported(relation, candidates, doomed, work)
            candidates -= supported
            underivable[relation.name] |= candidates - seen.keys()
            proofs[relation.name].update((head, proof) for head, proof in seen.items()
                                         if proof is not None and head in candidates)
        marked |= candidates
        frontier[relation.name] |= candidates

    def _supported(self, relation: DerivedRelation, rows: set[Row], doomed: Heads,
                   work: Work) -> tuple[set[Row], dict[Row, Proof | None]]:
        """Those of ``rows`` with a derivation in the new state whose premises in the
        stratum are unmarked and of lower levels (a rule reading only lower relations,
        whose tuples are final for the tick, needs no premise) — one join per rule for the
        whole frontier, stopping at each row's first such derivation; and those the check
        saw a derivation of through unmarked premises, or could not tell (a rule without a
        witness), each with the premises of one it saw unmarked (or None).

        The rules with a witness are asked first: a head derived by a rule reading only
        lower relations sits at the lowest level, so it is a candidate only when that
        derivation is lost — asking that rule first checks every candidate in vain (a hub
        delete's hundreds), asking it last only those no witness supports."""
        assert relation.levels is not None
        levels = relation.levels
        supported: set[Row] = set()
        seen: dict[Row, Proof | None] = {}
        for rule in sorted(relation.rules, key=lambda rule: rule.witness is None):
            left = rows - supported
            if not left:
                break
            if rule.witness is None:
                if _reads_lower_only(rule):
                    supported |= self.joins.derivable(rule.support, left, work)
                else:
                    seen.update(dict.fromkeys(left - seen.keys()))
                continue
            sound = self._sound_witness(rule, levels, doomed, seen)
            supported |= self.joins.witnessed(rule.witness, left, sound, work)
        seen.update(dict.fromkeys(supported - seen.keys()))
        return supported, seen

    def _sound_witness(self, rule: RulePlan, levels: Levels, doomed: Heads,
                       seen: dict[Row, Proof | None]) -> Callable[[Row], bool]:
        """The test of a row of ``rule``'s witness program (the head, then the premises'
        variables): every premise in the stratum unmarked and of a level below the head's.
        A head it rejects a row of for a level alone (every premise unmarked) is put in
        ``seen`` with that row's premises (the first such row)."""
        assert rule.witness is not None
        width = len(rule.witness.seed_vars)
        # each premise's levels, its marked tuples, and how its tuple is read from the row
        premises = []
        for premise, steps in self._premises[id(rule)]:
            assert premise.levels is not None
            premises.append((premise.levels, doomed[premise.name], _reader(steps)))

        # the last head asked about and its level: a check asks about one head for each
        # row it tries (~4 on the power-law closure's hub deletes), and a lookup in a big
        # relation's levels is a cache miss, comparing with the last head is not
        last_head: Row = ()
        below = 0

        def sound(witness: Row) -> bool:
            nonlocal last_head, below
            head = witness[:width]
            if head != last_head:
                last_head, below = head, levels[head]
            lower = True
            for premise_levels, marked, read in premises:
                premise = read(witness)
                if premise in marked:
                    return False
                lower = lower and premise_levels[premise] < below
            if not lower and seen.get(head) is None:
                seen[head] = [(marked, read(witness)) for _, marked, read in premises]
            return lower
        return sound

    def _add(self, relation: DerivedRelation, heads: Iterable[Row], found: Heads) -> None:
        new = [row for row in heads if not relation.present(row)]
        self._put(relation, new)
        found[relation.name].update(new)

    def _put(self, relation: DerivedRelation, rows: Iterable[Row]) -> None:
        """Add ``rows`` (absent, derived from the tuples present before this call): one
        level above every level given so far."""
        rows = list(rows)
        relation.change.update((row, 1) for row in rows)
        if relation.levels is not None:
            self._level += 1
            relation.levels.assign(rows, self._level)

    def _changed(self, spec: SeededProgram, removed: bool) -> Iterator[tuple[Row, int]]:
        """The tuples of the literal's relation that left (``removed``) or entered it this
        tick — for a negation, the other way round."""
        sign = -1 if removed != spec.negated else 1
        for row, weight in self._tuples(spec):
            if (weight > 0) == (sign > 0):
                yield row, 1

    def _tuples(self, spec: SeededProgram) -> Iterable[tuple[Row, int]]:
        if spec.relation != DATOMS:
            return self._relations[spec.relation].change
        attribute = self._unify[id(spec)][1]
        if attribute.kind is StepKind.CONST:  # only the datoms of that attribute
            by_entity = self._delta.index(IndexOrder.AEV).get(attribute.arg, {})
            return [((e, attribute.arg, v), w) for e, values in by_entity.items()
                    for v, w in values.items()]
        return list(self._delta.datoms())

    def _derive(self, seeded: SeededProgram, program: JoinProgram,
                tuples: Iterable[tuple[Row, int]], work: Work) -> list[Row]:
        """The heads ``program`` derives from the literal's tuples."""
        steps = self._unify[id(seeded)]
        width = sum(s.kind is StepKind.BIND for s in steps)
        if width == len(steps) and all(s.arg == i for i, s in enumerate(steps)):
            # every column bound, in order (a recursive literal's): each tuple is its row
            rows = dict.fromkeys((values for values, _ in tuples), 1)
        else:
            rows = {}
            for values, _ in tuples:
                row = _unify(steps, values, width)
                if row is not None:
                    rows[row] = 1
        if not rows:
            return []
        return [head for head, weight in self.joins.run(program, rows, work).items()
                if weight > 0]

    def _commit(self) -> None:
        for relation in self._relations.values():
            for row, weight in relation.change.rows.items():
                if relation.levels is not None and weight < 0 and not relation.present(row):
                    relation.levels.discard(row)
            relation.state.update(relation.change.rows)
            relation.change.reset()


def _reads_new(program: JoinProgram) -> frozenset[tuple[str, bool]]:
    """The relations ``program`` reads in the new state, each with whether it is negated
    (:meth:`PreparedRules._grown`'s pairs)."""
    specs = [(spec, False) for spec in (program.seed, *program.checks) if spec is not None]
    for op in program.levels:
        if isinstance(op, Level):
            specs += [(spec, False) for spec in op.extenders]
        elif isinstance(op, ExtenderSpec):
            specs.append((op, False))
        elif isinstance(op, Absent):
            specs.append((op.spec, True))
    return frozenset((spec.relation, negated) for spec, negated in specs
                     if spec.role is Role.NEW)


def _reads_lower_only(rule: RulePlan) -> bool:
    """Whether ``rule`` reads no relation of its own stratum."""
    return not any(s.recursive for s in rule.seeded)


def _still_proven(heads: set[Row], proofs: dict[Row, Proof]) -> set[Row]:
    """Those of the marked ``heads`` with a derivation the support check saw in the new
    state whose premises are still unmarked: derivable now, without a search."""
    return {head for head in heads if (proof := proofs.get(head)) is not None
            and not any(premise in marked for marked, premise in proof)}


Read = Callable[[Row], Row]


@dataclass(frozen=True, slots=True)
class Traced:
    """A seeded program run with its whole row kept (``program``), and how the head and
    each premise in the stratum (its relation's levels) are read from the row."""

    program: JoinProgram
    head: Read
    premises: tuple[tuple[Levels, Read], ...]


def _traced(program: JoinProgram, witness: JoinProgram, premises: Premises) -> Traced | None:
    """``program`` traced: the premises' steps moved from the witness row's columns to the
    same variables' columns in ``program``'s row (None if one is not there)."""
    layout = program.layout
    names = [witness.layout[i] for i in witness.output]  # the witness row's variables
    if not {names[s.arg] for _, steps in premises for s in steps
            if s.kind is StepKind.BOUND} <= set(layout):
        return None
    read = []
    for relation, steps in premises:
        assert relation.levels is not None
        moved = tuple(Step(StepKind.BOUND, layout.index(names[s.arg]))
                      if s.kind is StepKind.BOUND else s for s in steps)
        read.append((relation.levels, _reader(moved)))
    return Traced(replace(program, output=tuple(range(len(layout)))),
                  _reader(tuple(Step(StepKind.BOUND, i) for i in program.output)), tuple(read))


def _reader(steps: tuple[Step, ...]) -> Read:
    """:func:`_build` for ``steps`` as one function, an ``itemgetter`` when every step
    reads a column (it is run on every derivation a delete lists)."""
    if any(s.kind is not StepKind.BOUND for s in steps):
        return lambda row: _build(steps, row)
    if len(steps) == 1:
        column = steps[0].arg
        return lambda row: (row[column],)
    return itemgetter(*(s.arg for s in steps))


def _build(steps: tuple[Step, ...], row: Row) -> Row:
    """A premise's tuple from a witness row."""
    return tuple(s.arg if s.kind is StepKind.CONST else row[s.arg] for s in steps)


def _unify(steps: tuple[Step, ...], values: Row, width: int) -> Row | None:
    row: list[object] = [None] * width
    for step, value in zip(steps, values, strict=True):
        if step.kind is StepKind.CONST:
            if value != step.arg:
                return None
        elif step.kind is StepKind.BIND:
            row[step.arg] = value
        elif step.kind is StepKind.SAME and row[step.arg] != value:
            return None
    return tuple(row)
