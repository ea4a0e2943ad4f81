"""`clustergen render SPEC [-o DIR]`: validate, then write the rendered tree as one
transaction; --check and --diff write nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from clustergen.base.errors import ExitCode, UsageError
from clustergen.cli.common import load_valid
from clustergen.resolve import ResolvedCluster

if TYPE_CHECKING:
    from clustergen.write.changes import FileChange


def _rendered_digests(cluster: ResolvedCluster) -> dict[str, str]:
    """The digest of every file a render of cluster writes, its manifest included: what
    a journal may finish (write.recover)."""
    from clustergen.render import render_all
    from clustergen.write.manifest import with_manifest
    from clustergen.write.tree import digest

    files = with_manifest(render_all(cluster), cluster.spec.cluster.name)
    return {path: digest(a.text.encode("utf-8")) for path, a in files.items()}


def _checked(
    args: argparse.Namespace,
    out_dir: Path,
    stale: list[FileChange],
    kept: list[FileChange],
    planted: list[str],
    left: str | None,
) -> int:
    """`render --check`: what is stale, kept or planted, and its exit code."""
    from clustergen.write.changes import kept_message, unrendered_message

    for change in stale:
        print(f"stale: {change.action} {out_dir / change.path}", file=sys.stderr)
    for change in kept:
        print(kept_message(out_dir, change), file=sys.stderr)
    for path in planted:
        print(unrendered_message(out_dir, path), file=sys.stderr)
    if stale or left or planted:
        print(
            f"{out_dir}: {len(stale)} file(s) differ from what {args.spec} renders"
            + (f", {len(planted)} not rendered where Ansible loads them" if planted else "")
            + (" and an interrupted render is pending" if left else "")
            + f"; run `clustergen render {args.spec} -o {out_dir}`",
            file=sys.stderr,
        )
        return int(ExitCode.INVALID_SPEC)
    say = sys.stdout if args.format == "text" else sys.stderr
    print(f"{out_dir}: up to date with {args.spec}", file=say)
    return int(ExitCode.OK)


def execute(args: argparse.Namespace) -> int:
    if args.diff and args.format == "json":
        raise UsageError("--diff writes to standard output, where --format json writes problems")
    # Only render needs jinja2 and the writer; validate starts faster without them.
    from clustergen.commands.parallel import compared_in_two, render_into
    from clustergen.outputs import FAMILIES
    from clustergen.write.changes import (
        file_changes,
        kept_message,
        unified_diff,
        unrendered_ansible_files,
        unrendered_message,
    )
    from clustergen.write.journal import pending, recover
    from clustergen.write.manifest import (
        MANIFEST,
        refuse_other_cluster,
        refuse_unknown_directory,
    )
    from clustergen.write.transaction import write

    out_dir = Path(args.output or ".")
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir}: exists and is not a directory")
    if args.output is None:  # the current directory, wherever the command is run
        refuse_unknown_directory(out_dir)
    # An interrupted render is completed or undone before a write; --check writes
    # nothing, so it applies no journal (which may have been planted) and says so.
    left = pending(out_dir) if args.check else None
    if left:
        print(left, file=sys.stderr)
    cluster = load_valid(args.spec, args)
    # A journal is finished only where each step is what this render writes there, so
    # the render is asked for its digests (only when there is a journal).
    repaired = None if args.check else recover(out_dir, lambda: _rendered_digests(cluster))
    if repaired:
        print(repaired, file=sys.stderr)
    # --check writes nothing, so another cluster's tree is only stale to it.
    if not (args.check or args.replace_cluster):
        refuse_other_cluster(out_dir, cluster.spec.cluster.name)
    # Standard output carries the problems in the machine formats; the summary moves aside.
    say = sys.stdout if args.format == "text" else sys.stderr
    if not (args.diff or args.check):
        changes = render_into(out_dir, cluster, adopt=args.adopt)
        for change in changes:
            if change.action == "keep":
                print(kept_message(out_dir, change), file=sys.stderr)
        written = [c.path for c in changes if c.action in ("create", "change", "unchanged")]
        for path in unrendered_ansible_files(out_dir, written):
            print(unrendered_message(out_dir, path), file=sys.stderr)
        _summary(out_dir, changes, say)
        return int(ExitCode.OK)
    files, compared = compared_in_two(out_dir, cluster)
    # --check replaces nothing, so files clustergen did not write only make the tree stale.
    changes = file_changes(
        out_dir, files, adopt=args.adopt or args.check, families=FAMILIES, compared=compared
    )
    stale = [c for c in changes if c.action not in ("unchanged", "keep")]
    if args.diff:
        sys.stdout.write("".join(unified_diff(c) for c in stale))
    kept = [c for c in changes if c.action == "keep"]
    planted = unrendered_ansible_files(out_dir, files)
    if args.check:
        return _checked(args, out_dir, stale, kept, planted, left)
    rendered = {path: artifact for path, artifact in files.items() if path != MANIFEST}
    changes = write(
        out_dir, rendered, cluster.spec.cluster.name, adopt=args.adopt, families=FAMILIES
    )
    for change in kept:
        print(kept_message(out_dir, change), file=sys.stderr)
    for path in planted:
        print(unrendered_message(out_dir, path), file=sys.stderr)
    _summary(out_dir, changes, say)
    return int(ExitCode.OK)


def _summary(out_dir: Path, changes: list[FileChange], say: TextIO) -> None:
    counts = {
        action: sum(c.action == action for c in changes)
        for action in ("create", "change", "remove", "unchanged", "keep")
    }
    kept = f", {counts['keep']} left alone" if counts["keep"] else ""
    print(
        f"{out_dir}: {counts['create']} created, {counts['change']} changed, "
        f"{counts['remove']} removed{kept}, {counts['unchanged']} unchanged",
        file=say,
    )
