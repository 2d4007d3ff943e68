"""Test helpers shipped with the package: an independent from-scratch oracle, and in-memory
fakes of the Kafka a worker reads and writes.

Nothing here shares code with the planner, the tries or the executors: queries are
evaluated by naive backtracking over a plain list of datoms (rules by bottom-up fixpoint
iteration, stratum by stratum), and transactions by a direct reading of Datomic's rules.
Incremental results are checked against these (integrating a query's changes must equal
re-running it).

Values keep their kind here too (``1``, ``1.0`` and ``true`` are three values): the oracle
compares values with its own :func:`_same` and keeps rows, datoms and bags as
:class:`~workers.zset.row.Row` (only the container: a tuple whose equality is kind-aware, so
results compare with the engine's).

The fakes (:class:`FakeKafka`, :class:`FakeTxSource`, :class:`CollectingSink`,
:class:`FakeGroup`, :class:`FakePorts`) keep the contracts of the transaction log's source,
the result sink and the workers' group (:mod:`workers.runtime.ports`), so that a
:class:`~workers.runtime.worker.Worker` ticks in a unit test: transactions and registrations
in, the committed changes, views, progress and dead letters out, a transaction lost or fenced
on request.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from random import Random
from typing import Any, Protocol

from edn_format.immutable_list import ImmutableList

from workers.datalog import Blank, Constant, Pattern, Query, Variable, compile_query
from workers.datalog.ast import (
    Aggregate,
    BindColl,
    Binding,
    BindRel,
    BindScalar,
    BindTuple,
    Clause,
    FnBinding,
    Not,
    Or,
    Predicate,
    Pull,
    Rule,
    RuleCall,
    binding_terms,
)
from workers.datalog.functions import FUNCTIONS, CallFailed, call, sort_key, truthy
from workers.edn import keyword, read
from workers.kafka.avro import AvroCodec
from workers.kafka.compacted import KeyedRecord, latest
from workers.kafka.messages import transaction_to_avro
from workers.kafka.registration import registration_record
from workers.kafka.sink import TransactionFailed
from workers.kafka.source import TxRecord
from workers.kafka.topics import Topics
from workers.kafka.views import MARKER, View
from workers.runtime.ownership import Polled
from workers.zset import ZSet, add_into
from workers.zset.row import Row, ValueSet

Datom = tuple[Any, Any, Any]
Bindings = dict[Variable, Any]
Relations = dict[str, set[Row]]

SEQUENCES = (tuple, list)
COLLECTIONS = (tuple, list, set, frozenset)


def evaluate_from_scratch(query: Any, datoms: Iterable[Datom],
                          inputs: Sequence[Any] = ()) -> ZSet[Row]:
    """The query's result ``{row: multiplicity}`` on a set of datoms, by backtracking over
    clauses: a set (every weight 1) but for ``:with`` without aggregates, a bag."""
    compiled = compile_query(query, inputs)
    datoms = list(datoms)
    demand: Relations = defaultdict(set)
    while True:  # until the calls demand no new values of required arguments
        before = _size(demand)
        context = _Context(datoms, {}, demand)
        _derive_rules(context, compiled.rules, compiled.where)
        basis = {Row(binding[v] for v in compiled.basis)
                 for binding in _solve(context, compiled.where, {})}
        if _size(demand) == before:
            return _find_rows(compiled, basis)


@dataclass
class _Context:
    """What clauses are evaluated against: the datoms, the rule relations so far, and the
    values each rule with required arguments (``(name [?p] ...)``) has been called with:
    such a rule is evaluated top-down, from each of them."""

    datoms: list[Datom]
    relations: Relations
    demand: Relations


def _size(relations: Relations) -> int:
    return sum(len(rows) for rows in relations.values())


# --- conjunctions -------------------------------------------------------------------------

def _solve(context: _Context, clauses: Sequence[Clause],
           binding: Bindings) -> Iterator[Bindings]:
    """Every extension of ``binding`` satisfying all ``clauses`` (in any order)."""
    if not clauses:
        yield binding
        return
    i = _next_clause(clauses, set(binding))
    rest = [*clauses[:i], *clauses[i + 1:]]
    for extended in _apply(context, clauses[i], binding):
        yield from _solve(context, rest, extended)


def _next_clause(clauses: Sequence[Clause], bound: set[Variable]) -> int:
    """The clause to evaluate next: a ready filter or function, else a pattern or rule call,
    else a ready ``or``."""
    for kinds in ((Predicate, FnBinding, Not), (Pattern, RuleCall), (Or,)):
        for i, clause in enumerate(clauses):
            if isinstance(clause, kinds) and _ready(clause, bound):
                return i
    raise ValueError(f"no clause can be evaluated with {sorted(map(str, bound))} bound: "
                     f"{clauses}")


def _ready(clause: Clause, bound: set[Variable]) -> bool:
    """Whether every variable the clause needs from its scope is bound."""
    if isinstance(clause, Pattern):
        return True
    if isinstance(clause, RuleCall):
        return set(clause.inputs) <= bound
    if isinstance(clause, Predicate | Not):
        return set(clause.variables) <= bound
    if isinstance(clause, FnBinding):
        return set(clause.inputs) <= bound
    shared = set(clause.variables)
    return all(shared <= _binds(branch, bound & shared) for branch in clause.branches)


def _binds(clauses: Sequence[Clause], bound: set[Variable]) -> set[Variable]:
    """The variables bound after evaluating ``clauses`` from ``bound`` (statically)."""
    bound, pending = set(bound), list(clauses)
    while pending:
        ready = [c for c in pending if _ready(c, bound)]
        if not ready:
            break
        for clause in ready:
            pending.remove(clause)
            if isinstance(clause, FnBinding):
                bound |= set(clause.outputs)
            elif not isinstance(clause, Predicate | Not):
                bound |= set(clause.variables)
    return bound


def _apply(context: _Context, clause: Clause, binding: Bindings) -> Iterator[Bindings]:
    """The extensions of ``binding`` by one clause."""
    if isinstance(clause, Pattern):
        yield from _matches(clause.terms, context.datoms, binding)
    elif isinstance(clause, RuleCall):
        if clause.required:
            context.demand[clause.name].add(Row(_arguments(
                [clause.args[i] for i in clause.required], binding)))
        yield from _matches(clause.args, context.relations[clause.name], binding)
    elif isinstance(clause, Predicate):
        if _holds(clause, binding):
            yield binding
    elif isinstance(clause, FnBinding):
        yield from _matches(binding_terms(clause.binding), _fn_rows(clause, binding), binding)
    elif isinstance(clause, Not):
        start = {v: binding[v] for v in clause.variables}
        if next(_solve(context, clause.clauses, start), None) is None:
            yield binding
    else:
        yield from _or(context, clause, binding)


def _matches(terms: Sequence[Any], rows: Iterable[Sequence[Any]],
             binding: Bindings) -> Iterator[Bindings]:
    for row in rows:
        extended = _unify(terms, row, binding)
        if extended is not None:
            yield extended


def _unify(terms: Sequence[Any], values: Sequence[Any], binding: Bindings) -> Bindings | None:
    """``binding`` extended so that ``terms`` (variables, constants, blanks) equal
    ``values``, or None."""
    extended = dict(binding)
    for term, value in zip(terms, values, strict=True):
        if isinstance(term, Blank):
            continue
        if isinstance(term, Constant):
            if not _same(term.value, value):
                return None
        elif term in extended:
            if not _same(extended[term], value):
                return None
        else:
            extended[term] = value
    return extended


def _same(a: Any, b: Any) -> bool:
    """One value: equal, and of one kind all the way down (``1``, ``1.0``, ``true`` differ)."""
    return bool(a == b) and _kinds(a) == _kinds(b)


def _kinds(x: Any) -> Any:
    """``x``'s shape of kinds: what must agree besides equality for two values to be one."""
    if isinstance(x, bool | float | Decimal):
        return type(x).__name__
    if isinstance(x, Mapping):
        return sorted((repr(_kinds(k)), repr(_kinds(v))) for k, v in x.items())
    if isinstance(x, tuple | list | ImmutableList):
        return [_kinds(i) for i in x]
    if isinstance(x, frozenset | set):
        return sorted(repr(_kinds(i)) + repr(i) for i in x)
    return "value"


