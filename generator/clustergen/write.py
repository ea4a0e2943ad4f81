"""Compare a rendered tree with what is on disk, and write it as one transaction.

The tree is untrusted input (it is committed and reviewed as pull requests): every
path in it is opened through clustergen.tree, which follows no link. Only files
clustergen wrote (listed in the manifest) are ever replaced, and a file it no
longer renders is removed only while it is what clustergen wrote there (the digest
the manifest records); everything else in the output directory is left alone.

A write into an existing tree stages every new file as a temporary beside its
target, then commits a journal naming every rename and removal (with the digests
of what each acts on), then applies them, then deletes the journal. A render killed
at any point leaves either no journal (the tree is the old render plus temporaries,
which the next write deletes) or a complete journal (the next write checks that
every entry is clustergen's own, and applies the rest of it).

A write into a directory that does not exist yet builds the whole tree in a staging
folder beside it (.<name>.clustergen-tmp, made with mkdir: one already there is
refused) and renames the folder into place: killed before that, there is no tree
at all, and the next write deletes the folder.

`recover` does all of that, and every command that writes an output directory
calls it first. The commands that write nothing (`plan`, `render --check`) apply
no journal and remove nothing: `pending` says what an interrupted render left.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from clustergen.artifacts import Artifact, Install
from clustergen.errors import UsageError
from clustergen.tree import Tree, digest, inside

MANIFEST = ".clustergen-manifest"
JOURNAL = ".clustergen-journal"
TEMPORARY = ".clustergen-tmp"  # the suffix of staged files: .<name>.clustergen-tmp
_JOURNAL_HEADER = "# clustergen: renames and removals of one render, applied in order\n"
_MANIFEST_HEADER = (
    "# Files rendered by clustergen; it removes these when a spec no longer renders them,\n"
    "# each only while it is what clustergen wrote (the sha256 digest ending its line).\n"
    "# A file installed on nodes also has, tab-separated: its inventory group, what a\n"
    "# change to it needs, and its destination (clustergen plan reads them).\n"
)

# The manifest's line naming the rendered cluster: a comment, which older manifests
# lack and older readers skip.
_CLUSTER_LINE = "# cluster: "

FileAction = Literal["create", "change", "unchanged", "remove", "keep"]


@dataclass(frozen=True)
class FileChange:
    """What a write does to one path. `keep`: a file the last render listed and this
    one no longer renders, left alone because it is not what clustergen wrote there
    (changed since, or never clustergen's). The digests (tree.digest) are of the file
    on disk (old) and of the rendered file (new), for the journal."""

    path: str
    action: FileAction
    old: str | None
    new: str | None
    old_digest: str | None = None
    new_digest: str | None = None


def with_manifest(files: dict[str, Artifact], cluster: str) -> dict[str, Artifact]:
    """Add the manifest (see `manifest`) of cluster's rendered tree."""
    installs = {path: a.install for path, a in files.items()}
    digests = {path: digest(a.text.encode("utf-8")) for path, a in files.items()}
    return {**files, MANIFEST: manifest(installs, digests, cluster)}


def manifest(
    installs: Mapping[str, Install | None], digests: Mapping[str, str], cluster: str
) -> Artifact:
    """The manifest: the cluster's name, every rendered path, and for a file installed on
    nodes its inventory group, what a change to it needs, and its destination
    (tab-separated), so `clustergen plan` knows what removing it means once it is no
    longer rendered, and a render of another cluster is not taken for a change. Each
    line ends with the digest of what clustergen wrote there: a file that no longer
    matches it is never removed."""
    lines = [f"{_CLUSTER_LINE}{cluster}\n"]
    for path in sorted(installs):
        install = installs[path]
        if install is None:
            lines.append(f"{path}\t{digests[path]}\n")
        else:
            fields = [path, install.group, install.change.describe(), install.dest, digests[path]]
            lines.append("\t".join(fields) + "\n")
    return Artifact(MANIFEST, _MANIFEST_HEADER + "".join(lines))


@dataclass(frozen=True)
class Installed:
    """What an old manifest says of a file installed on nodes."""

    group: str
    change: str  # NodeChange.describe(): 'restart slurmd', 'reconfigure slurmctld', 'nothing'
    dest: str


@dataclass(frozen=True)
class Listed:
    """One path of a manifest: its install metadata (None for files not installed on
    nodes, and in manifests written before it was kept) and the digest of what
    clustergen wrote there (None in manifests written before digests were kept)."""

    installed: Installed | None
    digest: str | None


def listed(out_dir: Path) -> dict[str, Listed]:
    """The paths the last render wrote into out_dir, as its manifest lists them."""
    with Tree(out_dir) as tree:
        return _listed(tree)


def _listed(tree: Tree) -> dict[str, Listed]:
    text = tree.read_text(MANIFEST)
    entries: dict[str, Listed] = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        path, *fields = line.strip("\n").split("\t")
        path = path.strip()
        if not path or path.startswith("#"):
            continue
        # Never follow a manifest outside the output directory; clustergen writes no such
        # line, so one is a hand edit or an attack, and the whole manifest is refused.
        if not inside(path):
            raise UsageError(
                f"{tree.path(MANIFEST)}:{number}: {path!a} is not a plain relative path "
                "inside the tree (absolute, or with a '..', '.' or empty component): not read"
            )
        recorded = fields.pop() if fields and fields[-1].startswith("sha256:") else None
        entries[path] = Listed(Installed(*fields) if len(fields) == 3 else None, recorded)
    return entries


def manifest_entries(out_dir: Path) -> dict[str, Installed | None]:
    """The paths the last render wrote into out_dir, with their install metadata (None
    for files not installed on nodes, and for manifests written before it was kept)."""
    return {path: entry.installed for path, entry in listed(out_dir).items()}


def manifest_cluster(out_dir: Path) -> str | None:
    """The cluster whose render out_dir holds, as its manifest names it; None without a
    manifest, or for one written before the cluster was recorded."""
    with Tree(out_dir) as tree:
        text = tree.read_text(MANIFEST)
    for line in (text or "").splitlines():
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
    if not out_dir.is_dir() or os.path.lexists(out_dir / MANIFEST):
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


def file_changes(
    out_dir: Path,
    files: dict[str, Artifact],
    *,
    adopt: bool = False,
    families: Collection[str] = (),
) -> list[FileChange]:
    """What writing files into out_dir would do. Files clustergen did not write (absent
    from the manifest) are never overwritten unless adopt is set; `families` as in
    `removals`."""
    previous = previous_outputs(out_dir)
    changes, foreign = compare(out_dir, files, previous)
    if not adopt:
        refuse_foreign(out_dir, foreign)
    return changes + removals(out_dir, previous, files, families)


def compare(
    out_dir: Path, files: Mapping[str, Artifact], previous: Collection[str]
) -> tuple[list[FileChange], list[str]]:
    """Each rendered file against what is on disk, in path order, and the paths of files
    clustergen did not write (absent from the previous manifest) that it would change.
    Every path is read without following a link (a link is refused)."""
    changes = []
    foreign = []
    with Tree(out_dir) as tree:
        for path, rendered in sorted(files.items()):
            data = rendered.text.encode("utf-8")
            new_digest = digest(data)
            found = tree.read(path)
            if found is None:
                changes.append(FileChange(path, "create", None, rendered.text, None, new_digest))
                continue
            old, mode = found
            changed = old != data or _executable(mode) != _executable(rendered.mode)
            # A file clustergen did not write is in the way only if rendering would change it.
            if changed and path not in previous and path != MANIFEST:
                foreign.append(path)
            action: FileAction = "change" if changed else "unchanged"
            text = _decoded(tree, path, old)
            changes.append(FileChange(path, action, text, rendered.text, digest(old), new_digest))
    return changes, foreign


# Where ansible-playbook, run at the tree's top, loads files without being told their
# names: every file of the inventory folder (an executable one runs as an inventory
# script; its group_vars/ and host_vars/ are read), group_vars/ and host_vars/ beside the
# playbook, each role's folders (a role's library/, module_utils/ and *_plugins/ load with
# it), and the playbook folder's library/, module_utils/, *_plugins/ and collections/
# [src: Ansible's documentation: "How to build your inventory" (inventory folders,
# group_vars and host_vars), "Adding modules and plugins locally" (folders adjacent to a
# playbook or in a role), "Using collections" (collections/ beside the playbook)]. And
# clustergen's own files/: group_vars/all.yml loads files/groups/<group>.yml for every
# group a node is in, and the rendered_files role installs what each entry names as root,
# so a list planted for a group clustergen renders none for installs anything.
ANSIBLE_FOLDERS = (
    "inventory",
    "roles",
    "group_vars",
    "host_vars",
    "library",
    "module_utils",
    "files",
)
ANSIBLE_COLLECTIONS = "collections"


def _loaded_by_ansible(top: str) -> bool:
    return top in (*ANSIBLE_FOLDERS, ANSIBLE_COLLECTIONS) or top.endswith("_plugins")


def unrendered_ansible_files(out_dir: Path, rendered: Collection[str]) -> list[str]:
    """The files (and links) in the tree's folders that ansible-playbook loads unasked
    which clustergen does not render, in path order: what a contributor plants there
    (an inventory script, a filter plugin, host_vars) runs as root on every node, and
    neither the spec's diff nor the rendered files' show it."""
    found: list[str] = []
    if not out_dir.is_dir():
        return found
    known = set(rendered)
    for entry in sorted(os.listdir(out_dir)):
        top = out_dir / entry
        if not _loaded_by_ansible(entry):
            continue
        if top.is_symlink() or not top.is_dir():
            if entry not in known:
                found.append(entry)
            continue
        for folder, dirs, names in os.walk(top):
            base = Path(folder).relative_to(out_dir).as_posix()
            dirs.sort()
            for name in sorted(names + [d for d in dirs if (Path(folder) / d).is_symlink()]):
                path = f"{base}/{name}"
                if path not in known and not _python_wrote(out_dir, path, known):
                    found.append(path)
    return sorted(found)


# What Python writes beside a module it imports (PEP 3147: __pycache__/NAME.TAG.pyc, TAG
# like cpython-311, optionally .opt-N) and the header it starts with (PEP 552: the magic
# number, a flags word, then for flags 0 the source's mtime and size, little-endian).
_PYC = re.compile(r"(?P<stem>[^/.]+)\.[a-z]+-[0-9]+(?:\.opt-[12])?\.pyc")


def _python_wrote(out_dir: Path, path: str, known: set[str]) -> bool:
    """Whether `path` is the byte-code cache Python itself wrote for a module clustergen
    rendered beside it (ansible-playbook imports the roles' filter plugins, and Python
    caches them in __pycache__; a working copy where site.yml ran is not stale for that).
    Only a timestamp-based cache whose recorded mtime and size are the source's, which is
    the one condition under which Python uses it: a hash-based one (PEP 552), which
    Python may take without reading the source, or one that names another source, is
    what a contributor could plant, and is reported."""
    folder, _, name = path.rpartition("/")
    parent, _, cache = folder.rpartition("/")
    match = _PYC.fullmatch(name)
    source = f"{parent}/{match['stem']}.py" if match else ""
    if cache != "__pycache__" or source not in known:
        return False
    try:
        descriptor = os.open(out_dir / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return False
        header = handle.read(16)
    try:
        written = os.stat(out_dir / source, follow_symlinks=False)
    except OSError:
        return False
    flags, mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (4, 8, 12))
    return (
        len(header) == 16
        and flags == 0
        and mtime == int(written.st_mtime) & 0xFFFFFFFF
        and size == written.st_size & 0xFFFFFFFF
    )


def _executable(mode: int) -> bool:
    """What git records of a file's mode, and so all that a tree's mode can say: a clone
    made under umask 002 has 0664 where the render wrote 0644, and nothing differs. The
    nodes take their mode from each file's Install.mode, never from the tree."""
    return bool(mode & 0o100)


def _decoded(tree: Tree, path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read {tree.path(path)}: {exc}") from None


def refuse_foreign(out_dir: Path, foreign: list[str]) -> None:
    """Refuse to replace files clustergen did not write (paths in order)."""
    if not foreign:
        return
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    raise UsageError(
        f"{out_dir} holds files that clustergen did not write and would replace: {shown}; "
        "render into another directory, or pass --adopt to take them over"
    )


def removals(
    out_dir: Path,
    previous: Mapping[str, str | None],
    rendered: Collection[str],
    families: Collection[str] = (),
) -> list[FileChange]:
    """The files the last render wrote that this one no longer renders, in path order:
    each removed if it is still what clustergen wrote there (its digest in the
    manifest), else kept (left alone, and named). A manifest line without a digest (a
    tree rendered before digests were kept, or a line added by hand) cannot say what
    clustergen wrote, so its file is kept too. The manifest is committed, so a line
    there is no proof that clustergen wrote a file: only a path in a family's folder
    (`families`: the output families' folders, which the commands pass), or in one this
    render writes into, is ever removed (never one of git's, or a top-level file of the
    site's); any other stays, named."""
    folders = {path.split("/", 1)[0] for path in rendered if "/" in path} | set(families)
    changes = []
    with Tree(out_dir) as tree:
        for path in sorted(set(previous) - set(rendered)):
            found = tree.read(path)
            if found is None:
                changes.append(FileChange(path, "remove", None, None))
                continue
            data = found[0]
            text = data.decode("utf-8", errors="replace")
            recorded = previous[path]
            ours = (
                "/" in path
                and path.split("/", 1)[0] in folders
                and not any(part.startswith(".git") for part in path.split("/"))
            )
            if ours and recorded is not None and digest(data) == recorded:
                changes.append(FileChange(path, "remove", text, None, recorded))
            else:
                changes.append(FileChange(path, "keep", text, None, digest(data)))
    return changes


def kept_message(out_dir: Path, change: FileChange) -> str:
    """What the user is told of a kept file (see `removals`)."""
    return (
        f"{out_dir}: left {change.path} alone: clustergen no longer renders it, and it is "
        "not what clustergen wrote there (changed since, never clustergen's, or listed "
        "without a digest by an older release); it leaves the manifest, so remove it "
        "yourself if nothing needs it"
    )


def unrendered_message(out_dir: Path, path: str) -> str:
    """What the user is told of a file clustergen did not render where Ansible loads it
    (see `unrendered_ansible_files`)."""
    return (
        f"{out_dir}: unrendered: {path}: ansible-playbook loads what lies there, and "
        "clustergen did not render it; whatever it holds runs as root on every node. "
        "Remove it unless the site put it there on purpose (docs/security.md)"
    )


def unified_diff(change: FileChange) -> str:
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
        return _temporary_name(path)


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
        _remove_folders(made)
        raise UsageError(
            f"refusing {staging}: it exists, and clustergen builds a new tree only in a "
            "staging folder it makes itself; remove it and render again"
        ) from None
    except OSError as exc:
        _remove_folders(made)
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    return Destination(out_dir, Tree(staging, own=True), staging, tuple(made))


def staging_folder(out_dir: Path) -> Path:
    """The folder a new tree is built in: beside it, named as its temporaries are."""
    absolute = Path(os.path.abspath(out_dir))
    return absolute.with_name(f".{absolute.name}{TEMPORARY}")


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
        changes, foreign = compare(self.out_dir, files, self.previous)
        staged = Staged()
        if self.adopt or not foreign:
            staged = stage(self.target, files, changes, folders_made=folders_made)
        part = Part(
            installs={path: artifact.install for path, artifact in files.items()},
            digests={c.path: c.new_digest for c in changes if c.new_digest is not None},
            changes=[
                FileChange(c.path, c.action, None, None, c.old_digest, c.new_digest)
                for c in changes
            ],
            foreign=foreign,
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
        foreign = sorted(path for part in self.parts for path in part.foreign)
        if not self.adopt:
            refuse_foreign(self.out_dir, foreign)
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
            _stage(tree.path(path), files[rendered], sync=False, dir_fd=descriptor)
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
        _Step("replace", c.path, c.new_digest, c.old_digest)
        for c in changes
        if c.action in ("create", "change")
    ]
    # The manifest last: until the journal is applied whole, the manifest on disk is the
    # previous render's, which is what a recovery checks every step against.
    steps = [
        *(step for step in replaced if step.path != MANIFEST),
        *(_Step("remove", c.path, None, c.old_digest) for c in changes if c.action == "remove"),
        *(step for step in replaced if step.path == MANIFEST),
    ]
    try:
        # Every staged file and its folder's entries on disk before the journal is.
        _sync_all(
            target.tree,
            [temporary for part in parts for temporary in part.temporaries],
            sorted({folder for part in parts for folder in part.folders}),
        )
        if target.staging is not None:
            os.rename(target.staging, out_dir)
            _fsync(out_dir.parent)
            return
        _commit_journal(target.tree, steps)
    except OSError as exc:
        # Nothing was replaced yet: the tree is as it was, byte for byte.
        abandon(target, parts)
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    try:
        _apply(target.tree, steps)
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
    _remove_folders(list(target.parents_made))


def _remove_folders(made: list[Path]) -> None:
    for directory in reversed(made):
        with contextlib.suppress(OSError):
            directory.rmdir()


def write_file(target: Path, text: str) -> None:
    """Write one file (the schema, a spec's long form) whole or not at all: staged beside
    the target and renamed over it; on failure the temporary and the directories made
    for it go, and the target is as it was. The target is the user's own path, named
    on the command line, outside any rendered tree."""
    made: list[Path] = []
    try:
        make_directories(target.parent, made)
        _stage(_temporary(target), Artifact(target.name, text, 0o644))
        os.replace(_temporary(target), target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            _temporary(target).unlink(missing_ok=True)
        _remove_folders(made)
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


def take_back(tree: Tree, staged: Staged) -> None:
    """Remove staged temporaries and the folders made for them (innermost first)."""
    for temporary in staged.temporaries:
        with contextlib.suppress(OSError, UsageError):
            tree.unlink(temporary)
    for folder in reversed(staged.made):
        with contextlib.suppress(OSError, UsageError):
            tree.rmdir(folder)


def make_directories(directory: Path, made: list[Path]) -> None:
    """Make `directory` and its parents that do not exist yet, outermost first, adding
    each to `made` as it is made (so a failure part way takes back only those). Only
    for paths the user named (an output file, the folders above a new tree)."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        folder.mkdir()
        made.append(folder)


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
    for _top, folders, files, descriptor in os.fwalk(staging, follow_symlinks=False):
        for name in [*folders, *files]:
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
        steps = _journal_steps(journal)
        _refuse_foreign_journal(tree, steps, _listed(tree), rendered())
        _apply(tree, steps)
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
class _Step:
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


def _commit_journal(tree: Tree, steps: list[_Step]) -> None:
    text = _JOURNAL_HEADER + "".join(step.line() for step in steps)
    temporary = _temporary_name(JOURNAL)
    _stage(tree.path(temporary), Artifact(JOURNAL, text), dir_fd=tree.folder("", made=[]))
    tree.replace(temporary, JOURNAL)
    _fsync(tree.root)


def _journal_steps(text: str) -> list[_Step]:
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
            steps.append(_Step("replace", path, digests[0], old))
        else:
            steps.append(_Step("remove", path, None, old))
    return steps


def _is_digest(text: str) -> bool:
    hexdigest = text.removeprefix("sha256:")
    return (
        text.startswith("sha256:")
        and len(hexdigest) == 64
        and all(c in "0123456789abcdef" for c in hexdigest)
    )


def _refuse_foreign_journal(
    tree: Tree, steps: list[_Step], previous: Mapping[str, Listed], rendered: Mapping[str, str]
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
            staged = tree.read(_temporary_name(step.path))
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


def _apply(tree: Tree, steps: list[_Step]) -> None:
    """Apply journal steps; each is skipped if already done, so this may run again."""
    for step in steps:
        if step.op == "replace":
            with contextlib.suppress(FileNotFoundError):  # replaced by an earlier run
                tree.replace(_temporary_name(step.path), step.path)
        else:
            tree.unlink(step.path)
            _prune_empty_parents(tree, step.path)
    _fsync(tree.root)


def remove_temporaries(tree: Tree) -> int:
    """Remove the temporaries a killed render left (regular files named as clustergen
    names them; a link so named is left, and refused where a render stages a file)."""
    removed = 0
    for temporary in tree.files(TEMPORARY):
        if temporary.rpartition("/")[2].startswith("."):
            removed += tree.unlink(temporary)
    return removed


def _temporary_name(path: str) -> str:
    folder, _, name = path.rpartition("/")
    return f"{folder}/.{name}{TEMPORARY}" if folder else f".{name}{TEMPORARY}"


def _temporary(target: Path) -> Path:
    return target.with_name(f".{target.name}{TEMPORARY}")


def _fsync(path: Path, *, dir_fd: int | None = None) -> None:
    """fsync a file or a folder (its entries); with dir_fd, path's name in that folder,
    opened without following a link."""
    if dir_fd is None:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    else:
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        descriptor = os.open(path.name, flags, dir_fd=dir_fd)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _stage(path: Path, rendered: Artifact, *, sync: bool = True, dir_fd: int | None = None) -> Path:
    """Write rendered at path (a temporary, or a file in a new tree's staging folder),
    with its mode; the folder exists (the writers make the folders first). With dir_fd,
    the file is path's name in that folder (a folder of the tree, opened safely)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    name = path.name if dir_fd is not None else path
    try:
        descriptor = os.open(name, flags, 0o600, dir_fd=dir_fd)  # never through a link
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(
                f"refusing {path}: it is a symbolic link where clustergen stages a file, and "
                "clustergen follows no link inside the output folder (docs/security.md)"
            ) from None
        raise
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


def _sync_all(tree: Tree, files: list[str], folders: list[str]) -> None:
    """Make the staged files and their folders durable. On Linux one syncfs(2) per file
    system the folders are on does it for all of them; elsewhere each file and folder is
    fsynced, all in flight at once (fsync releases the GIL), so the file system commits
    them together where one after another costs a journal commit each."""
    by_device: dict[int, int] = {}
    for folder in folders:
        descriptor = tree.folder(folder)
        if descriptor is not None:
            by_device.setdefault(os.fstat(descriptor).st_dev, descriptor)
    if all(_syncfs(descriptor) for descriptor in by_device.values()):
        return
    entries = []
    for path in [*files, *folders]:
        if path:
            parent, _ = tree.parent(path)
            entries.append((tree.path(path), parent))
        else:
            entries.append((tree.root, None))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(32, len(entries)))) as pool:
        for _ in pool.map(lambda entry: _fsync(entry[0], dir_fd=entry[1]), entries):
            pass


def _syncfs(path: Path | int) -> bool:
    """syncfs(2) the file system holding path (or an open descriptor); False where the
    call is not available."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        # The running program's own C library (no ldconfig lookup, as find_library does).
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    descriptor = path if isinstance(path, int) else os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if syncfs(descriptor) != 0:
            error = ctypes.get_errno()
            if error in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                return False  # a kernel or file system without it: fsync each
            raise OSError(error, os.strerror(error))  # e.g. EIO: the data did not reach disk
    finally:
        if not isinstance(path, int):
            os.close(descriptor)
    return True


def _prune_empty_parents(tree: Tree, path: str) -> None:
    folder = path.rpartition("/")[0]
    while folder:
        try:
            tree.rmdir(folder)
        except OSError:
            return
        folder = folder.rpartition("/")[0]


def previous_outputs(out_dir: Path) -> dict[str, str | None]:
    """The paths the last render wrote, each with the digest of what it wrote there."""
    return {path: entry.digest for path, entry in listed(out_dir).items()}
