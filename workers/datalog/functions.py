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
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import edn_format

from workers.db.values import LONG_MAX, LONG_MIN
from workers.edn import keyword

Function = Callable[..., Any]
NAMESPACES = ("clojure.core/", "clojure.string/")
ALIASES = {"!=": "not=", "==": "=", "re-pattern": "identity"}


def canonical(name: str) -> str:
    """``clojure.string/starts-with?`` → ``starts-with?``; ``!=`` → ``not=``."""
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


def sort_key(x: Any) -> tuple[int, Any]:
    """Order for ``min``/``max`` over mixed values: by kind, then within the kind."""
    return _rank(x)


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
    match = re.search(pattern, text)
    if match is None:
        return None
    return match.group(0) if not match.groups() else (match.group(0), *match.groups())


def _re_matches(pattern: Any, text: str) -> Any:
    _strings(text)
    match = re.fullmatch(pattern, text)
    if match is None:
        return None
    return match.group(0) if not match.groups() else (match.group(0), *match.groups())


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
    if isinstance(x, str | tuple | list | frozenset | set | dict):
        return len(x)
    raise TypeError("count of a non-collection")


def _extreme(pick: Callable[..., Any]) -> Function:
    def extreme(*xs: Any) -> Any:
        _numbers(*xs)
        return pick(xs)
    return extreme


PREDICATES: dict[str, Function] = {
    "=": lambda *xs: all(x == xs[0] for x in xs),
    "not=": lambda *xs: not all(x == xs[0] for x in xs),
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
    "count": _count,
    "name": lambda k: k.name if isinstance(k, edn_format.Keyword) else _string(k),
    "keyword": lambda s: keyword(_string(s)),
    "re-find": _re_find,
    "re-matches": _re_matches,
    "vector": lambda *xs: tuple(xs),
    "tuple": lambda *xs: tuple(xs),
    "untuple": lambda xs: xs,
}


def truthy(value: Any) -> bool:
    """Clojure truth: everything but ``nil`` and ``false``."""
    return value is not None and value is not False