# --- predicates, functions, or ------------------------------------------------------------

def _arguments(args: Sequence[Any], binding: Bindings) -> list[Any]:
    return [a.value if isinstance(a, Constant) else binding[a] for a in args]


def _holds(clause: Predicate, binding: Bindings) -> bool:
    """A predicate is true iff the call succeeds with a truthy value."""
    try:
        return truthy(call(FUNCTIONS[clause.fn], _arguments(clause.args, binding)))
    except CallFailed:
        return False


def _fn_rows(clause: FnBinding, binding: Bindings) -> list[Row]:
    """The rows a function binding produces, one value per binding target; none if the
    call fails or its result has the wrong shape."""
    try:
        result = call(FUNCTIONS[clause.fn], _arguments(clause.args, binding))
    except CallFailed:
        return []
    return _shape(clause.binding, result)


def _shape(form: Binding | Any, result: Any) -> list[Row]:
    """Every row of values ``form`` (nested forms included) binds from ``result``; a
    result of the wrong shape binds nothing."""
    if isinstance(form, Variable | Blank):
        return [(result,)]
    if isinstance(form, BindScalar):
        return [] if result is None else [(result,)]  # nil binds nothing
    if isinstance(form, BindRel):
        return _shape(BindColl(BindTuple(form.vars)), result)
    if isinstance(form, BindColl):
        if not isinstance(result, COLLECTIONS):
            return []
        return [row for item in result for row in _shape(form.var, item)]
    if not _is_row(result, len(form.vars)):
        return []
    rows: list[Row] = [()]
    for target, item in zip(form.vars, result, strict=True):
        rows = [row + more for row in rows for more in _shape(target, item)]
    return rows


