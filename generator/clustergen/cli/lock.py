"""`clustergen lock SPEC --index FILE...`: the pins of versions.lock against package indexes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustergen.base.errors import ExitCode
from clustergen.cli.common import load_valid

if TYPE_CHECKING:
    pass


def execute(args: argparse.Namespace) -> int:
    from clustergen.commands.lock import check_families, missing_pins, read_index
    from clustergen.outputs.ansible.group_vars import lock_groups

    indexes = [read_index(Path(path)) for path in args.index]
    cluster = load_valid(args.spec, args)
    check_families(cluster.pins.family, cluster.spec.software.os, indexes)
    # What versions.lock pins: the groups that have nodes.
    pins = {group.name: group.packages for group in lock_groups(cluster)}
    missing = missing_pins(pins, indexes)
    pinned = len({(name, v) for packages in pins.values() for name, v in packages.items()})
    for pin in missing:
        print(pin.describe())
    files = ", ".join(args.index)
    if missing:
        print(
            f"{args.spec}: {len(missing)} of {pinned} pinned package version(s) not in {files}; "
            "set the version the repository serves in software.packages, or the spec's version",
            file=sys.stderr,
        )
        return int(ExitCode.INVALID_SPEC)
    print(f"{args.spec}: all {pinned} pinned package version(s) are in {files}")
    return int(ExitCode.OK)
