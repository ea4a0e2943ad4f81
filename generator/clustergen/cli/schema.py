"""`clustergen schema`: the JSON Schema of the spec."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode
from clustergen.cli.common import write_output

if TYPE_CHECKING:
    pass


def execute(args: argparse.Namespace) -> int:
    from clustergen.spec.schema import schema_text  # only this command needs it

    text = schema_text()
    if args.output == "-":
        sys.stdout.write(text)
        return int(ExitCode.OK)
    write_output(Path(args.output), text)
    return int(ExitCode.OK)
