"""Pull patterns (Datomic's pull grammar) → frozen specs; the ``(pull ?e pattern)`` element.

A pull pattern says which part of the entity graph around one entity a query row carries
(https://docs.datomic.com/query/query-pull.html).  Parsed once, it is plain data the pull
reader (:mod:`workers.pull`) walks; it takes part in the query's equality, so two queries
pulling the same pattern compare equal.  A recursive map spec (``{:friend ...}``,
``{:friend 2}``) pulls the entities it references with the pattern it is part of.  The
specs themselves (``PullPattern``, ``AttrSpec``) are AST nodes, in
:mod:`workers.datalog.ast`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from edn_format import ImmutableDict, ImmutableList, Symbol

from workers.datalog.ast import AttrSpec, Pull, PullPattern
from workers.edn import Keyword, keyword, read
from workers.edn import show as _show
from workers.errors import ErrorCode, QueryError
from workers.zset.row import typed

DB_ID = keyword("db/id")
AS, LIMIT, DEFAULT = keyword("as"), keyword("limit"), keyword("default")
WILDCARD = ("*", Symbol("*"))
RECURSION = Symbol("...")


# pull-expr = (pull src-var? variable (pattern | pattern-variable))   (src-var: Datascript)
def parse_pull(element: tuple[Any, ...], where: str, variable: Any) -> Pull:
    """``(pull ?e [...])``, ``(pull $ ?e [...])`` or ``(pull ?e ?pattern)``; ``variable``
    parses a variable (the query parser's, passed in to keep one definition of what a
    variable is)."""
    if len(element) == 4 and isinstance(element[1], Symbol) and element[1].name.startswith("$"):
        if element[1].name != "$":
            raise QueryError(f"{where}: pull from a source other than $ is not supported: "
                             f"{_show(element)}", code=ErrorCode.QUERY_UNSUPPORTED,
                             form=element)
        element = (element[0], *element[2:])
    if len(element) != 3 or (var := variable(element[1])) is None:
        raise QueryError(f"{where}: expected (pull ?e [pattern]), got {_show(element)}",
                         form=element)
    pattern = variable(element[2])
    return Pull(var, pattern if pattern is not None else parse_pattern(element[2], where),
                source=element)


# pattern = [ attr-spec+ ]
# attr-spec = attr-name | wildcard | map-spec | attr-with-opts | attr-expr
def parse_pattern(form: Any, where: str = "pull pattern") -> PullPattern:
    """A pattern as written in a query, or given as an ``:in`` value (forms or EDN text)."""
    if isinstance(form, str):
        form = read(form)
    if not isinstance(form, list) or not form:
        raise QueryError(f"{where}: a pull pattern is a vector [attr-spec+], got "
                         f"{_show(form)}", form=form)
    wildcard, specs = False, []
    for spec in form:
        if spec in WILDCARD:
            wildcard = True
        elif isinstance(spec, Mapping):
            specs += [_parse_map_entry(k, v, where) for k, v in spec.items()]
        else:
            specs.append(_parse_attr(spec, where))
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise QueryError(f"{where}: {_show(form)} names a key twice", form=form)
    return PullPattern(wildcard, tuple(specs))


# map-spec = { ((attr-name | attr-with-opts | attr-expr) (pattern | recursion-limit))+ }
# recursion-limit = positive-number | '...
def _parse_map_entry(key: Any, value: Any, where: str) -> AttrSpec:
    spec = _parse_attr(key, where)
    if value == RECURSION:
        return replace(spec, recursive=True)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise QueryError(f"{where}: a recursion limit is a positive number or ..., got "
                             f"{{{_show(key)} {_show(value)}}}", form=value)
        return replace(spec, recursive=True, recursion=value)
    return replace(spec, pattern=parse_pattern(value, where))


# attr-name = keyword;  attr-with-opts = [attr-name attr-option+]
# attr-option = :as any-value | :limit (positive-number | nil) | :default any-value
# attr-expr = ("limit" | 'limit') attr-name (positive-number | nil)
#           | ("default" | 'default') attr-name any-value            (as a list or a vector)
def _parse_attr(form: Any, where: str) -> AttrSpec:
    if isinstance(form, Keyword):
        return named_attribute(form)
    if isinstance(form, list | tuple) and form:
        head = form[0]
        name = head.name if isinstance(head, Symbol) and not isinstance(head, Keyword) else head
        if name in ("limit", "default") and len(form) == 3:
            return _with_options(form[1], [LIMIT if name == "limit" else DEFAULT, form[2]],
                                 form, where)
        if isinstance(head, Keyword):
            return _with_options(head, list(form[1:]), form, where)
    raise QueryError(f"{where}: {_show(form)} is not an attribute spec (:attr, [:attr "
                     ":as x :limit n :default v], (limit :attr n), (default :attr v), * "
                     "or {:attr [pattern]})", form=form)


def named_attribute(attribute: Keyword) -> AttrSpec:
    """``:ns/_name`` is the reverse of ``:ns/name``; the key keeps the spelling."""
    namespace, slash, name = attribute.name.rpartition("/")
    if name.startswith("_") and len(name) > 1:
        return AttrSpec(keyword(f"{namespace}{slash}{name[1:]}"), True, attribute)
    return AttrSpec(attribute, False, attribute)


def _with_options(attribute: Any, options: list[Any], form: Any, where: str) -> AttrSpec:
    if not isinstance(attribute, Keyword) or not options or len(options) % 2:
        raise QueryError(f"{where}: expected [:attr option value ...], got {_show(form)}",
                         form=form)
    spec = named_attribute(attribute)
    key, limit, has_default, default = spec.key, spec.limit, False, None
    for option, value in zip(options[::2], options[1::2], strict=True):
        if option == AS:
            key = frozen(value)
        elif option == LIMIT:
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise QueryError(f"{where}: :limit takes a positive number or nil, got "
                                 f"{_show(value)}", form=form)
            limit = value
        elif option == DEFAULT:
            has_default, default = True, frozen(value)
        else:
            raise QueryError(f"{where}: unknown attribute option {_show(option)} in "
                             f"{_show(form)}; expected :as, :limit or :default", form=form)
    return AttrSpec(spec.attribute, spec.reverse, key, limit, has_default, default)


class PulledMap(ImmutableDict):  # type: ignore[misc]
    """An immutable, hashable map that prints as EDN and equals another only when their
    values are equal *and of one kind*: ``{:x 1}``, ``{:x 1.0}`` and ``{:x true}`` are three
    maps, as ``1``, ``1.0`` and ``true`` are three values (``docs/semantics.md``) — Python
    finds them equal, which would hide a change from 1 to true and merge two rows.  It still
    equals a plain dict with the same items, for callers that compare with one."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PulledMap):
            return bool(typed(self) == typed(other))
        return bool(ImmutableDict.__eq__(self, other))

    def __hash__(self) -> int:
        if self.hash is None:  # ImmutableDict's cache
            self.hash: int | None = hash(typed(self))
        return self.hash


def frozen(value: Any) -> Any:
    """A value as a pulled map holds it: hashable, vectors as ``ImmutableList`` and maps as
    :class:`PulledMap` (both print as EDN and compare equal to lists and dicts)."""
    if isinstance(value, list | tuple):
        return ImmutableList([frozen(x) for x in value])
    if isinstance(value, Mapping):
        return PulledMap({frozen(k): frozen(v) for k, v in value.items()})
    if isinstance(value, set | frozenset):
        return frozenset(frozen(x) for x in value)
    return value
