"""Compare a rendered tree with what is on disk, and write it as one transaction.

Only files clustergen wrote (listed in the manifest) are ever replaced or
removed; everything else in the output directory is left alone.

A write into an existing tree stages every new file as a temporary beside its
target, then commits a journal naming every rename and removal, then applies them,
then deletes the journal. A render killed at any point leaves either no journal
(the tree is the old render plus temporaries, which the next command deletes) or a
complete journal (the next command applies the rest of it).

A write into a directory that does not exist yet builds the whole tree in a staging
folder beside it (.<name>.clustergen-tmp) and renames the folder into place: killed
before that, there is no tree at all, and the next command deletes the folder.

`recover` does all of that, and every command that reads or writes an output
directory calls it first.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import shutil
import stat
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from clustergen.artifacts import Artifact, Install
from clustergen.errors import UsageError

MANIFEST = ".clustergen-manifest"
JOURNAL = ".clustergen-journal"
TEMPORARY = ".clustergen-tmp"  # the suffix of staged files: .<name>.clustergen-tmp
_JOURNAL_HEADER = "# clustergen: renames and removals of one render, applied in order\n"
_MANIFEST_HEADER = (
    "# Files rendered by clustergen; it removes these when a spec no longer renders them.\n"
    "# A file installed on nodes also has, tab-separated: its inventory group, what a\n"
    "# change to it needs, and its destination (clustergen plan reads them).\n"
)

# The manifest's line naming the rendered cluster: a comment, which older manifests
# lack and older readers skip.
_CLUSTER_LINE = "# cluster: "

Action = Literal["create", "change", "unchanged", "remove"]


@dataclass(frozen=True)
class Change:
    path: str
    action: Action
    old: str | None
    new: str | None


def with_manifest(files: dict[str, Artifact], cluster: str) -> dict[str, Artifact]:
    """Add the manifest (see `manifest`) of cluster's rendered tree."""
    return {**files, MANIFEST: manifest({path: a.install for path, a in files.items()}, cluster)}


def manifest(installs: Mapping[str, Install | None], cluster: str) -> Artifact:
    """The manifest: the cluster's name, every rendered path, and for a file installed on
    nodes its inventory group, what a change to it needs, and its destination
    (tab-separated), so `clustergen plan` knows what removing it means once it is no
    longer rendered, and a render of another cluster is not taken for a change."""
    lines = [f"{_CLUSTER_LINE}{cluster}\n"]
    for path in sorted(installs):
        install = installs[path]
        if install is None:
            lines.append(f"{path}\n")
        else:
            lines.append(f"{path}\t{install.group}\t{install.change.describe()}\t{install.dest}\n")
    return Artifact(MANIFEST, _MANIFEST_HEADER + "".join(lines))


@dataclass(frozen=True)
class Installed:
    """What an old manifest says of a file installed on nodes."""

    group: str
    change: str  # Change.describe(): 'restart slurmd', 'reconfigure slurmctld', 'nothing'
    dest: str


def manifest_entries(out_dir: Path) -> dict[str, Installed | None]:
    """The paths the last render wrote into out_dir, with their install metadata (None
    for files not installed on nodes, and for manifests written before it was kept)."""
    text = _read(out_dir / MANIFEST)
    entries: dict[str, Installed | None] = {}
    for line in (text or "").splitlines():
        path, *fields = line.strip("\n").split("\t")
        path = path.strip()
        # Never follow a manifest outside the output directory.
        if not path or path.startswith("#") or not _inside(path):
            continue
        entries[path] = Installed(*fields) if len(fields) == 3 else None
    return entries


def manifest_cluster(out_dir: Path) -> str | None:
    """The cluster whose render out_dir holds, as its manifest names it; None without a
    manifest, or for one written before the cluster was recorded."""
    for line in (_read(out_dir / MANIFEST) or "").splitlines():
        if line.startswith(_CLUSTER_LINE):
            return line.removeprefix(_CLUSTER_LINE).strip()
    return None


