"""EDN forms → query AST.  The grammar production sits above each parse function.

Parse functions raise :class:`QueryError` naming the form and where it stands (``:where``
clause 2, ``:find`` element 1, ...).  Forms of Datomic's query language that deltalog does
not evaluate (nested calls, a second database, ...) are refused
with ``ErrorCode.QUERY_UNSUPPORTED`` and the form's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import edn_format
from edn_format import Symbol
from edn_format.immutable_dict import ImmutableDict

from workers.datalog.ast import (
    AGGREGATES,
    AGGREGATES_OF_N,
    Aggregate,
    BindColl,
    Binding,
    BindRel,
    BindScalar,
    BindTuple,
    Blank,
    Clause,
    Constant,
    FindElement,
    FindSpec,
    FnBinding,
    InBinding,
    InColl,
    InRel,
    InRules,
    InScalar,
    InSource,
    InTuple,
    Not,
    Or,
    Pattern,
    Predicate,
    Pull,
    Query,
    Rule,
    RuleCall,
    Target,
    Term,
    Variable,
    binding_terms,
    variables_of,
)
from workers.datalog.functions import FUNCTIONS, NONDETERMINISTIC, canonical
from workers.datalog.pull import named_attribute, parse_pull
from workers.datalog.sources import source_pattern
from workers.db.tx import LookupRef
from workers.db.values import is_value
from workers.edn import Keyword, intern, keyword, read
from workers.edn import show as _show
from workers.errors import ErrorCode, QueryError

FIND, IN, WHERE, WITH, RULES = (keyword(k) for k in ("find", "in", "where", "with", "rules"))
KEY_SECTIONS = {keyword(k): f":{k}" for k in ("keys", "strs", "syms")}
UNSUPPORTED_SECTIONS = {keyword(k): f":{k}" for k in ("timeout", "limit", "offset",
                                                     "order-by")}
SECTIONS = (FIND, IN, WHERE, WITH, RULES, *KEY_SECTIONS)
DOTS, SCALAR, SOURCE, RULES_INPUT = Symbol("..."), Symbol("."), Symbol("$"), Symbol("%")
DB_FUNCTIONS = ("get-else", "missing?", "get-some", "fulltext")
NONDETERMINISTIC_AGGREGATES = ("rand", "sample")


def parse_query(query: Any) -> Query:
    """Parse EDN text or an already-read form (map or vector) into a :class:`Query`."""
    form = read(query, regex_literals=True) if isinstance(query, str) else intern(query)
    # query = {:find [find-elem+] :with [var+]? :in [in-binding*]? :where [clause+]
    #          :rules [rule+]? (:keys|:strs|:syms) [name+]?}
    #       | [:find find-elem+ (:with var+)? (:in in-binding*)? :where clause+ ...]
    sections = _sections(form)
    spec, elements = _find_spec(sections.get(FIND))
    find = _parse_find(elements)
    with_ = _parse_with(sections.get(WITH, []))
    shared = [str(v) for v in with_ if v in find]
    if shared:
        raise QueryError(f":find and :with should not use same variables: [{' '.join(shared)}]",
                         form=sections[WITH])
    return Query(find=find,
                 where=_parse_where(sections.get(WHERE, [])),
                 inputs=_parse_inputs(sections.get(IN, [SOURCE])),
                 with_=with_,
                 rules=parse_rules(_rules_section(sections[RULES])) if RULES in sections
                 else (),
                 keys=_parse_keys(sections, len(find), spec),
                 source=query, find_spec=spec)


def _sections(form: Any) -> dict[Any, list[Any]]:
    if isinstance(form, Mapping):
        sections = {k: v for k, v in form.items()}
    elif isinstance(form, list):
        sections = _split_vector_form(form)
    else:
        raise QueryError(f"a query is a map {{:find [...] :where [...]}} or a vector "
                         f"[:find ... :where ...], got {_show(form)}", form=form)
    for key, value in sections.items():
        if key in UNSUPPORTED_SECTIONS:
            raise QueryError(f"{UNSUPPORTED_SECTIONS[key]} is not supported (in {_show(value)})",
                             code=ErrorCode.QUERY_UNSUPPORTED, form=value)
        if key not in SECTIONS:
            raise QueryError(f"unknown query section {_show(key)}; expected :find, :with, :in, "
                             ":where, :rules, :keys, :strs or :syms", form=key)
        if not isinstance(value, list):
            raise QueryError(f"{_show(key)} takes a vector, got {_show(value)}", form=value)
    return sections


def _rules_section(rules: list[Any]) -> list[Any]:
    """``:rules [[...] ...]`` in a vector query reads as one element: the rule set."""
    if len(rules) == 1 and isinstance(rules[0], list) and rules[0] \
            and all(isinstance(r, list) for r in rules[0]):
        return rules[0]  # type: ignore[no-any-return]
    return rules


def _split_vector_form(form: list[Any]) -> dict[Any, list[Any]]:
    sections: dict[Any, list[Any]] = {}
    current = None
    for element in form:
        if isinstance(element, Keyword):
            if element in sections:
                raise QueryError(f"{_show(element)} appears twice in the query", form=element)
            current = sections[element] = []
        elif current is None:
            raise QueryError(f"a vector query starts with a keyword such as :find, got "
                             f"{_show(element)}", form=element)
        else:
            current.append(element)
    return sections


# find-spec = find-rel | find-coll | find-tuple | find-scalar
# find-rel = find-elem+;  find-coll = [find-elem '...'];  find-tuple = [find-elem+]
# find-scalar = find-elem '.'
def _find_spec(elements: list[Any] | None) -> tuple[FindSpec, list[Any] | None]:
    """The find specification and its elements (Datomic's four :find shapes)."""
    if elements and len(elements) == 2 and elements[1] == SCALAR:
        return "scalar", elements[:1]
    if elements and len(elements) == 1 and isinstance(elements[0], list):
        inner = elements[0]
        if len(inner) == 2 and inner[1] == DOTS:
            return "collection", inner[:1]
        return "tuple", inner
    return "relation", elements


# find-elem = variable | aggregate | pull-expr
# aggregate = (aggregate-fn variable) | ((min | max) n variable)   (n: long or :in variable)
def _parse_find(elements: list[Any] | None) -> tuple[FindElement, ...]:
    if not elements:
        raise QueryError(":find needs at least one variable", form=elements)
    found: list[FindElement] = []
    for i, element in enumerate(elements, 1):
        parsed: FindElement | None = _parse_variable(element)
        if parsed is None:
            parsed = _parse_aggregate(element, i)
        if parsed in found:
            raise QueryError(f":find element {i}: {_show(element)} appears twice", form=element)
        found.append(parsed)
    return tuple(found)


def _parse_aggregate_n(element: Any) -> Variable | Constant | None:
    """The ``n`` of ``(min n ?x)``: a non-negative long, or an ``:in`` variable."""
    if isinstance(element, int) and not isinstance(element, bool) and element >= 0:
        return Constant(element)
    return _parse_variable(element)


def _parse_aggregate(element: Any, position: int) -> Aggregate | Pull:
    where = f":find element {position}"
    if isinstance(element, tuple) and element and isinstance(element[0], Symbol):
        name = element[0].name
        if name == "pull":
            return parse_pull(element, where, _parse_variable)
        if name in NONDETERMINISTIC_AGGREGATES:
            raise QueryError(f"{where}: aggregate ({name} ...) is not supported: it is not "
                             "deterministic (a standing query's rows would change with no datom "
                             f"changing): {_show(element)}", code=ErrorCode.QUERY_UNSUPPORTED,
                             form=element)
        if name not in AGGREGATES:
            raise QueryError(f"{where}: aggregate ({name} ...) is not supported: "
                             f"{_show(element)}; supported: {', '.join(AGGREGATES)}",
                             code=ErrorCode.QUERY_UNSUPPORTED, form=element)
        variable = _parse_variable(element[-1]) if len(element) in (2, 3) else None
        n = _parse_aggregate_n(element[1]) if len(element) == 3 and name in AGGREGATES_OF_N \
            else None
        if variable is None or (len(element) == 3 and n is None):
            takes = f"({name} n ?x) or ({name} ?x)" if name in AGGREGATES_OF_N else f"({name} ?x)"
            raise QueryError(f"{where}: {takes} takes one variable, got {_show(element)}",
                             form=element)
        return Aggregate(name, variable, source=element, n=n)
    if isinstance(element, list) or element in (SCALAR, DOTS):
        raise QueryError(f"{where}: {_show(element)} is a find specification, allowed only "
                         "as the whole :find: [?x ...], [?x ?y] or ?x .", form=element)
    raise QueryError(f"{where}: expected a variable or an aggregate, got {_show(element)}",
                     form=element)


# with-clause = [ variable+ ]
def _parse_with(elements: list[Any]) -> tuple[Variable, ...]:
    found: list[Variable] = []
    for i, element in enumerate(elements, 1):
        variable = _parse_variable(element)
        if variable is None or variable in found:
            raise QueryError(f":with element {i}: expected a new variable, got "
                             f"{_show(element)}", form=element)
        found.append(variable)
    return tuple(found)


# keys = (:keys | :strs | :syms) [ symbol+ ]   (one name per :find element)
def _parse_keys(sections: dict[Any, list[Any]], width: int,
                spec: FindSpec) -> tuple[str, tuple[str, ...]] | None:
    given = [key for key in KEY_SECTIONS if key in sections]
    if not given:
        return None
    if len(given) > 1:
        raise QueryError("use one of :keys, :strs or :syms, not several", form=given)
    kind, names = KEY_SECTIONS[given[0]], sections[given[0]]
    if spec in ("collection", "scalar"):
        raise QueryError(f"{kind} names the columns of a relation or a tuple, not of a "
                         f"find-{'coll' if spec == 'collection' else 'scalar'}", form=names)
    if len(names) != width:
        raise QueryError(f"{kind} names {len(names)} key(s) for {width} :find element(s) "
                         "(Count of :keys/:strs/:syms must match count of :find)", form=names)
    if not all(isinstance(n, Symbol) and not isinstance(n, edn_format.Keyword) for n in names):
        raise QueryError(f"{kind} takes symbols, got {_show(names)}", form=names)
    return kind, tuple(n.name for n in names)


# in-binding = '$' | '%' | variable | [variable+] | [variable '...'] | [[variable+]]
def _parse_inputs(elements: list[Any]) -> tuple[InBinding, ...]:
    inputs: list[InBinding] = []
    for i, element in enumerate(elements, 1):
        if isinstance(element, Symbol) and element in elements[:i - 1]:
            raise QueryError(f":in element {i}: Vars used in :in should be distinct, "
                             f"{element.name} appears twice", form=element)
        if element == SOURCE:
            continue
        if element == RULES_INPUT:
            inputs.append(InRules())
            continue
        if isinstance(element, Symbol) and element.name.startswith("$"):
            inputs.append(InSource(element.name))
            continue
        variable = _parse_variable(element)
        if variable is not None:
            inputs.append(InScalar(variable))
        elif isinstance(element, list):
            inputs.append(_parse_in_collection(element, f":in element {i}"))
        else:
            raise QueryError(f":in element {i}: expected $, %, a variable or a binding form, "
                             f"got {_show(element)}", form=element)
    return tuple(inputs)


def _parse_in_collection(element: list[Any], where: str) -> InBinding:
    binding = _parse_binding(element, where)
    if isinstance(binding, BindColl) and not isinstance(binding.var, Blank):
        return InColl(binding.var)
    if isinstance(binding, BindTuple):
        return InTuple(binding.vars)
    if isinstance(binding, BindRel):
        return InRel(binding.vars)
    raise QueryError(f"{where}: expected a binding form, got {_show(element)}", form=element)


# where = [ clause* ]   (none: the :in bindings alone, as Datascript's [:find ?a :in ?a])
def _parse_where(clauses: list[Any]) -> tuple[Clause, ...]:
    return _parse_clauses(clauses, ":where clause ")


def _parse_clauses(clauses: list[Any] | tuple[Any, ...], prefix: str, default: str = "$"
                   ) -> tuple[Clause, ...]:
    return tuple(_parse_clause(clause, f"{prefix}{i} {_show(clause)}", default)
                 for i, clause in enumerate(clauses, 1))


# clause = data-pattern | pred-expr | fn-expr | rule-expr | not-clause | not-join-clause
#        | or-clause | or-join-clause
# ``default``: the source of a data pattern that names none ($, or the one a (src-var not
# ...) or (src-var or ...) around it names)
def _parse_clause(clause: Any, where: str, default: str = "$") -> Clause:
    if isinstance(clause, tuple) and clause and isinstance(clause[0], Symbol):
        return _parse_list_clause(clause, where, default)
    if not isinstance(clause, list):
        raise QueryError(f"{where}: expected a data pattern [e a v]", form=clause)
    if clause and isinstance(clause[0], tuple):
        return _parse_expression(clause, where)
    named = clause[0].name if clause and isinstance(clause[0], Symbol) and \
        clause[0].name.startswith("$") else None
    if (named or default) != "$":
        terms = clause[1:] if named else clause
        if not terms:
            raise QueryError(f"{where}: a data pattern on {named} needs a term", form=clause)
        return source_pattern(named or default, tuple(_parse_term(t, where) for t in terms),
                              clause)
    pattern = _parse_pattern(clause, where)
    if pattern is None:
        raise QueryError(f"{where}: a data pattern has 1 to 3 elements [e a v]", form=clause)
    return pattern


def _parse_list_clause(clause: tuple[Any, ...], where: str, default: str = "$") -> Clause:
    head, body = clause[0], list(clause[1:])
    if head.name.startswith("?"):
        raise QueryError(f"{where}: a data pattern is a vector [e a v], not a list", form=clause)
    if head.name.startswith("$"):  # (src-var not ...), (src-var or ...): its default source
        inner = tuple(body)
        if not (inner and isinstance(inner[0], Symbol)
                and inner[0].name in ("not", "not-join", "or", "or-join")):
            raise QueryError(f"{where}: a source before a rule call is not supported: a rule "
                             "reads the database $", code=ErrorCode.QUERY_UNSUPPORTED,
                             form=clause)
        return _parse_list_clause(inner, where, head.name)
    if head.name in ("not", "not-join"):
        return _parse_not(head.name, body, clause, where, default)
    if head.name in ("or", "or-join"):
        return _parse_or(head.name, body, clause, where, default)
    if head.name == "and":
        raise QueryError(f"{where}: (and ...) is only allowed as a branch of or/or-join",
                         form=clause)
    return RuleCall(head.name, tuple(_parse_term(a, where) for a in body), source=clause)


# not-clause = (not clause+);  not-join-clause = (not-join [variable+] clause+)
def _parse_not(name: str, body: list[Any], clause: Any, where: str, default: str) -> Not:
    join = None
    if name == "not-join":
        join, body = _parse_join_vars(body, name, where)[0], body[1:]
    if not body:
        raise QueryError(f"{where}: ({name} ...) needs at least one clause", form=clause)
    return Not(join, _parse_clauses(body, f"{where}, inner clause ", default), source=clause)


# or-clause = (or (clause | and-clause)+);  or-join-clause = (or-join rule-vars branch+)
# and-clause = (and clause+)
def _parse_or(name: str, body: list[Any], clause: Any, where: str, default: str) -> Or:
    join: tuple[Variable, ...] | None = None
    required: tuple[Variable, ...] = ()
    if name == "or-join":
        (join, required), body = _parse_join_vars(body, name, where), body[1:]
    if not body:
        raise QueryError(f"{where}: ({name} ...) needs at least one branch", form=clause)
    branches = []
    for i, branch in enumerate(body, 1):
        inner = f"{where}, branch {i}"
        if isinstance(branch, tuple) and branch and branch[0] == Symbol("and"):
            if len(branch) < 2:
                raise QueryError(f"{inner}: (and ...) needs at least one clause", form=branch)
            branches.append(_parse_clauses(list(branch[1:]), f"{inner}, clause ", default))
        else:
            branches.append((_parse_clause(branch, f"{inner} {_show(branch)}", default),))
    return Or(join, tuple(branches), source=clause, required=required)


def _parse_join_vars(body: list[Any], name: str, where: str
                     ) -> tuple[tuple[Variable, ...], tuple[Variable, ...]]:
    """``[?x ?y]``, or ``[[?x] ?y]`` (the required-binding form: ``?x`` must be bound
    around the clause); the join variables, and the required ones."""
    given = body[0] if body else None
    if not isinstance(given, list):
        raise QueryError(f"{where}: {name} starts with a vector of variables, got "
                         f"{_show(given)}", form=given)
    required, rest = (given[0], given[1:]) if given and isinstance(given[0], list) else ([], given)
    variables = [_parse_variable(v) for v in [*required, *rest]]
    if not variables or any(v is None for v in variables):
        raise QueryError(f"{where}: {name} joins on variables, got {_show(given)}", form=given)
    join = tuple(v for v in variables if v is not None)
    return join, join[:len(required)]


# pred-expr = [ (pred fn-arg+) ];  fn-expr = [ (fn fn-arg*) binding ]
def _parse_expression(clause: list[Any], where: str) -> Clause:
    call = clause[0]
    if not call or not isinstance(call[0], Symbol):
        raise QueryError(f"{where}: a function call starts with a symbol, got "
                         f"{_show(call)}", form=clause)
    name = canonical(call[0].name)
    if name in DB_FUNCTIONS:
        return _parse_db_function(name, clause, where)
    if name in NONDETERMINISTIC:
        raise QueryError(f"{where}: {name} is not supported: it is not deterministic (a "
                         "standing query's rows would change with no datom changing, and a "
                         "replay would not reproduce them)", code=ErrorCode.QUERY_UNSUPPORTED,
                         form=clause)
    if name.startswith("?"):
        raise QueryError(f"{where}: calling {name}, a function bound to a variable (passed "
                         "as an input), is not supported: inputs are data (EDN, Avro); call a "
                         "built-in by name",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=clause)
    args = tuple(_parse_argument(a, where) for a in call[1:])
    if len(clause) == 1:
        if name not in FUNCTIONS:
            raise _unknown_function(call[0].name, where, "predicate", FUNCTIONS, clause)
        return Predicate(name, args, source=clause)
    if len(clause) != 2:
        raise QueryError(f"{where}: a function binding is [(fn arg*) binding]", form=clause)
    if name not in FUNCTIONS:
        raise _unknown_function(call[0].name, where, "function", FUNCTIONS, clause)
    return FnBinding(name, args, _parse_binding(clause[1], where), source=clause)


def _unknown_function(name: str, where: str, kind: str, known: Mapping[str, Any],
                      clause: Any) -> QueryError:
    return QueryError(f"{where}: Unknown {kind} '{name} in {_show(clause)}; deltalog "
                      "evaluates only built-in "
                      f"{kind}s: {', '.join(sorted(known))}",
                      code=ErrorCode.QUERY_UNSUPPORTED, form=clause)


def _parse_db_function(name: str, clause: list[Any], where: str) -> Clause:
    """``get-else``, ``get-some`` and ``missing?`` read the database: they are rewritten into
    the clauses that mean the same, so they are maintained like any other."""
    call = clause[0]
    if name == "fulltext":
        raise QueryError(f"{where}: {name} is not supported", code=ErrorCode.QUERY_UNSUPPORTED,
                         form=clause)
    shape = {"get-else": "(get-else $ ?e :attr default) ?v", "missing?": "(missing? $ ?e :attr)",
             "get-some": "(get-some $ ?e :attr+) [?attr ?v]"}[name]
    arities = {"get-else": (5,), "missing?": (4,)}.get(name, range(4, len(call) + 1))
    if len(call) not in arities or call[1] != SOURCE:
        raise QueryError(f"{where}: expected [{shape}]", form=clause)
    entity, attribute = _parse_term(call[2], where), _parse_term(call[3], where)
    if name == "missing?":
        return Not(None, (_has(entity, attribute, clause),), source=clause)
    if name == "get-some":
        if len(clause) != 2:
            raise QueryError(f"{where}: expected [{shape}]", form=clause)
        return _get_some(entity, [_parse_term(a, where) for a in call[3:]],
                         _parse_binding(clause[1], where), clause)
    if len(clause) != 2 or not isinstance(value := _parse_variable(clause[1]), Variable) \
            or isinstance(entity, Blank):
        raise QueryError(f"{where}: expected [{shape}]", form=clause)
    if call[4] is None:
        raise QueryError(f"{where}: get-else: nil default value is not supported — get-else "
                         "takes a non-nil default (as in Datomic and Datascript); use "
                         "(or-join ...) or [(missing? $ ?e :attr)]",
                         form=clause)
    default = _parse_argument(call[4], where)
    join = (entity, value) if isinstance(entity, Variable) else (value,)
    return Or(join, (
        (Pattern(entity, attribute, value, source=clause),),
        (Not(None, (Pattern(entity, attribute, Blank(), source=clause),), source=clause),
         FnBinding("ground", (default,), BindScalar(value), source=clause)),
    ), source=clause)


def _has(entity: Term, attribute: Term, clause: Any) -> Pattern:
    """``?e`` has ``:attr``: ``[?e :attr _]``; for a reverse ``:_attr`` (Datascript's
    ``(missing? $ ?e :_parent)``), something points at ``?e``: ``[_ :attr ?e]``."""
    if isinstance(attribute, Constant) and isinstance(attribute.value, Keyword):
        spec = named_attribute(attribute.value)
        if spec.reverse:
            return Pattern(Blank(), Constant(spec.attribute), entity, source=clause)
    return Pattern(entity, attribute, Blank(), source=clause)


def _get_some(entity: Term, attributes: list[Term], binding: Binding, clause: Any) -> Or:
    """``[(get-some $ ?e :a :b) [?attr ?v]]``: the first attribute ``?e`` has, with its value:
    one ``or-join`` branch per attribute, each requiring that the ones before are missing."""
    value = Variable("?get-some#v")
    join = variables_of((entity, *binding_terms(binding)))
    branches: list[tuple[Clause, ...]] = []
    for i, attribute in enumerate(attributes):
        missing = tuple(Not(None, (Pattern(entity, a, Blank(), source=clause),), source=clause)
                        for a in attributes[:i])
        branches.append((Pattern(entity, attribute, value, source=clause), *missing,
                         FnBinding("vector", (attribute, value), binding, source=clause)))
    return Or(join, tuple(branches), source=clause)


# binding = bind-scalar | bind-tuple | bind-coll | bind-rel   (Datascript's grammar: they nest)
# bind-scalar = variable | '_';  bind-tuple = [ binding+ ];  bind-coll = [ binding '...' ]
# bind-rel = [ [ binding+ ] ]   (a collection of tuples: [[?a ?b]] is [[?a ?b] ...])
def _parse_binding(form: Any, where: str) -> Binding:
    if not isinstance(form, list):
        return BindScalar(_parse_target(form, where))
    return _parse_nested(form, where)


def _parse_nested(form: list[Any], where: str) -> BindTuple | BindColl | BindRel:
    if len(form) == 2 and form[1] == DOTS:
        return BindColl(_parse_position(form[0], where))
    if len(form) == 1 and isinstance(form[0], list) and form[0]:
        return BindRel(tuple(_parse_position(t, where) for t in form[0]))
    if form:
        return BindTuple(tuple(_parse_position(t, where) for t in form))
    raise QueryError(f"{where}: {_show(form)} is not a binding form (?x, [?a ?b], [?x ...], "
                     "[[?a ?b]], nested)", form=form)


def _parse_position(form: Any, where: str) -> Target:
    return _parse_nested(form, where) if isinstance(form, list) else _parse_target(form, where)


def _parse_target(form: Any, where: str) -> Variable | Blank:
    if form == Symbol("_"):
        return Blank()
    variable = _parse_variable(form)
    if variable is None:
        raise QueryError(f"{where}: a binding names variables or _, got {_show(form)}",
                         form=form)
    return variable


# rules = [ [ (rule-name rule-vars) clause+ ]+ ]
# rule-vars = [variable+ | ([variable+] variable*)]   ([?p] ...: the caller must bind ?p)
def parse_rules(form: Any) -> tuple[Rule, ...]:
    """A rule set: given as the ``:rules`` section, or as the ``%`` input (EDN or forms)."""
    form = read(form, regex_literals=True) if isinstance(form, str) else intern(form)
    if not isinstance(form, list):
        raise QueryError(f"rules are a vector of rules [[(name ?x ...) clause+] ...], got "
                         f"{_show(form)}", form=form)
    return tuple(_parse_rule(rule, i) for i, rule in enumerate(form, 1))


def _parse_rule(rule: Any, position: int) -> Rule:
    where = f"rule {position} {_show(rule)}"
    head = rule[0] if isinstance(rule, list) and rule else None
    if not isinstance(head, tuple) or not head or not isinstance(head[0], Symbol) \
            or head[0].name.startswith("?"):
        raise QueryError(f"{where}: a rule is [(name ?var ...) clause+]", form=rule)
    required = head[1] if len(head) > 1 and isinstance(head[1], list) else None
    params = [*required, *head[2:]] if required is not None else list(head[1:])
    variables = [_parse_variable(p) for p in params]
    if any(v is None for v in variables) or required == []:
        wrong = next((p for p, v in zip(params, variables, strict=True) if v is None), head)
        raise QueryError(f"{where}: a rule head names variables — Cannot parse var, expected "
                         f"symbol starting with ?, got: {_show(wrong)}", form=head)
    if len(rule) < 2:
        raise QueryError(f"{where}: a rule needs at least one clause", form=rule)
    return Rule(head[0].name, tuple(v for v in variables if v is not None),
                _parse_clauses(rule[1:], f"{where}, clause "), source=rule,
                required=tuple(range(len(required or ()))))


# data-pattern = [ src-var? (variable | constant | '_'){1,3} ]
def _parse_pattern(clause: list[Any], where: str) -> Pattern | None:
    elements = clause[1:] if clause and clause[0] == SOURCE else clause
    if len(elements) in (4, 5):
        raise QueryError(f"{where}: the transaction position (4th element) is not supported"
                         + (" nor the added flag (5th)" if len(elements) == 5 else ""),
                         code=ErrorCode.QUERY_UNSUPPORTED, form=clause)
    if not 1 <= len(elements) <= 3:
        return None
    terms = [_parse_term(element, where) for element in elements]
    terms += [Blank()] * (3 - len(terms))
    return Pattern(terms[0], terms[1], terms[2], source=clause)


def _parse_term(element: Any, where: str) -> Term:
    if element == Symbol("_"):
        return Blank()
    variable = _parse_variable(element)
    if variable is not None:
        return variable
    if isinstance(element, Symbol):
        raise QueryError(f"{where}: {element.name} is not allowed in a data pattern "
                         "(only the default source $ is supported)", form=element,
                         code=ErrorCode.QUERY_UNSUPPORTED if element.name.startswith("$")
                         else None)
    if isinstance(element, list):
        if is_lookup_ref(element):  # joined in by workers.datalog.lookup_refs
            return Constant(LookupRef(element[0], element[1]))
        raise QueryError(f"{where}: {_show(element)} in a data pattern (a tuple value) is not "
                         "supported; a lookup ref is [attribute value]",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=element)
    if element is None:
        raise QueryError(f"{where}: nil in a data pattern is not supported: no datom holds "
                         "nil (use [(missing? $ ?e :attr)] for an absent attribute)",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=element)
    if isinstance(element, tuple | Mapping | frozenset):
        raise QueryError(f"{where}: {_show(element)} is not a valid pattern constant",
                         form=element)
    return Constant(element)


def is_lookup_ref(value: Any) -> bool:
    """``[:name "Ivan"]``: an attribute and a value, as Datomic names an entity by them."""
    return (isinstance(value, list | tuple) and len(value) == 2
            and isinstance(value[0], Keyword) and is_value(value[1]))


def _parse_argument(element: Any, where: str) -> Term:
    """A function argument: a variable or any constant, collections included."""
    variable = _parse_variable(element)
    if variable is not None:
        return variable
    if isinstance(element, Symbol) and element.name.startswith("$"):
        raise QueryError(f"{where}: a database ({element.name}) as a function argument is not "
                         "supported: built-ins take values (get-else and missing? excepted)",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=element)
    if isinstance(element, Symbol):
        raise QueryError(f"{where}: {_show(element)} is not a variable or a constant",
                         form=element)
    if isinstance(element, tuple):
        raise QueryError(f"{where}: nested calls such as {_show(element)} are not supported; "
                         "bind the inner call to a variable first",
                         code=ErrorCode.QUERY_UNSUPPORTED, form=element)
    return Constant(frozen(element))


def frozen(value: Any) -> Any:
    """Collection constants become tuples and immutable maps so plans can hash them (a map
    stays a map: ``get`` and ``contains?`` read it)."""
    if isinstance(value, list):
        return tuple(frozen(x) for x in value)
    if isinstance(value, Mapping):
        return ImmutableDict({k: frozen(v) for k, v in value.items()})
    return value


def _parse_variable(element: Any) -> Variable | None:
    """``?x`` or a plain symbol such as ``name`` (as XTDB accepts); not ``_``, ``$``, ``%``."""
    if not isinstance(element, Symbol) or isinstance(element, edn_format.Keyword):
        return None
    name = element.name
    if name in ("_", ".", "...") or name.startswith(("$", "%")):
        return None
    return Variable(name)
