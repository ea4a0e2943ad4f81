"""What the commands share: the --ignore codes, printing problems in the format asked
for, loading a valid spec, and writing an output file whole."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from clustergen.base.codes import ignorable
from clustergen.base.errors import LocatedProblem, SpecInvalid, UsageError
from clustergen.base.report import Format, github_line, json_document
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

if TYPE_CHECKING:
    pass


T = TypeVar("T")
U = TypeVar("U")


def fork_in_two(first: Callable[[], T], second: Callable[[], U], what: str) -> tuple[T, U] | None:
    """commands.parallel.in_two, which validation is handed (validate.validate_cluster),
    imported only when a large spec needs it: it brings the render's modules, which
    validate of a small spec starts without."""
    from clustergen.commands.parallel import in_two as forked

    return forked(first, second, what)


def ignored_codes(args: argparse.Namespace) -> list[str]:
    """The --ignore codes, each a warning's code, or a usage error saying why not."""
    try:
        return [ignorable(name) for name in args.ignore]
    except ValueError as exc:
        raise UsageError(f"--ignore: {exc}") from None


def print_problems(
    problems: Sequence[LocatedProblem], output_format: Format, *, complete: bool = False
) -> None:
    """Print problems as text (stderr) or GitHub commands (stdout); JSON is printed once,
    whole, by the caller, or here when `complete` says these are all there will be."""
    if output_format == "text":
        for problem in problems:
            print(problem.format(), file=sys.stderr)
    elif output_format == "github":
        for problem in problems:
            print(github_line(problem))
    elif complete:
        sys.stdout.write(json_document(problems))


def load_valid(path: str, args: argparse.Namespace) -> ResolvedCluster:
    """Load, validate and resolve one spec; warnings are printed, errors raise SpecInvalid."""
    cluster, problems = validate_cluster(load_spec(path), ignored_codes(args), fork_in_two)
    if cluster is None:
        raise SpecInvalid(problems)
    print_problems(problems, args.format, complete=True)
    return cluster


def write_output(target: Path, text: str) -> None:
    from clustergen.write.disk import write_file

    write_file(target, text)
    print(f"wrote {target}", file=sys.stderr)