def _is_row(value: Any, width: int) -> bool:
    return isinstance(value, SEQUENCES) and len(value) == width


def _or(context: _Context, clause: Or, binding: Bindings) -> Iterator[Bindings]:
    """The union of the branches' solutions, each projected on the ``or``'s variables."""
    shared = clause.variables
    start = {v: binding[v] for v in shared if v in binding}
    seen: set[Row] = set()
    for branch in clause.branches:
        for solution in _solve(context, branch, start):
            values = Row(solution[v] for v in shared)
            if values not in seen:
                seen.add(values)
                yield {**binding, **dict(zip(shared, values, strict=True))}


# --- rules ----------------------------------------------------------------------------------

def _derive_rules(context: _Context, rules: Sequence[Rule], where: Sequence[Clause]) -> None:
    """Fill ``context.relations`` with every rule relation the query uses: strongly
    connected components of the call graph in dependency order, each to its fixpoint."""
    by_name: dict[str, list[Rule]] = {}
    for rule in rules:
        by_name.setdefault(rule.name, []).append(rule)
    calls = {name: set(_calls(c for r in defs for c in r.body))
             for name, defs in by_name.items()}
    used = _reachable({name for name, _ in _calls(where)}, calls)
    graph = {name: {callee for callee, _ in calls[name]} for name in used}
    for component in _components(graph):
        negated = [(n, callee) for n in component for callee, neg in calls[n]
                   if neg and callee in component]
        if negated:
            raise ValueError(f"rules are not stratified: {negated[0][0]} negates "
                             f"{negated[0][1]} recursively")
        for name in component:
            context.relations[name] = set()
        _fixpoint(context, [r for name in component for r in by_name[name]])


def _calls(clauses: Iterable[Clause], negated: bool = False) -> Iterator[tuple[str, bool]]:
    """``(rule name, under a not)`` for every rule call, nested ones included."""
    for clause in clauses:
        if isinstance(clause, RuleCall):
            yield clause.name, negated
        elif isinstance(clause, Not):
            yield from _calls(clause.clauses, True)
        elif isinstance(clause, Or):
            for branch in clause.branches:
                yield from _calls(branch, negated)