def refuse_other_cluster(out_dir: Path, cluster: str) -> None:
    """Refuse to render cluster over the tree of another: every file of that one would
    be replaced or removed, which is never a change to review as one."""
    recorded = manifest_cluster(out_dir)
    if recorded is not None and recorded != cluster:
        raise UsageError(
            f"{out_dir} holds the rendered tree of cluster {recorded!r}, not {cluster!r}; "
            "rendering over it would replace and remove that cluster's files: render into "
            "another directory, or pass --replace-cluster to replace it"
        )


def refuse_unknown_directory(out_dir: Path) -> None:
    """Refuse to render into a directory that holds other things and no clustergen tree
    (the current directory, when no -o names it)."""
    if not out_dir.is_dir() or (out_dir / MANIFEST).exists():
        return
    try:
        empty = next(os.scandir(out_dir), None) is None
    except OSError as exc:
        raise UsageError(f"cannot read {out_dir}: {exc.strerror or exc}") from None
    if not empty:
        raise UsageError(
            f"{os.path.abspath(out_dir)} is not empty and holds no clustergen tree (no "
            f"{MANIFEST}); name the output directory with -o DIR (-o . to render here)"
        )


def plan(out_dir: Path, files: dict[str, Artifact], *, adopt: bool = False) -> list[Change]:
    """What writing files into out_dir would do. Files clustergen did not write (absent
    from the manifest) are never overwritten unless adopt is set."""
    previous = previous_outputs(out_dir)
    changes, foreign = compare(out_dir, files, previous)
    if not adopt:
        refuse_foreign(out_dir, foreign)
    return changes + removals(out_dir, previous, files)


def compare(
    out_dir: Path, files: Mapping[str, Artifact], previous: Collection[str]
) -> tuple[list[Change], list[str]]:
    """Each rendered file against what is on disk, in path order, and the paths of files
    clustergen did not write (absent from the previous manifest) that it would change."""
    folders = _Folders(out_dir)
    changes = []
    foreign = []
    for path, rendered in sorted(files.items()):
        old, mode = folders.existing(path)
        changed = old is not None and (old != rendered.text or mode != rendered.mode)
        # A file clustergen did not write is in the way only if rendering would change it.
        if changed and path not in previous and path != MANIFEST:
            foreign.append(path)
        if old is None:
            changes.append(Change(path, "create", None, rendered.text))
        else:
            changes.append(Change(path, "change" if changed else "unchanged", old, rendered.text))
    return changes, foreign


def refuse_foreign(out_dir: Path, foreign: list[str]) -> None:
    """Refuse to replace files clustergen did not write (paths in order)."""
    if not foreign:
        return
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    raise UsageError(
        f"{out_dir} holds files that clustergen did not write and would replace: {shown}; "
        "render into another directory, or pass --adopt to take them over"
    )


def removals(out_dir: Path, previous: Collection[str], rendered: Collection[str]) -> list[Change]:
    """The files the last render wrote that this one no longer renders, in path order."""
    return [
        Change(path, "remove", _read(out_dir / path), None)
        for path in sorted(set(previous) - set(rendered))
    ]


