"""`clustergen validate SPEC...`: every problem of each spec, at once."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode, LocatedProblem, SpecInvalid, UsageError
from clustergen.base.report import json_document
from clustergen.cli.common import fork_in_two, ignored_codes, print_problems
from clustergen.spec.load import load_spec
from clustergen.validate import validate

if TYPE_CHECKING:
    pass


def execute(args: argparse.Namespace) -> int:
    ignore = ignored_codes(args)
    worst = ExitCode.OK
    text = args.format == "text"
    everything: list[LocatedProblem] = []
    for path in args.specs:
        try:
            spec, problems = validate(load_spec(path), ignore, fork_in_two)
        except SpecInvalid as exc:
            spec, problems = None, exc.problems
        except UsageError as exc:
            print(f"clustergen: {exc}", file=sys.stderr)
            worst = ExitCode.USAGE
            continue
        everything += problems
        print_problems(problems, args.format)
        errors = sum(p.severity == "error" for p in problems)
        warnings = len(problems) - errors
        if spec is None:
            worst = max(worst, ExitCode.INVALID_SPEC)
            if text:
                print(f"{path}: {errors} error(s), {warnings} warning(s)", file=sys.stderr)
        elif text:
            print(f"{path}: valid" + (f" ({warnings} warning(s))" if warnings else ""))
    if args.format == "json":
        sys.stdout.write(json_document(everything))
    return int(worst)