def _reachable(roots: set[str], calls: dict[str, set[tuple[str, bool]]]) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(callee for callee, _ in calls[name])
    return seen


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each after every one it depends on."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for callee in sorted(graph[node]):
            if callee not in index:
                visit(callee)
                low[node] = min(low[node], low[callee])
            elif callee in stack:
                low[node] = min(low[node], index[callee])
        if low[node] == index[node]:
            component = stack[stack.index(node):]
            del stack[stack.index(node):]
            found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _fixpoint(context: _Context, rules: Sequence[Rule]) -> None:
    """Naive iteration: apply every rule to the current relations (a rule with required
    arguments from each value demanded of it) until no relation and no demand grows."""
    changed = True
    while changed:
        demanded = _size(context.demand)
        changed = False
        for rule in rules:
            starts = [dict(zip([rule.params[i] for i in rule.required], values, strict=True))
                      for values in list(context.demand[rule.name])] if rule.required else [{}]
            heads = {Row(b[p] for p in rule.params)
                     for start in starts for b in _solve(context, rule.body, start)}
            relation = context.relations[rule.name]
            if not heads <= relation:
                relation |= heads
                changed = True
        changed = changed or _size(context.demand) != demanded


# --- :find ----------------------------------------------------------------------------------

def _numbers(values: list[Any]) -> list[Any]:
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        raise TypeError("a numeric aggregate of a non-number")
    return values


def _median(values: list[Any]) -> Any:
    ordered = sorted(values, key=sort_key)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[half]
    total = sum(_numbers(ordered[half - 1:half + 1]))
    return total // 2 if isinstance(total, int) and total % 2 == 0 else total / 2


AGGREGATE_FUNCTIONS: dict[str, Callable[[list[Any]], Any]] = {
    "count": len,
    "count-distinct": lambda values: len({Row((v,)) for v in values}),
    "sum": lambda values: sum(_numbers(values)),
    "min": lambda values: min(values, key=sort_key),
    "max": lambda values: max(values, key=sort_key),
    "avg": lambda values: float(sum(_numbers(values)) / len(values)),
    "median": _median,
    "variance": lambda values: float(statistics.pvariance(_numbers(values))),
    "stddev": lambda values: math.sqrt(statistics.pvariance(_numbers(values))),
    "distinct": ValueSet,
}


def _find_rows(query: Query, basis: set[Row]) -> ZSet[Row]:
    """The :find rows from the distinct basis tuples (find variables, then :with), each
    with its multiplicity: the :with variables dropped from a basis tuple leave a bag."""
    column = {v: i for i, v in enumerate(query.basis)}
    if not query.aggregates:
        bag: ZSet[Row] = defaultdict(int)
        for row in basis:
            bag[Row(row[column[v]] for v in query.find_variables)] += 1
        return dict(bag)
    keys = [e.var if isinstance(e, Pull) else e for e in query.find
            if not isinstance(e, Aggregate)]  # a pulled entity groups as its variable
    groups: dict[Row, list[Row]] = {}
    for row in basis:
        groups.setdefault(Row(row[column[v]] for v in keys), []).append(row)
    found = set()
    for key, rows in groups.items():
        group = dict(zip(keys, key, strict=True))
        try:
            found.add(Row(_aggregate(e, [r[column[e.var]] for r in rows])
                          if isinstance(e, Aggregate) else group[e.var if isinstance(e, Pull)
                                                                 else e] for e in query.find))
        except (TypeError, ArithmeticError):
            continue  # an aggregate that cannot be computed: the group has no row
    return dict.fromkeys(found, 1)


def _aggregate(element: Aggregate, values: list[Any]) -> Any:
    """One aggregate over the bag of its variable's values in a group; ``(min n ?x)`` and
    ``(max n ?x)`` keep the n least/greatest, ascending."""
    if isinstance(element.n, Constant):
        ordered, n = sorted(values, key=sort_key), element.n.value
        return tuple(ordered[:n]) if element.fn == "min" else tuple(ordered[::-1][:n][::-1])
    return AGGREGATE_FUNCTIONS[element.fn](values)


