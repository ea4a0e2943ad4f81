"""Durable file operations of the writer: staging a file (never through a link),
making it durable (syncfs(2), else fsync each), the temporaries' names and the
staging folder of a new tree, and writing one file whole (`write_file`)."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from pathlib import Path

from clustergen.base.artifacts import Artifact
from clustergen.base.errors import UsageError
from clustergen.write.tree import Tree

TEMPORARY = ".clustergen-tmp"  # the suffix of staged files: .<name>.clustergen-tmp


def staging_folder(out_dir: Path) -> Path:
    """The folder a new tree is built in: beside it, named as its temporaries are."""
    absolute = Path(os.path.abspath(out_dir))
    return absolute.with_name(f".{absolute.name}{TEMPORARY}")


def temporary_name(path: str) -> str:
    folder, _, name = path.rpartition("/")
    return f"{folder}/.{name}{TEMPORARY}" if folder else f".{name}{TEMPORARY}"


def temporary_path(target: Path) -> Path:
    return target.with_name(f".{target.name}{TEMPORARY}")


def remove_temporaries(tree: Tree) -> int:
    """Remove the temporaries a killed render left (regular files named as clustergen
    names them; a link so named is left, and refused where a render stages a file)."""
    removed = 0
    for temporary in tree.files(TEMPORARY):
        if temporary.rpartition("/")[2].startswith("."):
            removed += tree.unlink(temporary)
    return removed


def write_file(target: Path, text: str) -> None:
    """Write one file (the schema, a spec's long form) whole or not at all: staged beside
    the target and renamed over it; on failure the temporary and the directories made
    for it go, and the target is as it was. The target is the user's own path, named
    on the command line, outside any rendered tree."""
    made: list[Path] = []
    try:
        make_directories(target.parent, made)
        stage_file(temporary_path(target), Artifact(target.name, text, 0o644))
        os.replace(temporary_path(target), target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary_path(target).unlink(missing_ok=True)
        remove_folders(made)
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


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


def remove_folders(made: list[Path]) -> None:
    for directory in reversed(made):
        with contextlib.suppress(OSError):
            directory.rmdir()


def stage_file(
    path: Path, rendered: Artifact, *, sync: bool = True, dir_fd: int | None = None
) -> Path:
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
        write_all(descriptor, rendered.text.encode("utf-8"))
        os.fchmod(descriptor, rendered.mode)
        if sync:
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return path


def write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def fsync_path(path: Path, *, dir_fd: int | None = None) -> None:
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


def sync_all(tree: Tree, files: list[str], folders: list[str]) -> None:
    """Make the staged files and their folders durable. On Linux one syncfs(2) per file
    system the folders are on does it for all of them; elsewhere each file and folder is
    fsynced, a folder's files all in flight at once (fsync releases the GIL), so the file
    system commits them together where one after another costs a journal commit each.
    The tree's descriptors are valid only until its next call: what is kept across calls
    is a copy (dup), one per file system."""
    by_device: dict[int, int] = {}
    try:
        for folder in folders:
            descriptor = tree.folder(folder)
            if descriptor is not None:
                device = os.fstat(descriptor).st_dev
                if device not in by_device:
                    by_device[device] = os.dup(descriptor)
        if all(syncfs(descriptor) for descriptor in by_device.values()):
            return
    finally:
        for descriptor in by_device.values():
            os.close(descriptor)
    by_folder: dict[str, list[str]] = {}
    for path in files:
        by_folder.setdefault(path.rpartition("/")[0], []).append(path)
    for folder in folders:
        by_folder.setdefault(folder, [])
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=32) as pool:
        for folder, names in sorted(by_folder.items()):
            parent = tree.folder(folder)  # valid while this folder's files are synced
            entries = [(tree.path(path), parent) for path in names]
            for _ in pool.map(lambda entry: fsync_path(entry[0], dir_fd=entry[1]), entries):
                pass
            if folder:
                above, _ = tree.parent(folder)
                fsync_path(tree.path(folder), dir_fd=above)
            else:
                fsync_path(tree.root, dir_fd=None)


def syncfs(path: Path | int) -> bool:
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