class _Folders:
    """What is on disk at each rendered path, with each folder on the way looked at once:
    a tree of thousands of files in a few folders costs a stat per folder, and nothing
    at all under a folder that does not exist yet."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.present: dict[str, bool] = {"": out_dir.is_dir()}

    def _folder(self, relative: str) -> bool:
        """Whether the folder exists; refuses one in the way that is not a folder."""
        known = self.present.get(relative)
        if known is not None:
            return known
        parent, _, _ = relative.rpartition("/")
        present = False
        if self._folder(parent):
            folder = os.path.join(self.out_dir, relative)
            try:
                present = stat.S_ISDIR(os.stat(folder).st_mode)
            except FileNotFoundError:
                present = False
            else:
                if not present:
                    raise UsageError(f"cannot write into {folder}: it is not a directory")
        self.present[relative] = present
        return present

    def existing(self, path: str) -> tuple[str | None, int | None]:
        """The text and mode of the regular file at path, or (None, None) when there is
        none; anything else there (a folder, a link, a device) is refused."""
        if not self._folder(path.rpartition("/")[0]):
            return None, None
        target = self.out_dir / path
        try:
            info = os.lstat(target)
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise UsageError(f"cannot read {target}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"cannot write {target}: it exists and is not a regular file")
        return _read(target), stat.S_IMODE(info.st_mode)


def unified_diff(change: Change) -> str:
    old = (change.old or "").splitlines(keepends=True)
    new = (change.new or "").splitlines(keepends=True)
    from_name = f"a/{change.path}" if change.old is not None else "/dev/null"
    to_name = f"b/{change.path}" if change.new is not None else "/dev/null"
    text = "".join(difflib.unified_diff(old, new, from_name, to_name))
    return text if text.endswith("\n") or not text else text + "\n"


@dataclass
class Staged:
    """What staging wrote: the staged files (temporaries, or a new tree's files in its
    staging folder), the folders they are in, and the folders made for them (outermost
    first), so that all of it can be synced or taken back."""

    temporaries: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    made: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Destination:
    """Where a write stages its files. Into an existing output directory, each file is
    staged beside its target as a temporary and renamed over it through the journal.
    A directory that does not exist yet is built whole in a staging folder beside it,
    every file under its own name, and the folder is renamed into place in one step:
    no journal and no rename per file, and until that step there is no tree at all."""

    out_dir: Path
    staging: Path | None = None

    def staged(self, path: str) -> Path:
        """Where the file rendered at path is staged."""
        if self.staging is not None:
            return self.staging / path
        return _temporary(self.out_dir / path)


def destination(out_dir: Path) -> tuple[Destination, Staged]:
    """The destination for a write into out_dir, with the folders made for it (a new
    tree's staging folder and the parents it needs), to take back on failure."""
    if os.path.lexists(out_dir):
        return Destination(out_dir), Staged()
    made: list[Path] = []
    staging = staging_folder(out_dir)
    try:
        make_directories(staging, made)
    except OSError as exc:
        take_back(Staged(made=made))
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    return Destination(out_dir, staging), Staged(made=made)


def staging_folder(out_dir: Path) -> Path:
    """The folder a new tree is built in: beside it, named as its temporaries are."""
    absolute = Path(os.path.abspath(out_dir))
    return absolute.with_name(f".{absolute.name}{TEMPORARY}")


def write(out_dir: Path, files: dict[str, Artifact], changes: list[Change]) -> None:
    """Write every created or changed file and remove the files no longer rendered,
    as one transaction (see the module's docstring)."""
    if all(change.action == "unchanged" for change in changes):
        return
    target, base = destination(out_dir)
    try:
        part = stage(target, files, changes)
    except BaseException:
        abandon(target, [base])
        raise
    commit(target, changes, [base, part])


def stage(
    target: Destination,
    files: Mapping[str, Artifact],
    changes: list[Change],
    *,
    folders_made: Callable[[list[Path]], None] | None = None,
) -> Staged:
    """Stage every created or changed file of changes (whose texts are in files), once
    the folders they need are made (and told to folders_made). On failure what was
    staged is taken back, and UsageError says why."""
    staged = Staged()
    pending = [(c.path, target.staged(c.path)) for c in changes if c.action in ("create", "change")]
    staged.folders = sorted({path.parent for _, path in pending})
    try:
        for folder in staged.folders:
            make_directories(folder, staged.made)
        if folders_made is not None:
            folders_made(staged.made)
        for rendered, path in pending:
            staged.temporaries.append(path)
            _stage(path, files[rendered], sync=False)
    except OSError as exc:
        take_back(staged)
        raise UsageError(f"cannot write {target.out_dir}: {exc.strerror or exc}") from None
    except BaseException:  # e.g. Ctrl-C: nothing of this write stays behind
        take_back(staged)
        raise
    return staged


def commit(target: Destination, changes: list[Change], parts: Sequence[Staged]) -> None:
    """Make every staged part durable, then put it in place: a new tree by renaming its
    staging folder; into an existing tree by committing the journal of changes and
    applying it.

    Every new file is complete on disk before the journal is committed (or the new
    tree renamed into place), and the journal is complete before the first file is
    replaced.
    """
    out_dir = target.out_dir
    steps = [
        *(("replace", c.path) for c in changes if c.action in ("create", "change")),
        *(("remove", c.path) for c in changes if c.action == "remove"),
    ]
    try:
        # Every staged file and its folder's entries on disk before the journal is.
        _sync_all(
            [temporary for part in parts for temporary in part.temporaries],
            sorted({folder for part in parts for folder in part.folders}),
        )
        if target.staging is not None:
            os.rename(target.staging, out_dir)
            _fsync(out_dir.parent)
            return
        _commit_journal(out_dir, steps)
    except OSError as exc:
        # Nothing was replaced yet: the tree is as it was, byte for byte.
        abandon(target, parts)
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    try:
        _apply(out_dir, steps)
        (out_dir / JOURNAL).unlink()
    except OSError as exc:
        raise UsageError(
            f"cannot write {out_dir}: {exc.strerror or exc}; the next clustergen command "
            "on it completes this render"
        ) from None


def abandon(target: Destination, parts: Sequence[Staged]) -> None:
    """Take back every staged part, last first (the first holds the folders made for
    the destination), and a new tree's staging folder with whatever is in it."""
    if target.staging is not None:
        shutil.rmtree(target.staging, ignore_errors=True)
    for part in reversed(parts):
        take_back(part)


def write_file(target: Path, text: str) -> None:
    """Write one file (the schema, a spec's long form) whole or not at all: staged beside
    the target and renamed over it; on failure the temporary and the directories made
    for it go, and the target is as it was."""
    made: list[Path] = []
    try:
        make_directories(target.parent, made)
        _stage(_temporary(target), Artifact(target.name, text, 0o644))
        os.replace(_temporary(target), target)
    except OSError as exc:
        take_back(Staged([_temporary(target)], made=made))
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


def take_back(staged: Staged) -> None:
    """Remove staged temporaries and the directories made for them (innermost first)."""
    for temporary in staged.temporaries:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
    for directory in reversed(staged.made):
        with contextlib.suppress(OSError):
            directory.rmdir()


def make_directories(directory: Path, made: list[Path]) -> None:
    """Make `directory` and its parents that do not exist yet, outermost first, adding
    each to `made` as it is made (so a failure part way takes back only those)."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        folder.mkdir()
        made.append(folder)


def recover(out_dir: Path) -> str | None:
    """Complete a render that was interrupted after its journal was committed, or undo
    one interrupted before (its temporaries go; the old files were never touched), and
    remove the staging folder of a new tree whose render was interrupted.

    Returns what was done, for the user, or None when there was nothing to do.
    """
    done = []
    staging = staging_folder(out_dir)
    try:
        if staging.is_dir() and not staging.is_symlink():
            shutil.rmtree(staging)
            done.append(
                f"{out_dir}: removed {staging}, where a render that was interrupted was "
                "building the new tree"
            )
        if out_dir.is_dir():
            done += _recover_tree(out_dir)
    except OSError as exc:
        raise UsageError(
            f"cannot repair the interrupted render in {out_dir}: {exc.strerror or exc}"
        ) from None
    return "\n".join(done) or None


def _recover_tree(out_dir: Path) -> list[str]:
    journal = _read(out_dir / JOURNAL)
    if journal is not None:
        steps = _journal_steps(journal)
        _apply(out_dir, steps)
        (out_dir / JOURNAL).unlink()
        remove_temporaries(out_dir)
        return [
            f"{out_dir}: completed a render that was interrupted "
            f"({len(steps)} file operation(s) from its journal)"
        ]
    removed = remove_temporaries(out_dir)
    if removed:
        return [
            f"{out_dir}: removed {removed} temporary file(s) of a render that was interrupted "
            "before it changed anything; the tree is the render before it"
        ]
    return []


def _commit_journal(out_dir: Path, steps: list[tuple[str, str]]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    text = _JOURNAL_HEADER + "".join(f"{op} {path}\n" for op, path in steps)
    _stage(_temporary(out_dir / JOURNAL), Artifact(JOURNAL, text))
    os.replace(_temporary(out_dir / JOURNAL), out_dir / JOURNAL)
    _fsync(out_dir)


def _journal_steps(text: str) -> list[tuple[str, str]]:
    steps = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        op, _, path = line.partition(" ")
        if op not in ("replace", "remove") or not _inside(path):
            raise UsageError(f"unreadable clustergen journal line: {line!r}")
        steps.append((op, path))
    return steps


def _apply(out_dir: Path, steps: list[tuple[str, str]]) -> None:
    """Apply journal steps; each is skipped if already done, so this may run again."""
    for op, path in steps:
        target = out_dir / path
        if op == "replace":
            with contextlib.suppress(FileNotFoundError):  # replaced by an earlier run
                os.replace(_temporary(target), target)
        else:
            target.unlink(missing_ok=True)
            _prune_empty_parents(out_dir, target)
    _fsync(out_dir)


def remove_temporaries(out_dir: Path) -> int:
    removed = 0
    for temporary in sorted(out_dir.rglob(f".*{TEMPORARY}")):
        if temporary.is_file() and not temporary.is_symlink():
            temporary.unlink()
            removed += 1
    return removed


def _temporary(target: Path) -> Path:
    return target.with_name(f".{target.name}{TEMPORARY}")


def _fsync(path: Path) -> None:
    """fsync a file or a folder (its entries)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _stage(path: Path, rendered: Artifact, *, sync: bool = True) -> Path:
    """Write rendered at path (a temporary, or a file in a new tree's staging folder),
    with its mode; the folder exists (the writers make the folders first)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    descriptor = os.open(path, flags, 0o600)  # never through a link planted there
    try:
        _write_all(descriptor, rendered.text.encode("utf-8"))
        os.fchmod(descriptor, rendered.mode)
        if sync:
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return path


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def _sync_all(files: list[Path], folders: list[Path]) -> None:
    """Make the staged files and their folders durable. On Linux one syncfs(2) per file
    system the folders are on does it for all of them; elsewhere each file and folder is
    fsynced, all in flight at once (fsync releases the GIL), so the file system commits
    them together where one after another costs a journal commit each."""
    by_device: dict[int, Path] = {}
    for folder in folders:  # a folder may be a link to another file system
        by_device.setdefault(os.stat(folder).st_dev, folder)
    if all(_syncfs(folder) for folder in by_device.values()):
        return
    paths = [*files, *folders]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(32, len(paths)))) as pool:
        for _ in pool.map(_fsync, paths):
            pass


def _syncfs(path: Path) -> bool:
    """syncfs(2) the file system holding path; False where the call is not available."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        # The running program's own C library (no ldconfig lookup, as find_library does).
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if syncfs(descriptor) != 0:
            error = ctypes.get_errno()
            if error in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                return False  # a kernel or file system without it: fsync each
            raise OSError(error, os.strerror(error))  # e.g. EIO: the data did not reach disk
    finally:
        os.close(descriptor)
    return True


def _prune_empty_parents(root: Path, path: Path) -> None:
    parent = path.parent
    while parent != root and parent.is_relative_to(root):
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def previous_outputs(out_dir: Path) -> set[str]:
    return set(manifest_entries(out_dir))


def _inside(path: str) -> bool:
    """A relative path that stays inside the output directory."""
    return bool(path) and ".." not in Path(path).parts and not path.startswith("/")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