class ReferenceDb:
    """A set of datoms changed by transactions as Datomic defines them (the oracle's data).

    Supports ``:db/add``, ``:db/retract`` and ``:db/retractEntity`` ops, and cardinality-one
    attributes given up front.  Returns False (and changes nothing) for a refused tx.  Datoms
    are :class:`~workers.zset.row.Row`: ``[1 :x 1]`` and ``[1 :x true]`` are two datoms.
    """

    def __init__(self, cardinality_one: Iterable[Any] = ()) -> None:
        self.datoms: set[Datom] = set()
        self.cardinality_one = set(cardinality_one)

    def transact(self, ops: Sequence[Sequence[Any]]) -> bool:
        adds: set[Datom] = set()
        retracts: set[Datom] = set()
        for op in ops:
            if op[0] == keyword("db/add"):
                adds.add(Row((op[1], op[2], op[3])))
            elif op[0] == keyword("db/retract"):
                retracts.add(Row((op[1], op[2], op[3])))
            else:
                retracts |= {d for d in self.datoms if d[0] == op[1]}
        if adds & retracts:
            return False
        one_values: dict[Row, Any] = {}
        for e, a, v in adds:
            if a in self.cardinality_one:
                if not _same(one_values.setdefault(Row((e, a)), v), v):
                    return False
                retracts |= {d for d in self.datoms
                             if Row(d[:2]) == Row((e, a)) and not _same(d[2], v)}
        self.datoms = (self.datoms - retracts) | adds
        return True


class CommittedChange(Protocol):
    """One row of a query's committed change stream (what ``deltalog tail`` reads)."""

    @property
    def row(self) -> Row: ...
    @property
    def weight(self) -> int: ...
    @property
    def tx_first(self) -> int: ...
    @property
    def tx_last(self) -> int: ...
    @property
    def snapshot(self) -> bool: ...


class ChangeStreamMismatch(AssertionError):
    """A committed change stream that is not the exact change of its query's result."""


def check_change_stream(query: Any, changes: Iterable[CommittedChange],
                        states: Sequence[Iterable[Datom]]) -> int:
    """The oracle of a committed change stream: tick by tick (the rows of one ``tx_first``,
    ``tx_last`` and snapshot flag), the integrated changes equal the from-scratch result at
    the tick's end, and ticks never overlap or repeat — so no change was lost or committed
    twice.  ``states[i]`` is the database after transaction ``i``.  Returns the number of
    ticks; raises :class:`ChangeStreamMismatch` naming the first tick that is wrong."""
    ticks: dict[tuple[int, int, bool], dict[Any, int]] = defaultdict(dict)
    for change in changes:
        add_into(ticks[(change.tx_first, change.tx_last, change.snapshot)],
                 {change.row: change.weight})
    view: dict[Any, int] = {}
    previous_last = -2
    for (tx_first, tx_last, snapshot), rows in sorted(ticks.items(),
                                                      key=lambda k: (k[0][1], not k[0][2])):
        if snapshot and not tx_first == tx_last >= previous_last:
            raise ChangeStreamMismatch(f"snapshot {tx_first}..{tx_last} after {previous_last}")
        if not snapshot and tx_first <= previous_last:
            raise ChangeStreamMismatch(f"tick {tx_first}..{tx_last} overlaps {previous_last}")
        previous_last = tx_last
        add_into(view, rows)
        expected = evaluate_from_scratch(query, states[tx_last]) if tx_last >= 0 else {}
        if view != expected:
            missing = {row: w for row, w in expected.items() if view.get(row) != w}
            extra = {row: w for row, w in view.items() if expected.get(row) != w}
            raise ChangeStreamMismatch(f"after tick {tx_first}..{tx_last}: the view lacks "
                                       f"{missing}, has {extra} besides")
    return len(ticks)


def edge_transactions(seed: int, nodes: int) -> Iterator[list[list[Any]]]:
    """An endless seeded stream of graph transactions over ``nodes`` nodes: 1-3 ops each,
    55 % edge adds, 40 % edge retracts, 5 % entity retractions — edges come and go, so
    triangles and paths appear, vanish and reappear (tests and benchmarks share it)."""
    rng = Random(seed)
    add, retract, retract_entity, to = (keyword(k) for k in ("db/add", "db/retract",
                                                             "db/retractEntity", "g/to"))
    while True:
        tx: list[list[Any]] = []
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            a, b = rng.sample(range(nodes), 2)
            if kind < 0.55:
                tx.append([add, a, to, b])
            elif kind < 0.95:
                tx.append([retract, a, to, b])
            else:
                tx.append([retract_entity, a])
        yield tx


# --- fakes of the worker's Kafka (workers.runtime.ports) ------------------------------------
# In-memory stand-ins for the transaction log, the transactional producer and the workers'
# group, keeping the contracts of workers.kafka.source, workers.kafka.sink and
# workers.runtime.ownership, so that a Worker ticks without a broker (bytewax's testing.py).

