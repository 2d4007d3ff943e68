"""The benchmark queries as data: one `Spec` per query, rendered to EDN for deltalog and
translated from the same data for every peer (SQL, Cypher, dataflow join chains).

Graph queries read `[?x :g/to ?y]` edges; the people queries read entity-centric facts
(`bench.data.people_facts`); `tc` is the transitive closure rule of `bench.engine.closure`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.data import PEOPLE_HOT_AGE, PEOPLE_HOT_CITY

Term = str | int  # a variable name without the leading "?", or an integer constant
Clause = tuple[Term, str, Term]  # [entity attribute value]; attribute without the ":"

TO = "g/to"
CLOSURE_RULES = "[[(reach ?a ?b) [?a :g/to ?b]] [(reach ?a ?b) [?a :g/to ?c] (reach ?c ?b)]]"
CLOSURE_QUERY = "[:find ?a ?b :in $ % :where (reach ?a ?b)]"


@dataclass(frozen=True)
class Spec:
    """A conjunctive query over binary facts, or (`closure` set) the transitive closure of
    one attribute. Every variable of `find` occurs in `where`."""

    find: tuple[str, ...]
    where: tuple[Clause, ...] = ()
    closure: str | None = None

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attributes the query reads, in first-use order."""
        if self.closure is not None:
            return (self.closure,)
        return tuple(dict.fromkeys(a for _, a, _ in self.where))

    @property
    def projects(self) -> bool:
        """Whether some body variable is not in `find` (a bag join then needs `distinct`)."""
        body = {t for e, _, v in self.where for t in (e, v) if isinstance(t, str)}
        return bool(body - set(self.find))


def graph(find: str, *edges: str) -> Spec:
    """A graph query from one-letter variables: graph("abc", "ab", "ac", "bc")."""
    return Spec(tuple(find), tuple((e[0], TO, e[1]) for e in edges))


SPECS: dict[str, Spec] = {
    "triangle": graph("abc", "ab", "ac", "bc"),
    "4cycle": graph("abcd", "ab", "bc", "cd", "da"),
    "2path": graph("ac", "ab", "bc"),
    "4clique": graph("abcd", "ab", "ac", "ad", "bc", "bd", "cd"),
    # people of the hottest city, aged 30, with their employers and friends
    "star": Spec(
        ("p", "e", "f"),
        (
            ("p", "person/city", PEOPLE_HOT_CITY),
            ("p", "person/age", PEOPLE_HOT_AGE),
            ("p", "person/employer", "e"),
            ("p", "person/friend", "f"),
        ),
    ),
    # people working in their home city for a company that also employs one of their friends
    "entity5": Spec(
        ("p", "f", "e", "c"),
        (
            ("p", "person/city", "c"),
            ("p", "person/employer", "e"),
            ("e", "company/city", "c"),
            ("p", "person/friend", "f"),
            ("f", "person/employer", "e"),
        ),
    ),
    "tc": Spec(("a", "b"), closure=TO),
}
GRAPH_QUERIES = ("triangle", "4cycle", "2path", "4clique")
PEOPLE_QUERIES = ("star", "entity5")
MEMORY_KINDS = ("triangle", "4cycle", "2path")  # the memory scenario's query mix


def render(spec: Spec, suffix: str = "", constant: tuple[str, int] | None = None) -> str:
    """EDN text of a conjunctive `spec`, variables suffixed, one variable optionally a constant."""

    def term(t: Term) -> str:
        if isinstance(t, int):
            return str(t)
        if constant is not None and t == constant[0]:
            return str(constant[1])
        return f"?{t}{suffix}"

    find = " ".join(term(v) for v in spec.find if constant is None or v != constant[0])
    where = " ".join(f"[{term(e)} :{a} {term(v)}]" for e, a, v in spec.where)
    return f"{{:find [{find}] :where [{where}]}}"


def edn(name: str) -> tuple[str, tuple[str, ...]]:
    """The EDN text of query `name` and its `:in` inputs (the rules of `tc`)."""
    spec = SPECS[name]
    if spec.closure is not None:
        return CLOSURE_QUERY, (CLOSURE_RULES,)
    return render(spec), ()


QUERIES: dict[str, str] = {
    name: render(spec) for name, spec in SPECS.items() if spec.closure is None
}


def variants(count: int, constants: list[int]) -> dict[str, str]:
    """`count` distinct queries cycling triangle/4-cycle/2-path.

    Even rounds rename the variables; odd rounds also fix one find variable (cycling over
    positions) to a node id from `constants`. Variant 0 is the triangle with renamed variables.
    """
    queries: dict[str, str] = {}
    for i in range(count):
        kind = MEMORY_KINDS[i % len(MEMORY_KINDS)]
        spec = SPECS[kind]
        round_ = i // len(MEMORY_KINDS)
        constant = None
        if round_ % 2:
            var = spec.find[(round_ // 2) % len(spec.find)]
            constant = (var, constants[round_ // 2 % len(constants)])
        queries[f"{kind}-{i}"] = render(spec, suffix=str(i), constant=constant)
    return queries
