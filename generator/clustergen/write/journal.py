"""The journal of a write into an existing tree: its renames and removals, committed
before the first file is replaced and applied after; `recover` completes one an
interrupted render left (once every step is checked to finish only what clustergen
started) or undoes a render interrupted before it, and `pending` says what one left
for the commands that write nothing."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clustergen.base.artifacts import Artifact
from clustergen.base.errors import UsageError
from clustergen.write import disk
from clustergen.write.disk import TEMPORARY, remove_temporaries, staging_folder, temporary_name
from clustergen.write.manifest import Listed, listed_in
from clustergen.write.tree import Tree, digest, inside

JOURNAL = ".clustergen-journal"


_JOURNAL_HEADER = "# clustergen: renames and removals of one render, applied in order\n"


def recover(out_dir: Path, rendered: Callable[[], Mapping[str, str]]) -> str | None:
    """Before a write: complete a render that was interrupted after its journal was
    committed (once every step of the journal is checked to finish only what clustergen
    started: `_refuse_foreign_journal`), or undo one interrupted before (its temporaries
    go; the old files were never touched), and remove the staging folder of a new tree
    whose render was interrupted. `rendered` gives the digest of every file this render
    writes (its manifest included), asked for only when there is a journal. Only a write
    calls it: `plan` and `render --check` say what `pending` finds.

    Returns what was done, for the user, or None when there was nothing to do.
    """
    done = []
    staging = staging_folder(out_dir)
    try:
        if _sweep_staging(staging):
            done.append(
                f"{out_dir}: removed {staging}, where a render that was interrupted was "
                "building the new tree"
            )
        if out_dir.is_dir():
            with Tree(out_dir) as tree:
                done += _recover_tree(tree, rendered)
    except OSError as exc:
        raise UsageError(
            f"cannot repair the interrupted render in {out_dir}: {exc.strerror or exc}"
        ) from None
    return "\n".join(done) or None


def _sweep_staging(staging: Path) -> bool:
    """Remove a staging folder a killed render left; whether there was one. Only a
    folder holding nothing but folders and regular files (what a render stages) is
    removed, without following anything in it; a link, or anything else, is refused."""
    try:
        info = os.lstat(staging)
    except FileNotFoundError:
        return False
    refused = UsageError(
        f"refusing {staging}: it is where clustergen builds a new tree, and it is not a "
        "staging folder a render left (a link, or something other than folders and "
        "files); remove it yourself"
    )
    if not stat.S_ISDIR(info.st_mode):
        raise refused
    for _top, folders, names, descriptor in os.fwalk(staging, follow_symlinks=False):
        for name in [*folders, *names]:
            kind = os.stat(name, dir_fd=descriptor, follow_symlinks=False).st_mode
            if not (stat.S_ISDIR(kind) or stat.S_ISREG(kind)):
                raise refused
    shutil.rmtree(staging)  # removes links inside without following them, on any system
    return True


def pending(out_dir: Path, staging_too: bool = True) -> str | None:
    """What an interrupted render left in (or beside) out_dir, for the commands that
    write nothing (`plan`, `render --check`): they apply no journal and remove nothing,
    and compare against the files as they are. None when nothing is left."""
    found = []
    staging = staging_folder(out_dir)
    if staging_too and os.path.lexists(staging):
        found.append(f"the staging folder {staging} of a new tree")
    if out_dir.is_dir():
        with Tree(out_dir) as tree:
            if tree.entry(JOURNAL) is not None:
                found.append(f"its journal {out_dir / JOURNAL} (its renames and removals)")
            temporaries = len(tree.files(TEMPORARY))
            if temporaries:
                found.append(f"{temporaries} temporary file(s)")
    if not found:
        return None
    return (
        f"{out_dir}: a render was interrupted there and left {'; '.join(found)}. "
        "Nothing of it was applied or removed now: this command compares against the files "
        "as they are. `clustergen render SPEC -o DIR` completes or undoes it first, once it "
        "has checked that every entry of the journal is clustergen's own"
    )


def _recover_tree(tree: Tree, rendered: Callable[[], Mapping[str, str]]) -> list[str]:
    journal = tree.read_text(JOURNAL)
    if journal is not None:
        steps = journal_steps(journal)
        _refuse_foreign_journal(tree, steps, listed_in(tree), rendered())
        apply_journal(tree, steps)
        tree.unlink(JOURNAL)
        remove_temporaries(tree)
        return [
            f"{tree.root}: completed a render that was interrupted "
            f"({len(steps)} file operation(s) from its journal)"
        ]
    removed = remove_temporaries(tree)
    if removed:
        return [
            f"{tree.root}: removed {removed} temporary file(s) of a render that was interrupted "
            "before it changed anything; the tree is the render before it"
        ]
    return []


@dataclass(frozen=True)
class JournalStep:
    """One line of the journal: replace a path with its staged temporary (new: the
    temporary's digest; old: the digest of the file it replaces, None where there was
    none), or remove a path (old: the digest of the file removed)."""

    op: Literal["replace", "remove"]
    path: str
    new: str | None
    old: str | None

    def line(self) -> str:
        if self.op == "replace":
            return f"replace {self.new} {self.old or '-'} {self.path}\n"
        return f"remove {self.old or '-'} {self.path}\n"


def commit_journal(tree: Tree, steps: list[JournalStep]) -> None:
    text = _JOURNAL_HEADER + "".join(step.line() for step in steps)
    temporary = temporary_name(JOURNAL)
    disk.stage_file(tree.path(temporary), Artifact(JOURNAL, text), dir_fd=tree.folder("", made=[]))
    tree.replace(temporary, JOURNAL)
    disk.fsync_path(tree.root)


def journal_steps(text: str) -> list[JournalStep]:
    steps = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        op, *fields = line.split(" ", 3 if line.startswith("replace ") else 2)
        digests = fields[:-1]
        path = fields[-1] if fields else ""
        if (
            (op, len(fields)) not in (("replace", 3), ("remove", 2))
            or not inside(path)
            or not all(d == "-" or _is_digest(d) for d in digests)
            or (op == "replace" and not _is_digest(digests[0]))
        ):
            raise UsageError(f"unreadable clustergen journal line: {line!r}")
        old = None if digests[-1] == "-" else digests[-1]
        if op == "replace":
            steps.append(JournalStep("replace", path, digests[0], old))
        else:
            steps.append(JournalStep("remove", path, None, old))
    return steps


def _is_digest(text: str) -> bool:
    hexdigest = text.removeprefix("sha256:")
    return (
        text.startswith("sha256:")
        and len(hexdigest) == 64
        and all(c in "0123456789abcdef" for c in hexdigest)
    )


def _refuse_foreign_journal(
    tree: Tree,
    steps: list[JournalStep],
    previous: Mapping[str, Listed],
    rendered: Mapping[str, str],
) -> None:
    """Refuse a journal that would do anything but finish what clustergen started, before
    any of it is applied (a journal is a file in the tree, which a pull request can
    commit). A step already done (the file is gone, or is what the step put there) is
    nothing to apply. Otherwise: a replace only of a file this render renders
    (`rendered`: its digests), with the staged temporary (named as clustergen names
    them, a regular file) holding exactly what this render renders there, over the file
    the journal records; a remove only of a file the previous manifest (`previous`, the
    one on disk, which a journal replaces last) lists with the digest the journal gives,
    and that is still that file. Paths in the tree and links are checked as the journal
    is read (Tree refuses them)."""
    for step in steps:
        current = tree.read(step.path)
        now = digest(current[0]) if current is not None else None
        if step.op == "replace":
            staged = tree.read(temporary_name(step.path))
            if staged is None:  # replaced already by the interrupted render
                ok = now == step.new
                why = "the staged file is missing"
            else:
                ok = (
                    rendered.get(step.path) == step.new
                    and digest(staged[0]) == step.new
                    and now in (step.old, step.new)
                )
                why = (
                    "this render does not render that file"
                    if step.path not in rendered
                    else "the staged file is not what this render renders there"
                    if rendered[step.path] != step.new or digest(staged[0]) != step.new
                    else "the file there is not the one the journal records"
                )
        else:
            entry = previous.get(step.path)
            ok = now is None or (entry is not None and entry.digest == step.old and now == step.old)
            why = (
                "the manifest does not list that file as clustergen's"
                if entry is None or entry.digest is None
                else "the manifest records other contents for it"
                if entry.digest != step.old
                else "the file there is no longer what clustergen wrote"
            )
        if not ok:
            raise UsageError(
                f"refusing the clustergen journal {tree.path(JOURNAL)}: its step "
                f"'{step.op} {step.path}' does not finish what clustergen started ({why}); "
                "nothing of it was applied. If no render of yours was interrupted there, "
                f"remove the journal and the {TEMPORARY} files yourself"
            )


def apply_journal(tree: Tree, steps: list[JournalStep]) -> None:
    """Apply journal steps; each is skipped if already done, so this may run again."""
    for step in steps:
        if step.op == "replace":
            with contextlib.suppress(FileNotFoundError):  # replaced by an earlier run
                tree.replace(temporary_name(step.path), step.path)
        else:
            tree.unlink(step.path)
            prune_empty_parents(tree, step.path)
    disk.fsync_path(tree.root)


def prune_empty_parents(tree: Tree, path: str) -> None:
    folder = path.rpartition("/")[0]
    while folder:
        try:
            tree.rmdir(folder)
        except OSError:
            return
        folder = folder.rpartition("/")[0]
