"""Read Slurm's configuration files as slurmctld does (slurm.conf(5), gres.conf(5),
topology.conf(5), cgroup.conf(5), slurmdbd.conf(5)): `Include` (a relative path is
read from the including file's folder, as slurmctld 22.05 reads it; nested), backslash
continuations, `#` comments outside double quotes, keys in any case, spaces around '=',
double-quoted values, and one line holding several Key=Value pairs (NodeName,
PartitionName, SwitchName, Name lines)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path

# Slurm stops following Include lines this deep (a loop would never end).
MAX_INCLUDE_DEPTH = 16


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
            pairs.append((key, value.replace("\\#", "#")))
        else:
            bare.append(word)
    return pairs, bare


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


def read_conf(root: Path, name: str) -> ConfFile:
    """Read root/name with its Include files. A missing top file raises ConfError."""
    conf = ConfFile()
    _read_into(conf, root, name, depth=0, seen=())
    return conf


def _read_into(conf: ConfFile, root: Path, name: str, depth: int, seen: tuple[str, ...]) -> None:
    path = Path(name) if Path(name).is_absolute() else root / name
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfError(f"{path}: {exc.strerror or exc}") from exc
    for number, body in _logical_lines(text):
        if not body:
            continue
        head, _, rest = body.partition(" ")
        where = f"{name}:{number}"
        if head.lower() == "include" and "=" not in head:
            target = rest.strip().strip('"')
            # slurmctld reads a relative path from the including file's folder
            # (s_p_parse_file: "cannot stat file <folder of the file>/<path>").
            target = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
            if depth + 1 > MAX_INCLUDE_DEPTH or target in seen:
                conf.unreadable.append((where, f"Include {target}: nested too deeply"))
                continue
            try:
                _read_into(conf, root, target, depth + 1, (*seen, name))
            except ConfError as exc:
                conf.unreadable.append((where, f"Include {target}: {exc}"))
            continue
        pairs, bare = split_pairs(body)
        if bare or not pairs:
            conf.unreadable.append((where, f"not Key=Value: {body}"))
            continue
        conf.lines.append(ConfLine(name, number, tuple(pairs), body))
