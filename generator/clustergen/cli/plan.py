"""`clustergen plan SPEC -o DIR`: what applying the render over the applied tree means."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import SpecInvalid, UsageError
from clustergen.cli.common import fork_in_two, ignored_codes, print_problems
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

if TYPE_CHECKING:
    pass


def execute(args: argparse.Namespace) -> int:
    from clustergen.commands.parallel import compared_in_two
    from clustergen.commands.plan import make_plan
    from clustergen.commands.plan_text import json_text, markdown
    from clustergen.write.changes import unrendered_ansible_files, unrendered_message
    from clustergen.write.journal import pending

    out_dir = Path(args.output)
    if not out_dir.is_dir():
        raise UsageError(f"{out_dir}: no rendered tree there to plan against")
    # plan writes nothing: it applies no journal (which may have been planted) and
    # compares against the files as they are.
    left = pending(out_dir, staging_too=False)
    if left:
        print(left, file=sys.stderr)
    cluster, problems = validate_cluster(load_spec(args.spec), ignored_codes(args), fork_in_two)
    if cluster is None:
        raise SpecInvalid(problems)
    print_problems(problems, "text")
    files, compared = compared_in_two(out_dir, cluster)
    plan = make_plan(
        cluster,
        files,
        out_dir,
        args.driver_batch_size,
        args.driver_domains_per_batch,
        compared=compared,
    )
    for path in unrendered_ansible_files(out_dir, files):
        print(unrendered_message(out_dir, path), file=sys.stderr)
    sys.stdout.write(markdown(plan) if args.plan_format == "markdown" else json_text(plan))
    return int(plan.exit_code)
