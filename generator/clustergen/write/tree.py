"""The output tree, opened as untrusted input.

A rendered tree is committed and reviewed as pull requests, and CI runs `render
--check` and `plan` on a contributor's branch: whatever is in the tree may have
been planted. The output folder itself is the user's choice (named on the command
line, or the current directory) and is opened as named; every path under it is
opened relative to the folder above it (dir_fd), one component at a time, never
following a symbolic link (O_NOFOLLOW, O_DIRECTORY, follow_symlinks=False). A link
anywhere on a path clustergen reads, writes or removes is refused (exit 2) and
named, never followed, so nothing outside the tree is ever read, written or removed
through it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path, PurePosixPath

from clustergen.base.errors import UsageError

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted where a file is expected never blocks the open.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def digest(data: bytes) -> str:
    """How the manifest and the journal record a file's content."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def inside(path: str) -> bool:
    """A relative path, written as clustergen writes them, that stays in the tree: not
    empty, no NUL, and no component empty (a leading, trailing or doubled '/'), '.' or
    '..' (each shows as '//', '/./' or '/../' once the path is put between slashes)."""
    between = f"/{path}/"
    return (
        "//" not in between and "/./" not in between and "/../" not in between and "\0" not in path
    )


# Folder descriptors a Tree keeps open between calls, the most recently used: a tree has a
# folder per node, so keeping all of them would pass the usual limit of 1,024 open files
# at some hundreds of nodes. A call may open more while it runs (every folder on its
# paths); the surplus is closed when the next call starts.
KEPT_FOLDERS = 64


