"""The ``deltalog`` command line: ``demo`` (the embedded main job) and ``explain``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from workers.engine import Engine
from workers.errors import WorkersError
from workers.plan import STRATEGIES


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deltalog", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="stream a small social graph through live queries")
    demo.add_argument("--strategy", choices=STRATEGIES, default="delta")
    explain = commands.add_parser("explain", help="print the plan of a query")
    explain.add_argument("query", help="EDN query text, e.g. '{:find [?a] :where [[?a :x]]}'")
    explain.add_argument("--strategy", choices=STRATEGIES, default="delta")
    explain.add_argument("--input", action="append", default=[], metavar="EDN",
                         help="value of the next :in scalar, as EDN (repeatable)")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from workers.demo import run_demo

            run_demo(args.strategy)
        else:
            from workers.edn import read

            inputs = [read(text) for text in args.input]
            sys.stdout.write(Engine(strategy=args.strategy).explain(args.query, inputs))
    except WorkersError as err:
        print(f"deltalog: error [{err.code.value}]: {err}", file=sys.stderr)
        return 2
    return 0
