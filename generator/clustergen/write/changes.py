"""A rendered tree against what is on disk: what a write would do to each path
(create, change, unchanged, remove, keep), the files clustergen did not write that
it would replace, the files Ansible would load that clustergen did not render, and
what the user is told of them."""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clustergen.base.artifacts import Artifact
from clustergen.base.errors import UsageError
from clustergen.write.manifest import MANIFEST, previous_outputs
from clustergen.write.tree import Tree, digest

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


def file_changes(
    out_dir: Path,
    files: dict[str, Artifact],
    *,
    adopt: bool = False,
    families: Collection[str] = (),
    previous: Mapping[str, str | None] | None = None,
    compared: list[FileChange] | None = None,
) -> list[FileChange]:
    """What writing files into out_dir would do. Files clustergen did not write (absent
    from the manifest) are never overwritten unless adopt is set; `families` as in
    `removals`; `previous`: the manifest's paths and digests where the caller has read
    them already (manifest.previous_outputs); `compared`: `compare(out_dir, files)`
    where the caller has made it already (commands.parallel, on two cores)."""
    previous = previous_outputs(out_dir) if previous is None else previous
    changes = compare(out_dir, files) if compared is None else compared
    if not adopt:
        refuse_foreign(out_dir, foreign(changes, previous))
    return changes + removals(out_dir, previous, files, families)


def compare(out_dir: Path, files: Mapping[str, Artifact]) -> list[FileChange]:
    """Each rendered file against what is on disk, in path order. Every path is read
    without following a link (a link is refused)."""
    changes = []
    with Tree(out_dir) as tree:
        # A new tree (no folder yet) holds nothing: every file is created, and no path is
        # looked up (at 16k nodes, 77,000 lookups that each fail at the top).
        fresh = tree.folder("") is None
        for path, rendered in sorted(files.items()):
            data = rendered.text.encode("utf-8")
            new_digest = digest(data)
            found = None if fresh else tree.read(path)
            if found is None:
                changes.append(FileChange(path, "create", None, rendered.text, None, new_digest))
                continue
            old, mode = found
            if old == data:
                # The same bytes: the old text is the rendered one, and so is its digest
                # (neither is made again: at 65,536 nodes, 300,000 files).
                action: FileAction = "unchanged"
                if _executable(mode) != _executable(rendered.mode):
                    action = "change"
                changes.append(
                    FileChange(path, action, rendered.text, rendered.text, new_digest, new_digest)
                )
                continue
            text = _decoded(tree, path, old)
            changes.append(FileChange(path, "change", text, rendered.text, digest(old), new_digest))
    return changes


def foreign(changes: Iterable[FileChange], previous: Collection[str]) -> list[str]:
    """The paths of files clustergen did not write (absent from the previous manifest)
    that writing would change, in the changes' order. A file in the way only if
    rendering would change it: one with the rendered bytes and mode is left as it is."""
    return [
        c.path
        for c in changes
        if c.action == "change" and c.path not in previous and c.path != MANIFEST
    ]


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
