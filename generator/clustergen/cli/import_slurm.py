"""`clustergen import slurm DIR`: a spec from an existing cluster's Slurm files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode, UsageError, printable
from clustergen.cli.common import write_output

if TYPE_CHECKING:
    from clustergen.importer.records import Imported


def execute(args: argparse.Namespace) -> int:
    from clustergen.importer.build import REVIEW, import_slurm
    from clustergen.importer.emit import spec_text

    folders = tuple(args.config_folder)
    if any(not folder.startswith("/") for folder in folders):
        raise UsageError("--config-folder takes an absolute path (as Include lines name it)")
    qos_file = Path(args.qos) if args.qos else None
    imported = import_slurm(Path(args.directory), folders, qos_file)
    _drop_refused_options(imported, spec_text(imported, args.directory))
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


def _drop_refused_options(imported: Imported, text: str) -> None:
    """The slurm.options that validate refuses (AuthType=auth/none, a SlurmUser the roles
    do not create, ...) leave the spec as "not imported" lines that say why and what the
    site must change: import writes a spec that validates where only options stood in
    its way."""
    from clustergen.base import codes
    from clustergen.importer.records import Unrepresented
    from clustergen.spec.load import parse_spec
    from clustergen.validate import validate

    _, problems = validate(parse_spec(text, "imported.yaml", "imported.yaml"))
    options = imported.spec["slurm"].get("options", {})
    for problem in problems:
        path = problem.path
        option = len(path) == 3 and path[:2] == ("slurm", "options")
        if problem.severity != "error" or not option or path[2] not in options:
            continue
        key = str(path[2])
        value = options.pop(key)
        secret = problem.code is codes.SLURM_OPTION_SECRET
        shown = "(a credential: not shown)" if secret else value
        where = imported.option_sources.get(key, "slurm.conf")
        imported.unrepresented.append(Unrepresented(where, f"{key}={shown}", problem.message))
