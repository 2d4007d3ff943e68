"""EDN text of the benchmark queries over :g/to, and variants for the many-queries scenario."""

from __future__ import annotations

Clause = tuple[str, str]
Template = tuple[tuple[str, ...], tuple[Clause, ...]]

# name -> (find variables, where clauses [?e :g/to ?v]), variables without the leading "?"
TEMPLATES: dict[str, Template] = {
    "triangle": (("a", "b", "c"), (("a", "b"), ("a", "c"), ("b", "c"))),
    "4cycle": (("a", "b", "c", "d"), (("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"))),
    "2path": (("a", "c"), (("a", "b"), ("b", "c"))),
}


def render(template: Template, suffix: str = "", constant: tuple[str, int] | None = None) -> str:
    """EDN query text for `template`, variables suffixed, one variable optionally a constant."""

    def term(var: str) -> str:
        if constant is not None and var == constant[0]:
            return str(constant[1])
        return f"?{var}{suffix}"

    find_vars, clauses = template
    find = " ".join(term(v) for v in find_vars if constant is None or v != constant[0])
    where = " ".join(f"[{term(e)} :g/to {term(v)}]" for e, v in clauses)
    return f"{{:find [{find}] :where [{where}]}}"


QUERIES: dict[str, str] = {name: render(template) for name, template in TEMPLATES.items()}


def variants(count: int, constants: list[int]) -> dict[str, str]:
    """`count` distinct queries cycling triangle/4-cycle/2-path.

    Even rounds rename the variables; odd rounds also fix one find variable (cycling over
    positions) to a node id from `constants`. Variant 0 is the triangle with renamed variables.
    """
    kinds = list(TEMPLATES)
    queries: dict[str, str] = {}
    for i in range(count):
        kind = kinds[i % len(kinds)]
        template = TEMPLATES[kind]
        round_ = i // len(kinds)
        constant = None
        if round_ % 2:
            find_vars = template[0]
            var = find_vars[(round_ // 2) % len(find_vars)]
            constant = (var, constants[round_ // 2 % len(constants)])
        queries[f"{kind}-{i}"] = render(template, suffix=str(i), constant=constant)
    return queries
