"""Read Slurm's configuration files as slurmctld does (slurm.conf(5), gres.conf(5),
topology.conf(5), cgroup.conf(5), slurmdbd.conf(5)): `Include` (a relative path is
read from the including file's folder, as slurmctld 22.05 reads it; nested), backslash
continuations, `#` comments outside double quotes, keys in any case, spaces around '=',
double-quoted values, and one line holding several Key=Value pairs (NodeName,
PartitionName, SwitchName, Name lines)."""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

# Slurm stops following Include lines this deep (a loop would never end).
MAX_INCLUDE_DEPTH = 16
# What one import reads at most: the files of a configuration directory are small (a
# 65,536-node slurm.conf written out is a few MB), and an Include fan-out, a FIFO or
# /dev/zero must end with a clear refusal, not a hang or the machine's memory.
# Memory follows the count of lines and Key=Value pairs more than the bytes (a file of
# 'a=b' lines holds a record per 4 bytes), so those are bounded too: a 65,536-node
# configuration written out one NodeName line per node, with its topology.conf, is some
# 70,000 lines and 700,000 pairs.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_FILES = 1024
MAX_LINES = 300_000
MAX_PAIRS = 1_000_000
# Where sites keep Slurm's configuration (the packages' and SchedMD's default SYSCONFDIR):
# an absolute Include in it names the same file of the directory imported.
CONFIG_FOLDERS = ("/etc/slurm", "/etc/slurm-llnl", "/usr/local/etc/slurm")


class ConfError(Exception):
    """A file that cannot be read at all (missing, unreadable, an Include loop)."""


@dataclass(frozen=True)
class ConfLine:
    """One logical line: where it starts and its Key=Value pairs, keys as written."""

    file: str  # the path relative to the configuration directory
    line: int
    pairs: tuple[tuple[str, str], ...]
    text: str  # the logical line, continuations joined, comment removed

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def key(self) -> str:
        """The first key, lower case: what kind of line this is."""
        return self.pairs[0][0].lower() if self.pairs else ""

    @property
    def value(self) -> str:
        return self.pairs[0][1] if self.pairs else ""

    def get(self, key: str) -> str | None:
        """The value of `key` (any case), the last one where it is given twice."""
        found = None
        for name, value in self.pairs:
            if name.lower() == key.lower():
                found = value
        return found


@dataclass
class ConfFile:
    """A file's logical lines (with its Includes'), and the lines it could not read."""

    lines: list[ConfLine] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (file:line, why)


def strip_comment(text: str) -> str:
    """The text before a `#` that is outside double quotes (`\\#` is a literal #)."""
    quoted = False
    for index, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted and (index == 0 or text[index - 1] != "\\"):
            return text[:index]
    return text


