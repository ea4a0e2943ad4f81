"""One write of a rendered tree as one transaction (see the package's docstring):
where it stages (`Destination`), the parts staged (by one process, or two in a
parallel render), and the commit that puts them all in place or takes them back."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clustergen.base.artifacts import Artifact, Install
from clustergen.base.errors import UsageError
from clustergen.write import disk
from clustergen.write.changes import FileChange, compare, foreign, refuse_foreign, removals
from clustergen.write.disk import (
    make_directories,
    remove_folders,
    remove_temporaries,
    staging_folder,
    temporary_name,
)
from clustergen.write.journal import JOURNAL, JournalStep, apply_journal, commit_journal
from clustergen.write.manifest import MANIFEST, manifest, previous_outputs
from clustergen.write.tree import Tree


@dataclass
class Staged:
    """What staging wrote: the staged files (temporaries, or a new tree's files in its
    staging folder), the folders they are in, and the folders made for them (outermost
    first), so that all of it can be synced or taken back. Paths are relative to the
    destination's tree (they cross from the second process of a parallel render)."""

    temporaries: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    made: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Destination:
    """Where a write stages its files. Into an existing output directory, each file is
    staged beside its target as a temporary and renamed over it through the journal.
    A directory that does not exist yet is built whole in a staging folder beside it,
    every file under its own name, and the folder is renamed into place in one step:
    no journal and no rename per file, and until that step there is no tree at all.
    `tree` is the folder staged into (the output folder, or the staging folder), and
    `parents_made` the folders made above a new tree, to take back on failure."""

    out_dir: Path
    tree: Tree
    staging: Path | None = None
    parents_made: tuple[Path, ...] = ()

    def staged(self, path: str) -> str:
        """Where the file rendered at path is staged, in `tree`."""
        if self.staging is not None:
            return path
        return temporary_name(path)


def destination(out_dir: Path) -> Destination:
    """The destination for a write into out_dir. A new tree's staging folder is made
    with mkdir, never taken over: one already there (planted, or a link) is refused."""
    if os.path.lexists(out_dir):
        return Destination(out_dir, Tree(out_dir))
    made: list[Path] = []
    staging = staging_folder(out_dir)
    try:
        make_directories(staging.parent, made)  # the user's own path, as named
        os.mkdir(staging, 0o777)
    except FileExistsError:
        remove_folders(made)
        raise UsageError(
            f"refusing {staging}: it exists, and clustergen builds a new tree only in a "
            "staging folder it makes itself; remove it and render again"
        ) from None
    except OSError as exc:
        remove_folders(made)
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    return Destination(out_dir, Tree(staging, own=True), staging, tuple(made))


def write(
    out_dir: Path,
    files: Mapping[str, Artifact],
    cluster: str,
    *,
    adopt: bool = False,
    families: Collection[str] = (),
) -> list[FileChange]:
    """Write cluster's rendered files, with their manifest, into out_dir as one
    transaction (see the module's docstring); the changes made, in path order."""
    with TreeWrite(out_dir, cluster, adopt=adopt, families=families) as writer:
        writer.stage(files)
        return writer.commit()


@dataclass(frozen=True)
class Part:
    """What TreeWrite.stage did with one part of a tree's files, small enough to cross
    from the second process of a parallel render: each path's install (for the
    manifest), what the write does to each path (the digests, not the texts, which only
    --diff prints), the files clustergen did not write that it would replace (then
    nothing was staged), and what was staged."""

    installs: dict[str, Install | None] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # of the rendered files
    changes: list[FileChange] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    staged: Staged = field(default_factory=Staged)


class TreeWrite:
    """One write of a rendered tree into out_dir, as one transaction: the only way the
    tree is written. The rendered files come in parts, each compared with the tree and
    staged by `stage` (a serial render hands over one part; a parallel one stages a part
    in each process, and the parent `include`s the child's); `commit` then refuses the
    files clustergen did not write (unless adopt), adds the manifest of every part,
    lists the removals, and puts everything in place at once, or takes it all back when
    nothing changes. Leaving the `with` block by an exception before `commit` has
    handed the parts on takes back everything staged, and a new tree's staging folder.

    Made before a fork, it is the child's too: the child stages its part into the same
    destination and reports the Part."""

    def __init__(
        self, out_dir: Path, cluster: str, *, adopt: bool = False, families: Collection[str] = ()
    ) -> None:
        self.out_dir = out_dir
        self.cluster = cluster
        self.adopt = adopt
        self.families = tuple(families)  # their folders: where removals may act
        self.previous = previous_outputs(out_dir)
        self.target = destination(out_dir)
        self.parts: list[Part] = []
        self._handed_on = False  # to the commit, which takes back or leaves a journal

    def __enter__(self) -> TreeWrite:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is not None and not self._handed_on:
                self.abandon()
        finally:
            self.target.tree.close()

    def stage(
        self,
        files: Mapping[str, Artifact],
        *,
        folders_made: Callable[[list[str]], None] | None = None,
    ) -> Part:
        """Compare files with the tree and stage the created and changed ones (none if
        any would replace a file clustergen did not write, unless adopt); the folders
        made for them are told to folders_made before any file is staged."""
        changes = compare(self.out_dir, files)
        in_the_way = foreign(changes, self.previous)
        staged = Staged()
        if self.adopt or not in_the_way:
            staged = stage(self.target, files, changes, folders_made=folders_made)
        part = Part(
            installs={path: artifact.install for path, artifact in files.items()},
            digests={c.path: c.new_digest for c in changes if c.new_digest is not None},
            changes=[
                FileChange(c.path, c.action, None, None, c.old_digest, c.new_digest)
                for c in changes
            ],
            foreign=in_the_way,
            staged=staged,
        )
        self.parts.append(part)
        return part

    def include(self, part: Part) -> None:
        """Add a part another process staged into this destination."""
        self.parts.append(part)

    def commit(self) -> list[FileChange]:
        """Refuse the files clustergen did not write (unless adopt), stage the manifest of
        every part, and commit it all as one transaction, or take it back when nothing
        changes; the changes, in path order, then the removals."""
        if not self.adopt:
            refuse_foreign(
                self.out_dir, sorted(path for part in self.parts for path in part.foreign)
            )
        installs: dict[str, Install | None] = {}
        for part in self.parts:
            for path in part.installs:
                if path in installs:
                    raise AssertionError(f"two output families render {path}")
            installs.update(part.installs)
        digests = {path: value for part in self.parts for path, value in part.digests.items()}
        self.stage({MANIFEST: manifest(installs, digests, self.cluster)})
        changes = sorted((c for part in self.parts for c in part.changes), key=lambda c: c.path)
        changes += removals(self.out_dir, self.previous, [*installs, MANIFEST], self.families)
        self._handed_on = True
        staged = [part.staged for part in self.parts]
        # The commit takes back what was staged if it fails before its journal is on
        # disk, and after that leaves the rest of the journal to the next command.
        if any(change.action not in ("unchanged", "keep") for change in changes):
            commit(self.target, changes, staged)
        else:
            abandon(self.target, staged)
        return changes

    def abandon(self) -> None:
        """Take back every part staged (last first) and a new tree's staging folder."""
        self._handed_on = True
        abandon(self.target, [part.staged for part in self.parts])

    def take_back(self, part: Part) -> None:
        """Take back one part alone (the child's, when its parent is gone)."""
        take_back(self.target.tree, part.staged)

    def sweep(self, made: list[str]) -> None:
        """Take back what a process killed while staging left: the temporaries (found by
        their names) and the folders it made (removed once empty)."""
        remove_temporaries(self.target.tree)
        take_back(self.target.tree, Staged(made=made))


