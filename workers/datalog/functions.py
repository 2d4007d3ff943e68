"""The built-in predicates and functions a query may call: an allowlist, never ``eval``.

Semantics follow Clojure/Datomic where Python differs, with one rule for failures: a call
that cannot be evaluated on its arguments (a type mismatch, a division by zero, ``<`` between
a string and a number) is *false* as a predicate and *binds nothing* as a function.  A
standing query must not stop on one odd value; Datomic would throw for the whole query.
"""

from __future__ import annotations

import datetime
import itertools
import math
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

import edn_format
from edn_format.immutable_dict import ImmutableDict

from workers.db.values import LONG_MAX, LONG_MIN
from workers.edn import dumps, keyword
from workers.zset.row import ValueSet, same

Function = Callable[..., Any]
NAMESPACES = ("clojure.core/", "clojure.string/")
ALIASES = {"!=": "not="}
# Built-ins Datomic has that cannot be kept live: a standing query's rows would change with
# no datom changing, and a replay would not reproduce the change stream.
NONDETERMINISTIC = ("rand", "rand-int", "rand-nth", "shuffle", "random-uuid")


def canonical(name: str) -> str:
    """``clojure.string/starts-with?`` → ``starts-with?``; ``!=`` → ``not=``.  (``==`` is
    a function of its own: numeric equality, where ``=`` is Clojure's equality of values.)"""
    for namespace in NAMESPACES:
        if name.startswith(namespace):
            name = name[len(namespace):]
    return ALIASES.get(name, name)


class CallFailed(Exception):
    """A built-in could not be applied to these arguments (the row is dropped)."""


def call(fn: Function, args: Iterable[Any]) -> Any:
    """Apply a built-in; every Python error becomes :class:`CallFailed`."""
    try:
        return fn(*args)
    except (TypeError, ValueError, ZeroDivisionError, ArithmeticError, IndexError,
            re.error, AttributeError) as error:
        raise CallFailed(str(error)) from error


def _number(x: Any) -> bool:
    return isinstance(x, int | float | Decimal) and not isinstance(x, bool)


def _rank(x: Any) -> tuple[int, Any]:
    """A sort key comparing like with like: numbers, strings, keywords, instants, uuids."""
    if _number(x):
        return (0, x)
    if isinstance(x, str):
        return (1, x)
    if isinstance(x, edn_format.Keyword):
        return (2, keyword_order(x.name))
    if isinstance(x, datetime.datetime):
        return (3, x)
    if isinstance(x, uuid.UUID):
        return (4, x)
    if isinstance(x, bool):
        return (5, x)
    raise TypeError(f"{x!r} is not comparable")


def keyword_order(name: str) -> tuple[bool, str, str]:
    """Clojure's keyword order: namespace first (none before any), then name — so
    ``:a/b < :a-/b`` although the text ``"a-/b"`` sorts first.  Like ``clojure.lang.Symbol``,
    the namespace ends at the first ``/`` (``:/`` has none)."""
    namespace, slash, local = name.partition("/")
    if not slash or name == "/":
        return (False, "", name)
    return (True, namespace, local)


def _compare(test: Callable[[Any, Any], bool]) -> Function:
    def compare(*args: Any) -> bool:
        keys = [_rank(a) for a in args]
        if len({k[0] for k in keys}) > 1:
            raise TypeError("comparison of values of different types")
        return all(test(a[1], b[1]) for a, b in itertools.pairwise(keys))
    return compare


# Equal numbers of different kinds (``1``, ``1.0``, ``1M``) are different values: ``sort_key``
# orders them long first, so ``min``/``max``/``median`` do not depend on the order values came.
_NUMBER_KIND_ORDER = {int: 0, float: 1, Decimal: 2}


def sort_key(x: Any) -> tuple[Any, ...]:
    """Order for ``min``/``max`` over mixed values: by kind, then within the kind; a long
    before an equal double (``1`` before ``1.0``: a total order of the values)."""
    rank, value = _rank(x)
    return (rank, value, _NUMBER_KIND_ORDER.get(type(x), 0))


def _equal(*xs: Any) -> bool:
    """Clojure's ``=``: values of one kind and equal (``(= 1 1.0)``, ``(= 1 true)`` false)."""
    return all(same(x, xs[0]) for x in xs)


def _numerically_equal(*xs: Any) -> bool:
    """Clojure's ``==``: numbers of any kind with equal values (``(== 1 1.0)`` true); not a
    number (a boolean included) fails the call."""
    _numbers(*xs)
    return all(x == xs[0] for x in xs)