class Tree:
    """A folder opened once, and every path under it through its folders' descriptors.
    The tree's own folder stays open until close; of the folders below it the
    KEPT_FOLDERS used last stay open, and one closed is opened again, one component at
    a time, when a path needs it. A descriptor a call hands out (folder, parent) is
    valid until the next call on the tree."""

    def __init__(self, root: Path, *, own: bool = False) -> None:
        """own: root is a folder clustergen made itself (a new tree's staging folder),
        so even it is opened without following a link."""
        self.root = root
        self.own = own
        self._folders: dict[str, int] = {}  # in order of use, the last used last

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for descriptor in self._folders.values():
            os.close(descriptor)
        self._folders.clear()

    def _trim(self) -> None:
        """Close the folders used longest ago beyond KEPT_FOLDERS (never the tree's own):
        called as each call starts, so no descriptor is closed while a call uses it."""
        surplus = len(self._folders) - KEPT_FOLDERS
        if surplus <= 0:  # the common case: no list of the folders made for nothing
            return
        for known in [k for k in self._folders if k][:surplus]:
            os.close(self._folders.pop(known))

    def open_folders(self) -> int:
        """How many folder descriptors the tree holds now."""
        return len(self._folders)

    def path(self, relative: str) -> Path:
        """The path as the user reads it in messages."""
        return self.root / relative if relative else self.root

    def _check(self, relative: str) -> None:
        if relative and not inside(relative):
            raise UsageError(f"refusing {relative!r}: not a path inside {self.root}")

    def folder(self, relative: str, *, made: list[str] | None = None) -> int | None:
        """The descriptor of the folder at relative ('' for the tree), or None where it
        does not exist; with made, missing folders are made (each added to made). A
        link, or a file, where a folder is expected is refused. The descriptor is the
        tree's: valid until the next call on the tree, and never closed by the caller."""
        self._trim()
        return self._folder(relative, made)

    def _folder(self, relative: str, made: list[str] | None) -> int | None:
        # Only folders found are kept: one missing now may be made by the other process
        # of a parallel render.
        known = self._folders.pop(relative, None)
        if known is not None:
            self._folders[relative] = known  # the last used
            return known
        if not relative:
            flags = _FOLDER if self.own else os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
            try:
                descriptor = os.open(self.root, flags)
            except FileNotFoundError:
                if made is not None:
                    raise UsageError(f"cannot write into {self.root}: it does not exist") from None
                return None
            except OSError as exc:
                raise UsageError(f"cannot read {self.root}: {exc.strerror or exc}") from None
            self._folders[""] = descriptor
            return descriptor
        self._check(relative)
        parent_path, _, name = relative.rpartition("/")
        parent = self._folder(parent_path, made)
        if parent is None:
            return None
        try:
            descriptor = os.open(name, _FOLDER, dir_fd=parent)
        except FileNotFoundError:
            if made is None:
                return None
            os.mkdir(name, 0o777, dir_fd=parent)
            made.append(relative)
            descriptor = os.open(name, _FOLDER, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                self._refuse(relative, "a folder")
            raise
        self._folders[relative] = descriptor
        return descriptor

    def _refuse(self, relative: str, expected: str) -> None:
        """Raise the refusal of what is at relative, where expected (a folder, a regular
        file) was looked for."""
        info = self._entry(relative)
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise UsageError(
                f"refusing {self.path(relative)}: it is a symbolic link, and clustergen "
                f"follows no link inside the output folder {self.root} (docs/security.md)"
            )
        if expected == "a folder":
            raise UsageError(f"cannot write into {self.path(relative)}: it is not a directory")
        raise UsageError(f"cannot write {self.path(relative)}: it exists and is not a regular file")

    def parent(self, relative: str, *, made: list[str] | None = None) -> tuple[int | None, str]:
        """The descriptor of relative's folder (None: it does not exist) and its name;
        the descriptor as folder hands it out."""
        self._trim()
        return self._parent(relative, made)

    def _parent(self, relative: str, made: list[str] | None = None) -> tuple[int | None, str]:
        self._check(relative)
        folder, _, name = relative.rpartition("/")
        return self._folder(folder, made), name

    def entry(self, relative: str) -> os.stat_result | None:
        """lstat of relative (a link is not followed), or None where nothing is."""
        self._trim()
        return self._entry(relative)

    def _entry(self, relative: str) -> os.stat_result | None:
        folder, name = self._parent(relative)
        if folder is None:
            return None
        try:
            return os.stat(name, dir_fd=folder, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise UsageError(f"cannot read {self.path(relative)}: {exc.strerror or exc}") from None

    def read(self, relative: str) -> tuple[bytes, int] | None:
        """The bytes and mode of the regular file at relative; None where nothing is. A
        link, a folder or a device there is refused."""
        self._trim()
        folder, name = self._parent(relative)
        if folder is None:
            return None
        try:
            # lstat first: a device planted in the tree is refused, never opened.
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise UsageError(f"cannot read {self.path(relative)}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            self._refuse(relative, "a regular file")
        try:
            descriptor = os.open(name, _FILE, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self._refuse(relative, "a regular file")
            raise UsageError(f"cannot read {self.path(relative)}: {exc.strerror or exc}") from None
        try:
            opened = os.fstat(descriptor)
            if not stat.S_ISREG(opened.st_mode):  # swapped since the lstat
                self._refuse(relative, "a regular file")
            # Its size and one more byte: a regular file reads whole up to its end, so
            # one read of a file that stays as it was; more only for one that grew.
            chunks = [os.read(descriptor, opened.st_size + 1)]
            if len(chunks[0]) > opened.st_size:
                while chunk := os.read(descriptor, 1 << 20):
                    chunks.append(chunk)
        except OSError as exc:
            raise UsageError(f"cannot read {self.path(relative)}: {exc.strerror or exc}") from None
        finally:
            os.close(descriptor)
        return b"".join(chunks), stat.S_IMODE(opened.st_mode)

    def read_text(self, relative: str) -> str | None:
        read = self.read(relative)
        if read is None:
            return None
        try:
            return read[0].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"cannot read {self.path(relative)}: {exc}") from None

    def replace(self, source: str, target: str) -> None:
        """Rename source over target, both in the same folder, through its descriptor."""
        self._trim()
        folder, source_name = self._parent(source)
        target_folder, target_name = self._parent(target)
        if folder is None or target_folder is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(self.path(source)))
        os.replace(source_name, target_name, src_dir_fd=folder, dst_dir_fd=target_folder)

    def unlink(self, relative: str) -> bool:
        """Remove the file (or link: never what it points at) at relative; whether one was."""
        self._trim()
        folder, name = self._parent(relative)
        if folder is None:
            return False
        try:
            os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            return False
        return True

    def rmdir(self, relative: str) -> None:
        """Remove the empty folder at relative (OSError where it is not empty)."""
        self._trim()
        folder, name = self._parent(relative)
        if folder is None:
            return
        os.rmdir(name, dir_fd=folder)
        for known in [k for k in self._folders if k == relative or k.startswith(relative + "/")]:
            os.close(self._folders.pop(known))

    def files(self, suffix: str) -> list[str]:
        """Every regular file whose name ends with suffix, anywhere in the tree, walked
        without following a link, in path order."""
        self._trim()
        root = self._folder("", None)
        if root is None:
            return []
        found = []
        for top, _folders, names, descriptor in os.fwalk(".", dir_fd=root, follow_symlinks=False):
            for name in names:
                if not name.endswith(suffix):
                    continue
                try:
                    info = os.stat(name, dir_fd=descriptor, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    found.append(str(PurePosixPath(top, name)).removeprefix("./"))
        return sorted(found)