@dataclass(frozen=True, slots=True)
class FakeRecord:
    """One record a :class:`CollectingSink` committed: decoded values, not Avro bytes."""

    topic: str
    key: Any  # a row (changes, views), a query name (progress), a tx (reports), or None
    value: dict[str, Any] | None  # None: a tombstone


class FakeKafka:
    """The topics a fleet of workers shares, in memory: the transaction log and the queries
    topic as Avro records (what producers send), every committed record of the workers'
    transactions, and the group's assignment (partition -> worker), with its generation."""

    def __init__(self, prefix: str = "deltalog", query_partitions: int = 1) -> None:
        self.topics = Topics(prefix)
        self.tx: list[TxRecord] = []
        self.queries: list[KeyedRecord] = []
        self.committed: list[FakeRecord] = []
        self.query_partitions = query_partitions
        self.owners: dict[int, str] = {}  # partition -> the member owning it
        self.generation = 0  # bumped by every rebalance: older transactions are refused
        self.epochs: dict[str, int] = defaultdict(int)  # transactional id -> producer epoch
        self.fail_commits = 0  # the next commits to fail (a lost transaction), as a broker's
        # False: a member given no partition is not told so (librdkafka with KIP-848's
        # protocol: no assignment callback for an empty assignment)
        self.announces_empty = True
        self._tx_codec = AvroCodec("transaction")
        self._registration_codec = AvroCodec("query_registration")

    def send(self, forms: Any) -> int:
        """A transaction (EDN text or forms) appended to the log; its offset (its tx id)."""
        forms = read(forms) if isinstance(forms, str) else forms
        return self.send_raw(self._tx_codec.encode(transaction_to_avro(forms)))

    def send_raw(self, value: bytes) -> int:
        self.tx.append(TxRecord(len(self.tx), value, time.time()))
        return len(self.tx) - 1

    def register(self, name: str, edn: str, partition: int = 0) -> int:
        """A registration on the queries topic; its offset."""
        return self._query(name, self._registration_codec.encode(
            registration_record(name, edn)), partition)

    def unregister(self, name: str, partition: int = 0) -> int:
        return self._query(name, None, partition)

    def _query(self, name: str, value: bytes | None, partition: int) -> int:
        offset = sum(record.partition == partition for record in self.queries)
        self.queries.append(KeyedRecord(name, value, offset, partition, self.topics.queries))
        return offset

    def assign(self, owners: Mapping[int, str]) -> None:
        """A rebalance: the partitions given (partition -> member) move; a new generation."""
        self.owners.update(owners)
        self.generation += 1

    def records(self, topic: str) -> list[FakeRecord]:
        return [record for record in self.committed if record.topic == topic]

    def changes(self, query: str) -> list[dict[str, Any]]:
        """The committed change stream of ``query``: ``{"row", "weight", "tx_first", ...}``."""
        return [record.value for record in self.records(self.topics.results(query))
                if record.value is not None]

    def result(self, query: str) -> ZSet[Row]:
        """What the committed change stream of ``query`` integrates to."""
        result: ZSet[Row] = {}
        for change in self.changes(query):
            add_into(result, {change["row"]: change["weight"]})
        return result

    def progress(self) -> dict[str, dict[str, Any]]:
        """The committed progress table (the latest record per key)."""
        return {record.key: record.value for record in self.records(self.topics.progress)
                if record.value is not None}

    def view(self, query: str) -> View:
        """The committed view of ``query`` (:func:`workers.kafka.views.read_views`)."""
        latest: dict[Any, dict[str, Any] | None] = {}
        records = self.records(self.topics.view(query))
        for record in records:
            latest[record.key] = record.value
        marker = latest.pop(MARKER, None)
        return View({row: value["weight"] for row, value in latest.items() if value},
                    -1 if marker is None else marker["registration"],
                    -1 if marker is None else marker["tx_last"], len(records))


