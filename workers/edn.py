"""Thin adapter over ``edn_format``: parse text, intern keywords, print forms.

``edn_format.Keyword`` recomputes its hash through an ``ImmutableDict`` on every dict lookup
(~1.4 µs).  Attributes are dict keys on the hot path, so every keyword that enters the engine
is replaced by an interned :class:`Keyword` subclass with a cached hash.  It stays an
``edn_format.Keyword`` (same ``__dict__``, same hash), so user code that compares with or
looks up by plain ``edn_format`` keywords still works.
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import edn_format
from edn_format import Symbol
from edn_format.immutable_dict import ImmutableDict
from edn_format.immutable_list import ImmutableList

from workers.errors import EdnSyntaxError

__all__ = ["Keyword", "Symbol", "dumps", "intern", "keyword", "read", "read_all", "show"]
# Held by a process's first parse (below); one file for every process of the machine.
TABLES_LOCK = Path(tempfile.gettempdir()) / "deltalog-edn-tables.lock"


def _write_parser_tables() -> None:
    """edn_format's parser (PLY) writes its tables into its package at its first parse and
    imports them back; two processes parsing for the first time at once can import the
    other's half-written file (a fresh install's two test workers did: ``module
    'edn_format.parsetab' has no attribute '_tabversion'``).  So each process parses once at
    import under a lock: the first writes the tables whole, the others read them."""
    with ExitStack() as held:
        with suppress(OSError):  # no writable temporary directory: no lock, parse anyway
            fcntl.flock(held.enter_context(open(TABLES_LOCK, "a")), fcntl.LOCK_EX)
        edn_format.loads("nil")


_write_parser_tables()


class Keyword(edn_format.Keyword):
    """An interned ``edn_format.Keyword`` whose hash is computed once."""

    __slots__ = ("_hash",)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._hash = edn_format.Keyword.__hash__(self)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        return isinstance(other, edn_format.Keyword) and other.name == self._name

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __reduce__(self) -> tuple[Any, ...]:
        return (keyword, (self._name,))


_KEYWORDS: dict[str, Keyword] = {}


def keyword(name: str) -> Keyword:
    """The one interned keyword called ``name`` (without the leading colon)."""
    found = _KEYWORDS.get(name)
    if found is None:
        found = _KEYWORDS[name] = Keyword(name)
    return found


def intern(form: Any) -> Any:
    """Return ``form`` with every keyword interned; other values are returned as they are.

    Vectors come back as lists and EDN lists as tuples (the query grammar tells them apart:
    ``[?e :a ?v]`` is a pattern, ``(not ...)`` a clause); sets as frozensets, maps as dicts.
    """
    if isinstance(form, edn_format.Keyword):
        return form if type(form) is Keyword else keyword(form.name)
    if isinstance(form, str | int | float | Symbol) or form is None:
        return form
    if isinstance(form, Mapping):
        return {_intern_hashable(k): intern(v) for k, v in form.items()}
    if isinstance(form, frozenset | set):
        return frozenset(_intern_hashable(x) for x in form)
    if isinstance(form, tuple):
        return tuple(intern(x) for x in form)
    if isinstance(form, Sequence):
        return [intern(x) for x in form]
    return form


def _intern_hashable(form: Any) -> Any:
    """Interned, but still hashable: set elements and map keys keep immutable collections."""
    if isinstance(form, ImmutableDict):
        return ImmutableDict({_intern_hashable(k): _intern_hashable(v) for k, v in form.items()})
    if isinstance(form, ImmutableList):
        return ImmutableList([_intern_hashable(x) for x in form])
    if isinstance(form, tuple):
        return tuple(_intern_hashable(x) for x in form)
    return intern(form)


def read(text: str, regex_literals: bool = False) -> Any:
    """Parse one EDN form with interned keywords; syntax errors name the text.

    ``regex_literals``: also read Clojure's ``#"pattern"`` (not EDN; queries copied from
    Clojure code use it), as the string of its pattern."""
    if not text.strip():
        raise EdnSyntaxError("cannot parse EDN: the text is empty", form=text)
    try:
        return intern(edn_format.loads(_regex_as_string(text) if regex_literals else text))
    except (edn_format.EDNDecodeError, NotImplementedError, ValueError, TypeError) as err:
        raise EdnSyntaxError(f"cannot parse EDN ({err}): {_excerpt(text)}", form=text) from err


def read_all(text: str) -> list[Any]:
    """Parse every top-level EDN form in ``text`` (several times faster than ``read`` per form)."""
    try:
        return [intern(form) for form in edn_format.loads_all(text)]
    except (edn_format.EDNDecodeError, NotImplementedError, ValueError, TypeError) as err:
        raise EdnSyntaxError(f"cannot parse EDN ({err}): {_excerpt(text)}", form=text) from err


def _regex_as_string(text: str) -> str:
    r"""``text`` with each Clojure regex literal ``#"..."`` replaced by the EDN string of its
    pattern.  Clojure keeps a regex literal's backslashes as written (``#"\d"`` is the
    pattern ``\d``; ``\"`` escapes a quote), so they are escaped for EDN.  Strings,
    comments and character literals (``\"``) are copied unchanged."""
    if '#"' not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == '"' or text.startswith('#"', i):
            start = i + (2 if char == "#" else 1)
            end = _closing_quote(text, start)
            if char == '"':
                out.append(text[i:end + 1])
            else:
                pattern = text[start:end]
                out.append('"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"')
            i = end + 1
        elif char == ";":
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            out.append(text[i:end])
            i = end
        else:
            step = 2 if char == "\\" else 1  # a character literal: \" is not a quote
            out.append(text[i:i + step])
            i += step
    return "".join(out)


def _closing_quote(text: str, start: int) -> int:
    """The index of the ``"`` closing a string or regex whose text starts at ``start``."""
    i = start
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i


def dumps(form: Any) -> str:
    """EDN text of a value or result row (tuples print as vectors)."""
    return str(edn_format.dumps(_as_vectors(form)))


def show(form: Any) -> str:
    """EDN text of a form as written (vectors as ``[...]``, lists as ``(...)``), for messages."""
    try:
        return str(edn_format.dumps(form))
    except Exception:
        return repr(form)


def _as_vectors(form: Any) -> Any:
    if isinstance(form, tuple | list):
        return [_as_vectors(x) for x in form]
    return form


def _excerpt(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
