"""`clustergen audit SPEC -o DIR FACTS...`: the nodes' fact files against the spec and the tree."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode, SpecInvalid, UsageError
from clustergen.cli.common import fork_in_two, ignored_codes, print_problems
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

if TYPE_CHECKING:
    pass


def execute(args: argparse.Namespace) -> int:
    from clustergen.commands.audit.run import audit

    out_dir = Path(args.output)
    if not out_dir.is_dir():
        raise UsageError(f"{out_dir}: no rendered tree there (-o names it)")
    # The spec's warnings are validate's to report; audit reports the nodes.
    cluster, problems = validate_cluster(load_spec(args.spec), ignored_codes(args), fork_in_two)
    if cluster is None:
        raise SpecInvalid(problems)
    # --ignore and the spec's own ignore list silence audit's warnings as validate's.
    ignore = set(ignored_codes(args)) | set(cluster.spec.ignore)
    result = audit(cluster, out_dir, args.facts)
    findings = [p for p in result.findings if p.code.name not in ignore]
    print_problems(findings, args.format, complete=True)
    say = sys.stdout if args.format == "text" else sys.stderr
    if result.not_reported:
        shown = ", ".join(result.not_reported[:10])
        more = f" and {len(result.not_reported) - 10} more" if len(result.not_reported) > 10 else ""
        print(f"not reported (no fact file): {shown}{more}", file=sys.stderr)
    for what in result.not_checked:
        print(f"not checked: {what}", file=sys.stderr)
    print(
        f"{args.spec}: {len(findings)} finding(s) on {result.reported} of {result.nodes} "
        "node(s) reported",
        file=sys.stderr if findings else say,
    )
    return int(ExitCode.INVALID_SPEC if findings else ExitCode.OK)
