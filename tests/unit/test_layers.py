"""The import layers of ``workers``: no import runs upward, no module imports itself round.

Each entry of ``LAYERS`` is one layer, lowest first; its names are packages (``zset``) or
top-level modules (``config``) of ``workers``.  The rule, checked on every module's source
(parsed, never imported):

1. A module may import modules of its own package and of packages in *lower* layers — never
   of a higher layer, nor of another package in its own layer (peers stay independent:
   ``find`` and ``pull`` are two stages after the join; neither knows the other).
2. No cycle among modules, inside a package or across packages.

Every import counts: at the top of a module, inside a function (a lazy import is still a
dependency) and under ``if TYPE_CHECKING:`` (a type is still a dependency; the circle
``datalog.ast`` ↔ ``datalog.pull`` was one).  The one arrow allowed upward is in
``ALLOWED``, with its reason.  ``docs/layout.md`` ("Import layers") says the same in prose.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "workers"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("edn", "logs", "progress", "collector", "metrics"),  # leaves: stdlib and libraries only
    ("zset",),  # Z-sets, the operators over them, the kind-aware row
    ("arrangements",),  # the tries every query shares (datom columns, the spine)
    ("db",),  # transactions → the effective delta (bulk loads write arrangement columns)
    ("datalog",),  # EDN query → checked AST
    ("plan",),  # AST → plan IR (index keys name arrangement orders)
    ("find", "pull"),  # the :find stage; pulled maps (Spark's tasks read pulled maps)
    ("executors",),  # joins over the arrangements, local and on Spark
    ("database",),  # where the datoms live (memory, Spark's state) and its replication
    ("engine", "config"),  # the embedding API; the worker's settings
    ("kafka",),  # records, topics, clients; they take their settings from config
    ("runtime", "sinks"),  # the worker; the PostgreSQL sink
    ("testing",),  # the oracle, and fakes of the worker's Kafka (they implement runtime's ports)
    ("demo",),
    ("cli",),
    ("__main__",),
)

# (importer, imported) module pairs allowed to break the rule, with the reason.
ALLOWED = {
    # The package's facade: ``workers.Engine`` imports the engine on first use (__getattr__),
    # so that ``import workers.edn`` does not pay for it.
    ("workers", "workers.engine"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports(name: str) -> Iterator[tuple[str, int]]:
    """The ``workers`` modules ``name`` imports, anywhere in its source, with their lines;
    ``from package import module`` names the module, not the package."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                yield (sub if sub in MODULES else source), node.lineno


def graph() -> dict[str, set[str]]:
    return {name: {target for target, _ in imports(name) if target in MODULES}
            for name in MODULES}


def unit(name: str) -> str:
    """The layer's name for a module: its package under ``workers`` (or the module itself)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else name


RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def test_every_package_has_a_layer() -> None:
    units = {unit(name) for name in MODULES} - {"workers"}
    assert units - RANK.keys() == set(), "place a new package or module in LAYERS"
    assert RANK.keys() - units == set(), "LAYERS names a package that does not exist"


def upward(name: str) -> set[str]:
    """``file:line: importer imports imported`` for each import of ``name`` the rule refuses."""
    found = set()
    for target, line in imports(name):
        if target not in MODULES or (name, target) in ALLOWED or name == "workers":
            continue
        a, b = unit(name), unit(target)
        if a != b and (b == "workers" or RANK[b] >= RANK[a]):
            found.add(f"{MODULES[name].relative_to(ROOT.parent)}:{line}: {name} imports {target}")
    return found


def test_no_import_runs_upward() -> None:
    """Between packages this is also "no cycle": a strict order of layers has none."""
    assert sorted(line for name in MODULES for line in upward(name)) == []


def test_the_facade_imports_only_what_allowed_says() -> None:
    assert {("workers", t) for t, _ in imports("workers") if t in MODULES} <= ALLOWED


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            component.append(v)
            if len(component) > 1 or v in edges[v]:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_round() -> None:
    edges = graph()
    edges = {name: targets - {t for t in targets if (name, t) in ALLOWED}
             for name, targets in edges.items()}
    assert cycles(edges) == []


@pytest.mark.parametrize(("edges", "expected"), [
    ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"a"}}, [["a"]]),
], ids=["two-circle", "chain", "self"])
def test_cycles_finds_circles(edges: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(edges) == expected