def split_pairs(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Key=Value words, a double-quoted value kept whole (quotes removed); words without
    '=' are returned apart."""
    words: list[str] = []
    current: list[str] = []
    quoted = False
    for char in _tight(text):
        if char == '"':
            quoted = not quoted
            continue
        if char.isspace() and not quoted:
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        words.append("".join(current))
    pairs, bare = [], []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key:
            pairs.append((key, _unescaped(value)))
        else:
            bare.append(word)
    return pairs, bare


_ESCAPE = re.compile(r"\\(.?)", re.S)


def _unescaped(value: str) -> str:
    """A value as Slurm reads it: every backslash dropped and the character after it taken
    as it is (src/common/parse_config.c, _strip_escapes): `/t\\mp/p` is /tmp/p, and `\\#`
    a '#' that starts no comment."""
    return _ESCAPE.sub(r"\1", value)


def _tight(text: str) -> str:
    """Spaces around '=' outside double quotes removed (Slurm's parser allows them)."""
    out: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "=" and not quoted:
            while out and out[-1].isspace():
                out.pop()
            out.append(char)
            continue
        if char.isspace() and not quoted and out and out[-1] == "=":
            continue
        out.append(char)
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) with backslash continuations joined."""
    lines: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        body = strip_comment(raw).rstrip()
        if not pending:
            start = number
        if body.endswith("\\"):
            pending.append(body[:-1])
            continue
        pending.append(body)
        lines.append((start, " ".join(part.strip() for part in pending).strip()))
        pending = []
    if pending:
        lines.append((start, " ".join(part.strip() for part in pending).strip()))
    return lines


def read_conf(root: Path, name: str, folders: tuple[str, ...] = CONFIG_FOLDERS) -> ConfFile:
    """Read root/name with its Include files. A missing top file raises ConfError.

    Untrusted input (docs/security.md): an Include is read only inside root (a relative
    path from the including file's folder, or an absolute one in one of `folders`, the
    places the cluster keeps its configuration, which names the same file of root), only
    a regular file, within the budget of MAX_FILE_BYTES, MAX_TOTAL_BYTES and MAX_FILES;
    anything else is listed as not read, and no line of a refused file is read or echoed."""
    conf = ConfFile()
    root = root.resolve()
    budget = _Budget(folders=tuple(folder.rstrip("/") for folder in folders))
    if _inside(root, name, budget.folders) is None:
        raise ConfError(f"{root / name}: leads outside the directory imported: not read")
    _read_into(conf, root, name, depth=0, seen=(), budget=budget)
    return conf


@dataclass
class _Budget:
    files: int = 0
    total: int = 0
    lines: int = 0
    pairs: int = 0
    spent: bool = False  # said once; every Include after it is left unread
    folders: tuple[str, ...] = CONFIG_FOLDERS  # an absolute Include in one of them is root's


def _inside(root: Path, name: str, folders: tuple[str, ...]) -> str | None:
    """The path of an Include target relative to root, or None where it leads outside."""
    if name.startswith("/"):
        folder = next((f for f in folders if name.startswith(f + "/")), None)
        if folder is None:
            return None
        name = name[len(folder) + 1 :]
    relative = posixpath.normpath(name)
    if relative.startswith(("../", "/")) or relative in ("..", "."):
        return None
    resolved = (root / relative).resolve()
    if resolved != root and root not in resolved.parents:
        return None  # through a link that leads out of the directory
    return relative


def _folder_holding(root: Path, written: str) -> str | None:
    """The folder of an absolute Include path below which root holds the same file
    (/opt/slurm/etc for /opt/slurm/etc/pcluster/a.conf where root has pcluster/a.conf),
    the deepest first; None for a relative path or one root does not hold."""
    if not written.startswith("/"):
        return None
    parts = posixpath.normpath(written).split("/")[1:]
    for cut in range(len(parts) - 1, 0, -1):
        relative = "/".join(parts[cut:])
        candidate = root / relative
        inside = ".." not in parts[cut:] and root in candidate.resolve().parents
        if inside and candidate.is_file():
            return "/" + "/".join(parts[:cut])
    return None


def _read_bounded(path: Path, budget: _Budget) -> str:
    """A regular file's text, within the import's budget; ConfError otherwise."""
    budget.files += 1
    if budget.files > MAX_FILES:
        raise ConfError(f"more than {MAX_FILES} files: not read")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise ConfError(f"{path}: {exc.strerror or exc}") from exc
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ConfError(f"{path}: not a regular file: not read")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ConfError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB: not read")
    budget.total += len(data)
    if budget.total > MAX_TOTAL_BYTES:
        raise ConfError(f"{path}: the files read pass {MAX_TOTAL_BYTES // 2**20} MiB: not read")
    return data.decode("utf-8", errors="replace")


def _read_into(
    conf: ConfFile, root: Path, name: str, depth: int, seen: tuple[str, ...], budget: _Budget
) -> None:
    path = Path(name) if Path(name).is_absolute() else root / name
    text = _read_bounded(path, budget)
    for number, body in _logical_lines(text):
        if not body:
            continue
        budget.lines += 1
        if budget.lines > MAX_LINES:
            raise ConfError(f"{path}: the files read pass {MAX_LINES:,} lines: not read")
        head, _, rest = body.partition(" ")
        where = f"{name}:{number}"
        if head.lower() == "include" and "=" not in head:
            written = rest.strip().strip('"')
            # slurmctld reads a relative path from the including file's folder
            # (s_p_parse_file: "cannot stat file <folder of the file>/<path>").
            joined = (
                written
                if written.startswith("/")
                else posixpath.join(posixpath.dirname(name), written)
            )
            target = _inside(root, joined, budget.folders)
            if target is None:
                folder = _folder_holding(root, written)
                hint = (
                    f" (DIR holds it as {written.removeprefix(folder + '/')}: where "
                    f"{folder} is the cluster's configuration folder, name it: "
                    f"--config-folder {folder})"
                    if folder
                    else ""
                )
                conf.unreadable.append(
                    (where, f"Include {written}: outside the directory imported: not read{hint}")
                )
                continue
            if budget.spent:
                continue
            if budget.files >= MAX_FILES:
                budget.spent = True
                conf.unreadable.append(
                    (
                        where,
                        f"Include {target}: more than {MAX_FILES} files: this and every "
                        "later Include not read",
                    )
                )
                continue
            if depth + 1 > MAX_INCLUDE_DEPTH or target in seen:
                conf.unreadable.append((where, f"Include {target}: nested too deeply"))
                continue
            try:
                _read_into(conf, root, target, depth + 1, (*seen, name), budget)
            except ConfError as exc:
                conf.unreadable.append((where, f"Include {target}: {exc}"))
            continue
        pairs, bare = split_pairs(body)
        if bare or not pairs:
            # An included file's text is never echoed (it may be anything the site's
            # files name); the top file's line is, escaped where it is written.
            shown = f": {body}" if depth == 0 else f" ({len(body)} characters)"
            conf.unreadable.append((where, f"not Key=Value{shown}"))
            continue
        budget.pairs += len(pairs)
        if budget.pairs > MAX_PAIRS:
            raise ConfError(f"{path}: the files read pass {MAX_PAIRS:,} settings: not read")
        conf.lines.append(ConfLine(name, number, tuple(pairs), body))