class FakeTxSource:
    """The transaction log of a :class:`FakeKafka` from ``position``
    (:class:`~workers.kafka.source.TxSource`'s contract: bounds, ``until``, ``end``)."""

    def __init__(self, kafka: FakeKafka, position: int) -> None:
        self._kafka = kafka
        self._next = position
        self.closed = False

    def next_batch(self, max_count: int, max_bytes: int, max_wait_s: float,
                   until: int | None = None) -> list[TxRecord]:
        batch: list[TxRecord] = []
        size = 0
        for record in self._kafka.tx[self._next:]:
            size += len(record.value)
            if len(batch) == max_count or (until is not None and record.offset > until) or (
                    batch and size > max_bytes):
                break
            batch.append(record)
        self._next += len(batch)
        return batch

    def end(self) -> int:
        return len(self._kafka.tx)

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> FakeTxSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class CollectingSink:
    """A transactional producer into a :class:`FakeKafka`
    (:class:`~workers.kafka.sink.ResultSink`'s contract): a transaction's records are
    committed together or not at all.  A commit fails (:class:`TransactionFailed`) when the
    kafka says so (``fail_commits``), when the transaction carries an older generation of the
    group than the kafka's, or when a newer producer of its transactional id was initialised
    (fenced)."""

    def __init__(self, kafka: FakeKafka, transactional_id: str) -> None:
        self._kafka = kafka
        self.worker = transactional_id
        self.written: set[str] = set()
        self.swept: list[set[str]] = []
        self._epoch = -1
        self._open: list[FakeRecord] | None = None
        self._generation: int | None = None

    def init(self) -> None:
        """``init_transactions``: fences the earlier producers of this transactional id."""
        self._kafka.epochs[self.worker] += 1
        self._epoch = self._kafka.epochs[self.worker]

    def begin(self) -> None:
        self.written, self._open, self._generation = set(), [], None

    def _produce(self, topic: str, key: Any, value: dict[str, Any] | None) -> None:
        if self._open is None:
            raise TransactionFailed("no transaction open")
        self.written.add(topic)
        self._open.append(FakeRecord(topic, key, value))

    def change(self, query: str, registration: int, row: Row, weight: int, tx_first: int,
               tx_last: int, snapshot: bool = False) -> bytes:
        self._produce(self._kafka.topics.results(query), row, {
            "row": row, "weight": weight, "tx_first": tx_first, "tx_last": tx_last,
            "snapshot": snapshot, "registration": registration})
        return repr(row).encode()

    def change_and_view(self, query: str, registration: int, row: Row, weight: int,
                        view_weight: int, tx_first: int, tx_last: int) -> None:
        self.change(query, registration, row, weight, tx_first, tx_last)
        self.view(query, registration, row, view_weight, tx_last)

    def view(self, query: str, registration: int, row: Row, weight: int, tx_last: int,
             key: bytes | None = None) -> None:
        self._produce(self._kafka.topics.view(query), row, {
            "weight": weight, "tx_last": tx_last, "registration": registration}
            if weight else None)

    def view_marker(self, query: str, registration: int, tx_last: int) -> None:
        self._produce(self._kafka.topics.view(query), MARKER, {
            "weight": 0, "tx_last": tx_last, "registration": registration})

    def progress(self, query: str, registration: int, tx_last: int) -> None:
        self._produce(self._kafka.topics.progress, query, {
            "query": query, "registration": registration, "tx_last": tx_last,
            "worker": self.worker})

    def dead_letter(self, topic: str, partition: int, offset: int, code: str, reason: str,
                    payload: bytes) -> None:
        self._produce(self._kafka.topics.dlq, None, {
            "topic": topic, "partition": partition, "offset": offset, "code": code,
            "reason": reason, "payload": payload, "worker": self.worker})

    def report(self, tx: int, tempids: Mapping[Any, int]) -> None:
        self._produce(self._kafka.topics.reports, tx, {"tx": tx, "tempids": dict(tempids)})

    def send_offsets(self, offsets: list[Any], group_metadata: Any) -> None:
        self._generation = group_metadata

    def commit(self) -> None:
        kafka, records = self._kafka, self._open
        self._open = None
        if records is None:
            raise TransactionFailed("no transaction open")
        if kafka.fail_commits:
            kafka.fail_commits -= 1
            raise TransactionFailed("the fake broker lost the transaction")
        if kafka.epochs[self.worker] != self._epoch:
            raise TransactionFailed(f"{self.worker}: fenced by a newer producer")
        if self._generation is not None and self._generation != kafka.generation:
            raise TransactionFailed("the group rebalanced: a stale generation")
        kafka.committed += records

    def worker_topics(self) -> set[str]:
        return {record.topic for record in self._kafka.committed
                if self._kafka.topics.written_by_workers(record.topic)}

    def sweep(self, topics: set[str]) -> None:
        if topics:
            self.swept.append(set(topics))

    def close(self) -> None:
        self._open = None


