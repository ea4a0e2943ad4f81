"""`clustergen import slurm DIR`: a spec from an existing cluster's Slurm files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode, UsageError, printable
from clustergen.cli.common import write_output

if TYPE_CHECKING:
    pass


def execute(args: argparse.Namespace) -> int:
    from clustergen.importer.build import REVIEW, import_slurm
    from clustergen.importer.emit import spec_text

    imported = import_slurm(Path(args.directory))
    text = spec_text(imported, args.directory)
    target = Path(args.output)
    if args.output != "-" and (target.exists() or target.is_symlink()) and not args.force:
        raise UsageError(f"{target} exists; pass --force to replace it")
    for item in imported.unrepresented:
        print(f"not imported: {item.format()}", file=sys.stderr)
    for change in imported.changes:
        print(f"render changes: {printable(change)}", file=sys.stderr)
    print("review (placeholders, not facts): " + "; ".join(REVIEW), file=sys.stderr)
    if args.output == "-":
        sys.stdout.write(text)
        return int(ExitCode.OK)
    write_output(target, text)
    return int(ExitCode.OK)
