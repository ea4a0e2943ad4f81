"""Compare a rendered tree with what is on disk, and write it atomically.

Only files clustergen wrote (listed in the manifest) are ever replaced or
removed; everything else in the output directory is left alone.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clustergen.artifacts import Artifact
from clustergen.errors import UsageError

MANIFEST = ".clustergen-manifest"
_MANIFEST_HEADER = (
    "# Files rendered by clustergen; it removes these when a spec no longer renders them.\n"
)

Action = Literal["create", "change", "unchanged", "remove"]


@dataclass(frozen=True)
class Change:
    path: str
    action: Action
    old: str | None
    new: str | None


def with_manifest(files: dict[str, Artifact]) -> dict[str, Artifact]:
    listing = _MANIFEST_HEADER + "".join(f"{path}\n" for path in sorted(files))
    return {**files, MANIFEST: Artifact(MANIFEST, listing)}


def plan(out_dir: Path, files: dict[str, Artifact], *, adopt: bool = False) -> list[Change]:
    """What writing files into out_dir would do. Files clustergen did not write (absent
    from the manifest) are never overwritten unless adopt is set."""
    previous = _previous_outputs(out_dir)
    changes = []
    foreign = []
    for path, rendered in sorted(files.items()):
        _refuse_non_file(out_dir, path)
        old = _read(out_dir / path)
        if old is not None and path not in previous and path != MANIFEST:
            foreign.append(path)
        if old is None:
            changes.append(Change(path, "create", None, rendered.text))
        elif old != rendered.text or _mode(out_dir / path) != rendered.mode:
            changes.append(Change(path, "change", old, rendered.text))
        else:
            changes.append(Change(path, "unchanged", old, rendered.text))
    if foreign and not adopt:
        shown = ", ".join(foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        )
        raise UsageError(
            f"{out_dir} holds files that clustergen did not write and would replace: {shown}; "
            "render into another directory, or pass --adopt to take them over"
        )
    for path in sorted(previous - set(files)):
        changes.append(Change(path, "remove", _read(out_dir / path), None))
    return changes


def unified_diff(change: Change) -> str:
    old = (change.old or "").splitlines(keepends=True)
    new = (change.new or "").splitlines(keepends=True)
    from_name = f"a/{change.path}" if change.old is not None else "/dev/null"
    to_name = f"b/{change.path}" if change.new is not None else "/dev/null"
    text = "".join(difflib.unified_diff(old, new, from_name, to_name))
    return text if text.endswith("\n") or not text else text + "\n"


def write(out_dir: Path, files: dict[str, Artifact], changes: list[Change]) -> None:
    """Write every created or changed file through a temporary file, then swap them all in.

    Every new file is complete on disk before the first one replaces an old
    file, so a failure while writing leaves the previous tree as it was.
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for change in changes:
            if change.action in ("create", "change"):
                target = out_dir / change.path
                staged.append((_stage(target, files[change.path]), target))
    except OSError as exc:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    try:
        for temporary, target in staged:
            os.replace(temporary, target)
        for change in changes:
            if change.action == "remove":
                (out_dir / change.path).unlink(missing_ok=True)
                _prune_empty_parents(out_dir, out_dir / change.path)
    except OSError as exc:
        raise UsageError(f"cannot write {out_dir}: {exc.strerror or exc}") from None


def _stage(target: Path, rendered: Artifact) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.clustergen-tmp")
    with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(rendered.text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temporary, rendered.mode)
    return temporary


def _refuse_non_file(out_dir: Path, path: str) -> None:
    """Fail before anything is written if a target, or a folder on its way, is in the way."""
    target = out_dir / path
    for parent in reversed(target.parents):
        if parent.is_relative_to(out_dir) and parent.exists() and not parent.is_dir():
            raise UsageError(f"cannot write {target}: {parent} is not a directory")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise UsageError(f"cannot write {target}: it exists and is not a regular file")


def _prune_empty_parents(root: Path, path: Path) -> None:
    parent = path.parent
    while parent != root and parent.is_relative_to(root):
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def _previous_outputs(out_dir: Path) -> set[str]:
    text = _read(out_dir / MANIFEST)
    if text is None:
        return set()
    paths = set()
    for line in text.splitlines():
        line = line.strip()
        # Never follow a manifest outside the output directory.
        if (
            line
            and not line.startswith("#")
            and ".." not in Path(line).parts
            and not line.startswith("/")
        ):
            paths.add(line)
    return paths


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)