def _long(x: Any) -> Any:
    if isinstance(x, int) and not LONG_MIN <= x <= LONG_MAX:
        raise ArithmeticError("long overflow")
    return x


def _numbers(*xs: Any) -> None:
    if not all(_number(x) for x in xs):
        raise TypeError("arithmetic on a non-number")


def _add(*xs: Any) -> Any:
    _numbers(*xs)
    return _long(sum(xs))


def _sub(x: Any, *xs: Any) -> Any:
    _numbers(x, *xs)
    return _long(x - sum(xs) if xs else -x)


def _mul(*xs: Any) -> Any:
    _numbers(*xs)
    return _long(math.prod(xs))


def _div(x: Any, *xs: Any) -> Any:
    """Longs divide exactly when they can (Datomic gives a ratio; deltalog a double)."""
    _numbers(x, *xs)
    for y in xs or (x,):
        if xs:
            x = x // y if isinstance(x, int) and isinstance(y, int) and x % y == 0 else x / y
        else:
            x = 1 / y
    return x


def _quot(x: int, y: int) -> int:
    _numbers(x, y)
    return int(x / y) if isinstance(x, float) or isinstance(y, float) else \
        (abs(x) // abs(y)) * (1 if (x >= 0) == (y >= 0) else -1)


def _rem(x: int, y: int) -> int:
    return x - y * _quot(x, y)


def _mod(x: int, y: int) -> int:
    _numbers(x, y)
    return x % y


def _str(*xs: Any) -> str:
    return "".join(_text(x) for x in xs)


def _text(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, edn_format.Keyword):
        return f":{x.name}"
    if isinstance(x, str):
        return x
    return str(edn_format.dumps(x))


def _strings(*xs: Any) -> None:
    if not all(isinstance(x, str) for x in xs):
        raise TypeError("a string function on a non-string")


def _string(x: Any) -> str:
    _strings(x)
    return str(x)


def _re_find(pattern: Any, text: str) -> Any:
    _strings(text)
    match = _pattern(pattern).search(text)
    return None if match is None else _groups(match)


def _re_matches(pattern: Any, text: str) -> Any:
    _strings(text)
    match = _pattern(pattern).fullmatch(text)
    return None if match is None else _groups(match)


def _string_test(test: Callable[[str, str], bool]) -> Function:
    def check(text: str, part: str) -> bool:
        _strings(text, part)
        return test(text, part)
    return check


def _subs(text: str, start: int, end: int | None = None) -> str:
    _strings(text)
    stop = len(text) if end is None else end
    if not 0 <= start <= stop <= len(text):
        raise IndexError("subs out of range")
    return text[start:stop]


def _count(x: Any) -> int:
    if x is None:
        return 0
    if isinstance(x, str | tuple | list | frozenset | set | Mapping):
        return len(x)
    raise TypeError("count of a non-collection")


def _keyword_parts(k: edn_format.Keyword) -> tuple[str | None, str]:
    """``:a/b`` → ``("a", "b")``, ``:b`` → ``(None, "b")``: Clojure splits at the first slash."""
    namespace, slash, name = k.name.partition("/")
    return (namespace, name) if slash and namespace and name else (None, k.name)


def _name(x: Any) -> str:
    if isinstance(x, edn_format.Keyword):
        return _keyword_parts(x)[1]
    return _string(x)


def _namespace(k: Any) -> str | None:
    if not isinstance(k, edn_format.Keyword):
        raise TypeError("namespace of a non-keyword")
    return _keyword_parts(k)[0]


def _keyword(*parts: Any) -> Any:
    """``(keyword "a/b")``, ``(keyword "a" "b")``; a keyword stays itself, nil gives nil."""
    if len(parts) == 1 and (parts[0] is None or isinstance(parts[0], edn_format.Keyword)):
        return parts[0]
    if len(parts) == 2 and parts[0] is None:
        parts = parts[1:]
    _strings(*parts)
    return keyword("/".join(parts))


def _compare_values(a: Any, b: Any) -> int:
    """Clojure's ``compare``: nil first; strings by Java's ``compareTo`` (the first differing
    character's difference, else the length difference); -1, 0 or 1 otherwise."""
    if a is None or b is None:
        return (a is not None) - (b is not None)
    if isinstance(a, str) and isinstance(b, str):
        for x, y in zip(a, b, strict=False):
            if x != y:
                return ord(x) - ord(y)
        return len(a) - len(b)
    (kind_a, key_a), (kind_b, key_b) = _rank(a), _rank(b)
    if kind_a != kind_b:
        raise TypeError("comparison of values of different types")
    return (key_a > key_b) - (key_a < key_b)


def _pattern(pattern: Any) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    _strings(pattern)
    return re.compile(pattern)


def _groups(match: re.Match[str]) -> Any:
    """A match as Clojure returns it: the text, or a vector of the text and its groups."""
    return match.group(0) if not match.groups() else (match.group(0), *match.groups())


def _re_seq(pattern: Any, text: str) -> Any:
    _strings(text)
    found = tuple(_groups(m) for m in _pattern(pattern).finditer(text))
    return found or None


def _replace(text: str, match: Any, replacement: str, count: int = 0) -> str:
    """A string ``match`` is replaced literally; a pattern as a regex whose replacement names
    groups ``$1`` (Java's syntax)."""
    _strings(text, replacement)
    if isinstance(match, re.Pattern):
        template = re.sub(r"\$(\d+)", r"\\g<\1>", replacement.replace("\\", "\\\\"))
        return match.sub(template, text, count=count)
    _strings(match)
    return text.replace(match, replacement, count or -1)


def _split(text: str, pattern: Any, limit: int = 0) -> tuple[str, ...]:
    """Java's ``split``: trailing empty strings go unless a limit is given."""
    _strings(text)
    parts = _pattern(pattern).split(text, maxsplit=max(limit - 1, 0))
    if limit == 0:
        while len(parts) > 1 and parts[-1] == "":
            parts.pop()
    return tuple(parts)


def _join(*args: Any) -> str:
    """``(join coll)`` or ``(join separator coll)``."""
    separator, items = ("", args[0]) if len(args) == 1 else args
    if not isinstance(items, tuple | list | frozenset | set):
        raise TypeError("join of a non-collection")
    return _string(separator).join(_text(x) for x in items)


def _index_of(text: str, part: str, start: int = 0) -> int | None:
    _strings(text, part)
    found = text.find(part, start)
    return None if found < 0 else found


def _last_index_of(text: str, part: str, *start: int) -> int | None:
    _strings(text, part)
    found = text.rfind(part, 0, start[0] + len(part)) if start else text.rfind(part)
    return None if found < 0 else found


def _capitalize(text: str) -> str:
    _strings(text)
    return text[:1].upper() + text[1:].lower()


def _pr(x: Any) -> str:
    """``pr-str`` of one value: EDN, strings quoted, nil as ``nil``."""
    if isinstance(x, re.Pattern):
        return f'#"{x.pattern}"'
    return dumps(x)


def _print(xs: tuple[Any, ...]) -> str:
    """``print-str``: as ``str`` prints each value, but nil as ``nil``, space-separated."""
    return " ".join("nil" if x is None else _text(x) for x in xs)


def _elements(x: Any) -> tuple[Any, ...]:
    """A collection's elements for ``set``/``vec``: a map's are its ``[key value]`` pairs."""
    if isinstance(x, Mapping):
        return tuple(x.items())
    if isinstance(x, tuple | list | frozenset | set):
        return tuple(x)
    raise TypeError("not a collection")


def _get(coll: Any, key: Any, default: Any = None) -> Any:
    """Clojure's ``get``: a map's value, a vector's element, a set's member; else default."""
    if isinstance(coll, Mapping):
        return coll.get(key, default)
    if isinstance(coll, frozenset | set):
        return key if key in coll else default
    if isinstance(coll, tuple | list | str) and isinstance(key, int) and \
            not isinstance(key, bool) and 0 <= key < len(coll):
        return coll[key]
    return default


def _contains(coll: Any, key: Any) -> bool:
    if coll is None:
        return False
    if isinstance(coll, Mapping | frozenset | set):
        return key in coll
    if isinstance(coll, tuple | list | str):
        return isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(coll)
    raise TypeError("contains? on a non-collection")


def _range(*args: Any) -> tuple[Any, ...]:
    """``(range end)``, ``(range start end)``, ``(range start end step)`` — never infinite."""
    if not 1 <= len(args) <= 3:
        raise TypeError("range takes an end, a start and end, or a start, end and step")
    _numbers(*args)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    if all(isinstance(a, int) for a in (start, end, step)):
        return tuple(range(start, end, step))
    if step == 0:
        raise ValueError("range with a zero step")
    count = max(math.ceil((end - start) / step), 0)
    return tuple(start + i * step for i in range(count))


def _hash_map(*pairs: Any) -> ImmutableDict:
    if len(pairs) % 2:
        raise TypeError("hash-map takes keys and values in pairs")
    return ImmutableDict(dict(zip(pairs[::2], pairs[1::2], strict=True)))


def _extreme(pick: Callable[..., Any]) -> Function:
    def extreme(*xs: Any) -> Any:
        _numbers(*xs)
        return pick(xs)
    return extreme


PREDICATES: dict[str, Function] = {
    "=": _equal,
    "not=": lambda *xs: not _equal(*xs),
    "==": _numerically_equal,
    "<": _compare(lambda a, b: a < b),
    "<=": _compare(lambda a, b: a <= b),
    ">": _compare(lambda a, b: a > b),
    ">=": _compare(lambda a, b: a >= b),
    "string?": lambda x: isinstance(x, str),
    "number?": _number,
    "int?": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "integer?": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "float?": lambda x: isinstance(x, float),
    "keyword?": lambda x: isinstance(x, edn_format.Keyword),
    "boolean?": lambda x: isinstance(x, bool),
    "uuid?": lambda x: isinstance(x, uuid.UUID),
    "inst?": lambda x: isinstance(x, datetime.datetime),
    "nil?": lambda x: x is None,
    "some?": lambda x: x is not None,
    "true?": lambda x: x is True,
    "false?": lambda x: x is False,
    "zero?": lambda x: _compare(lambda a, b: a == b)(x, 0),
    "pos?": lambda x: _compare(lambda a, b: a > b)(x, 0),
    "neg?": lambda x: _compare(lambda a, b: a < b)(x, 0),
    "even?": lambda x: _mod(x, 2) == 0,
    "odd?": lambda x: _mod(x, 2) == 1,
    "re-find": lambda p, s: _re_find(p, s) is not None,
    "re-matches": lambda p, s: _re_matches(p, s) is not None,
    "starts-with?": _string_test(str.startswith),
    "ends-with?": _string_test(str.endswith),
    "includes?": _string_test(lambda text, part: part in text),
    "blank?": lambda s: s is None or (isinstance(s, str) and not s.strip()),
    "not": lambda x: not truthy(x),
    "empty?": lambda x: _count(x) == 0,
    "contains?": _contains,
    "coll?": lambda x: isinstance(x, tuple | list | frozenset | set | Mapping),
    "vector?": lambda x: isinstance(x, tuple | list),
    "set?": lambda x: isinstance(x, frozenset | set),
    "map?": lambda x: isinstance(x, Mapping),
}

FUNCTIONS: dict[str, Function] = {
    **PREDICATES,
    "ground": lambda x: x,
    "identity": lambda x: x,
    "+": _add,
    "-": _sub,
    "*": _mul,
    "/": _div,
    "quot": _quot,
    "rem": _rem,
    "mod": _mod,
    "inc": lambda x: _add(x, 1),
    "dec": lambda x: _sub(x, 1),
    "max": _extreme(max),
    "min": _extreme(min),
    "abs": _extreme(lambda xs: abs(xs[0])),
    "str": _str,
    "subs": _subs,
    "upper-case": lambda s: _string(s).upper(),
    "lower-case": lambda s: _string(s).lower(),
    "trim": lambda s: _string(s).strip(),
    "triml": lambda s: _string(s).lstrip(),
    "trimr": lambda s: _string(s).rstrip(),
    "trim-newline": lambda s: _string(s).rstrip("\r\n"),
    "capitalize": _capitalize,
    "reverse": lambda s: _string(s)[::-1],
    "join": _join,
    "split": _split,
    "split-lines": lambda s: _split(s, re.compile(r"\r?\n")),
    "replace": _replace,
    "replace-first": lambda s, match, replacement: _replace(s, match, replacement, 1),
    "index-of": _index_of,
    "last-index-of": _last_index_of,
    "count": _count,
    "name": _name,
    "namespace": _namespace,
    "keyword": _keyword,
    "compare": _compare_values,
    "re-find": _re_find,
    "re-matches": _re_matches,
    "re-seq": _re_seq,
    "re-pattern": _pattern,
    "pr-str": lambda *xs: " ".join(_pr(x) for x in xs),
    "prn-str": lambda *xs: " ".join(_pr(x) for x in xs) + "\n",
    "print-str": lambda *xs: _print(xs),
    "println-str": lambda *xs: _print(xs) + "\n",
    "get": _get,
    "vector": lambda *xs: tuple(xs),
    "list": lambda *xs: tuple(xs),
    "tuple": lambda *xs: tuple(xs),
    "untuple": lambda xs: xs,
    "set": lambda xs: ValueSet(_elements(xs)),
    "vec": _elements,
    "hash-map": _hash_map,
    "not-empty": lambda x: x if _count(x) else None,
    "range": _range,
}


def truthy(value: Any) -> bool:
    """Clojure truth: everything but ``nil`` and ``false``."""
    return value is not None and value is not False