class FakeGroup:
    """A member of the workers' group over a :class:`FakeKafka`
    (:class:`~workers.runtime.ownership.Ownership`'s contract): it owns the partitions the
    kafka assigns it (all of the unowned ones when it joins); a partition assigned is
    released as a table, the latest registration per query, then its records pass through."""

    def __init__(self, kafka: FakeKafka, member: str) -> None:
        self._kafka = kafka
        self._member = member
        kafka.assign({p: member for p in range(kafka.query_partitions)
                      if p not in kafka.owners})
        self.owned: set[int] = set()
        self.assigned_once = False
        self.catching_up = False
        self._read: dict[int, int] = {}  # partition -> records of it polled

    def poll(self, timeout_s: float = 0.0) -> Polled:
        polled = Polled()
        now = {p for p, member in self._kafka.owners.items() if member == self._member}
        polled.revoked = self.owned - now
        for partition in now - self.owned:  # assigned: read to its end, as a table
            records = [r for r in self._kafka.queries if r.partition == partition]
            polled.records += latest(records).values()
            self._read[partition] = len(records)
        for partition in self.owned & now:
            records = [r for r in self._kafka.queries if r.partition == partition]
            polled.records += records[self._read[partition]:]
            self._read[partition] = len(records)
        self.owned = now
        self.assigned_once = self.assigned_once or bool(now) or self._kafka.announces_empty
        return polled

    def offsets(self) -> list[Any]:
        return [(partition, self._read[partition]) for partition in sorted(self.owned)]

    def group_metadata(self) -> Any:
        return self._kafka.generation

    def close(self) -> None:
        self._kafka.owners = {p: m for p, m in self._kafka.owners.items()
                              if m != self._member}

    def __enter__(self) -> FakeGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class FakePorts:
    """A worker's :class:`~workers.runtime.ports.Ports` over a :class:`FakeKafka`: its source
    and sinks are :class:`FakeTxSource` and :class:`CollectingSink`, its group a
    :class:`FakeGroup`; fencing a writer gone from the group bumps its producer's epoch
    (that producer can commit no more)."""

    def __init__(self, kafka: FakeKafka, worker: str = "deltalog-worker-fake") -> None:
        self.kafka = kafka
        self.worker = worker
        self.sinks: list[CollectingSink] = []  # every producer opened, the current last
        self.created: set[str] = set()

    def source(self, position: int) -> FakeTxSource:
        return FakeTxSource(self.kafka, position)

    def sink(self) -> CollectingSink:
        self.sinks.append(CollectingSink(self.kafka, self.worker))
        return self.sinks[-1]

    def group(self) -> FakeGroup:
        return FakeGroup(self.kafka, self.worker)

    def ensure_topics(self) -> None:
        return None

    def create(self, topics: dict[str, dict[str, str]]) -> None:
        self.created |= topics.keys()

    def progress(self, on_held: Callable[[set[str]], None],
                 on_hanging: Callable[[set[str], list[Any]], None]) -> dict[str, dict[str, Any]]:
        return self.kafka.progress()

    def views(self, queries: Sequence[str], on_hanging: Callable[[list[Any]], None]
              ) -> dict[str, View]:
        return {query: self.kafka.view(query) for query in queries}

    def integrated_view(self, query: str) -> ZSet[Row]:
        return self.kafka.result(query)

    def members(self) -> set[str] | None:
        return set(self.kafka.owners.values())

    def fence_absent(self, writers: set[str]) -> None:
        for writer in sorted(writers - set(self.kafka.owners.values())):
            self.kafka.epochs[writer] += 1

    def unstick(self, writers: set[str], held: list[Any]) -> None:
        return None

    def close(self) -> None:
        return None
