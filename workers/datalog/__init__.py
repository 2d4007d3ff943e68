"""EDN Datalog: parse a query into a checked AST with its :in scalars bound."""

from collections.abc import Sequence
from typing import Any

from workers.datalog.ast import Blank, Constant, Pattern, Query, Term, Variable
from workers.datalog.check import bind_inputs, check_query
from workers.datalog.parser import parse_query


def compile_query(text_or_form: Any, inputs: Sequence[Any] = ()) -> Query:
    """Parse, check and bind a query: the one entry point the engine uses."""
    return bind_inputs(check_query(parse_query(text_or_form)), inputs)


__all__ = ["Blank", "Constant", "Pattern", "Query", "Term", "Variable", "bind_inputs",
           "check_query", "compile_query", "parse_query"]