def stage(
    target: Destination,
    files: Mapping[str, Artifact],
    changes: list[FileChange],
    *,
    folders_made: Callable[[list[str]], None] | None = None,
) -> Staged:
    """Stage every created or changed file of changes (whose texts are in files), once
    the folders they need are made (and told to folders_made). On failure what was
    staged is taken back, and UsageError says why."""
    staged = Staged()
    tree = target.tree
    pending = [(c.path, target.staged(c.path)) for c in changes if c.action in ("create", "change")]
    staged.folders = sorted({path.rpartition("/")[0] for _, path in pending})
    try:
        for folder in staged.folders:
            tree.folder(folder, made=staged.made)
        if folders_made is not None:
            folders_made(staged.made)
        for rendered, path in pending:
            staged.temporaries.append(path)
            descriptor, _ = tree.parent(path)
            if descriptor is None:  # made above; gone since
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
            disk.stage_file(tree.path(path), files[rendered], sync=False, dir_fd=descriptor)
    except OSError as exc:
        take_back(tree, staged)
        raise UsageError(f"cannot write {target.out_dir}: {exc.strerror or exc}") from None
    except BaseException:  # e.g. Ctrl-C: nothing of this write stays behind
        take_back(tree, staged)
        raise
    return staged


def commit(target: Destination, changes: list[FileChange], parts: Sequence[Staged]) -> None:
    """Make every staged part durable, then put it in place: a new tree by renaming its
    staging folder; into an existing tree by committing the journal of changes and
    applying it.

    Every new file is complete on disk before the journal is committed (or the new
    tree renamed into place), and the journal is complete before the first file is
    replaced.
    """
    out_dir = target.out_dir
    replaced = [
        JournalStep("replace", c.path, c.new_digest, c.old_digest)
        for c in changes
        if c.action in ("create", "change")
    ]
    # The manifest last: until the journal is applied whole, the manifest on disk is the
    # previous render's, which is what a recovery checks every step against.
    steps = [
        *(step for step in replaced if step.path != MANIFEST),
        *(
            JournalStep("remove", c.path, None, c.old_digest)
            for c in changes
            if c.action == "remove"
        ),
        *(step for step in replaced if step.path == MANIFEST),
    ]
    try:
        # Every staged file and its folder's entries on disk before the journal is.
        disk.sync_all(
            target.tree,
            [temporary for part in parts for temporary in part.temporaries],
            sorted({folder for part in parts for folder in part.folders}),
        )
        if target.staging is not None:
            os.rename(target.staging, out_dir)
            disk.fsync_path(out_dir.parent)
            return
        commit_journal(target.tree, steps)
    except OSError as exc:
        # Nothing was replaced yet: the tree is as it was, byte for byte.
        abandon(target, parts)
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    try:
        apply_journal(target.tree, steps)
        target.tree.unlink(JOURNAL)
    except OSError as exc:
        raise UsageError(
            f"cannot write {out_dir}: {exc.strerror or exc}; the next clustergen render "
            "into it completes this render"
        ) from None


def abandon(target: Destination, parts: Sequence[Staged]) -> None:
    """Take back every staged part, last first, and a new tree's staging folder with
    whatever is in it (clustergen made it) and the folders made above it."""
    if target.staging is not None:
        shutil.rmtree(target.staging, ignore_errors=True)
    for part in reversed(parts):
        take_back(target.tree, part)
    remove_folders(list(target.parents_made))


def take_back(tree: Tree, staged: Staged) -> None:
    """Remove staged temporaries and the folders made for them (innermost first)."""
    for temporary in staged.temporaries:
        with contextlib.suppress(OSError, UsageError):
            tree.unlink(temporary)
    for folder in reversed(staged.made):
        with contextlib.suppress(OSError, UsageError):
            tree.rmdir(folder)
