"""`clustergen expand SPEC`: the spec's long form, its patterns expanded."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode, SpecInvalid
from clustergen.cli.common import fork_in_two, ignored_codes, print_problems, write_output
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

if TYPE_CHECKING:
    pass


def execute(args: argparse.Namespace) -> int:
    from clustergen.spec.long_form import expand, long_form_text

    loaded = load_spec(args.spec)
    cluster, problems = validate_cluster(loaded, ignored_codes(args), fork_in_two)
    if cluster is None:
        raise SpecInvalid(problems)
    print_problems(problems, args.format, complete=True)
    text = long_form_text(expand(loaded.data).data)
    if args.output == "-":
        sys.stdout.write(text)
        return int(ExitCode.OK)
    write_output(Path(args.output), text)
    return int(ExitCode.OK)
