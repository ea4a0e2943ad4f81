"""Problems found in a spec, and the exit codes every command maps them to.

Exit codes are decided here and nowhere else:
0 the spec is valid (warnings allowed), 1 the spec is invalid (or `render
--check` found stale output), 2 the invocation is unusable or a file cannot be
read or written, 3 an internal error (a bug).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Literal, NamedTuple, TypeVar

from clustergen.base.codes import Code, Severity, is_registered

SpecPath = tuple[str | int, ...]


class ExitCode(IntEnum):
    OK = 0
    INVALID_SPEC = 1  # also: `render --check` found the tree on disk out of date
    USAGE = 2
    INTERNAL = 3  # a bug in clustergen; never expected
    PLAN_CHANGES = 4  # `plan`: applying the render changes the running cluster
    PLAN_DESTRUCTIVE = 5  # `plan`: ... and reformats at least one target


class Position(NamedTuple):
    """A place in a spec file. A tuple, as the loader makes one for every key and item
    of a spec (hundreds of thousands for a large one)."""

    line: int  # 1-based
    col: int  # 1-based


def _require_registered(code: Code) -> None:
    if not is_registered(code):
        raise ValueError(f"{code.name}: not a code registered in clustergen.base.codes")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec, located by its path inside the spec.

    `at` says whether the problem is with a mapping key itself (an unknown or
    duplicate key) or with the value under it (the usual case). The severity is
    the code's.
    """

    code: Code
    path: SpecPath
    message: str
    at: Literal["key", "value"] = "value"

    def __post_init__(self) -> None:
        _require_registered(self.code)

    @property
    def severity(self) -> Severity:
        return self.code.severity


@dataclass(frozen=True)
class LocatedProblem:
    file: str
    position: Position
    path: SpecPath
    message: str
    code: Code

    def __post_init__(self) -> None:
        _require_registered(self.code)

    @property
    def severity(self) -> Severity:
        return self.code.severity

    def format(self) -> str:
        where = f"{self.file}:{self.position.line}:{self.position.col}"
        dotted = format_path(self.path)
        label = "warning: " if self.severity == "warning" else ""
        text = f"{label}{self.message} [{self.code}]"
        return printable(f"{where}: {dotted}: {text}" if dotted else f"{where}: {text}")


def printable(text: str) -> str:
    """`text` on one line whatever the spec held: a control, format or separator character
    (a newline, U+001E, U+2028, a right-to-left override) is shown as its escape, so a
    quoted value neither breaks a problem line in two nor reorders it on a terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


@dataclass
class ClustergenError(Exception):
    """The one base error: anything that ends a command with a message, not a traceback."""

    message: str
    exit_code: ExitCode = ExitCode.USAGE
    problems: list[LocatedProblem] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


class UsageError(ClustergenError):
    """Unusable invocation, unreadable input or unwritable output (exit 2)."""


class SpecInvalid(ClustergenError):
    """The spec was read but is not valid (exit 1)."""

    def __init__(self, problems: list[LocatedProblem]) -> None:
        super().__init__("spec is invalid", ExitCode.INVALID_SPEC, problems)


def format_path(path: SpecPath) -> str:
    """('nodes', 0, 'hardware') -> 'nodes[0].hardware'."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out


Alike = TypeVar("Alike", Problem, LocatedProblem)

# A word of a message that may be an element's name: names are host-name labels
# (letters, digits, '-'; '_' too for some), never dotted.
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
NAMES_SHOWN = 3
# Alike problems keep a line each, each at its own position (an editor or a pull request
# annotates each), up to this many; more are a flood and print as one line. Up to it, a
# collapsed line could name every other element anyway.
ALIKE_KEPT_APART = NAMES_SHOWN + 1


def masked(message: str, names: Collection[str]) -> tuple[str, tuple[str, ...]]:
    """The message with each element name in it (a word in `names`) replaced by a NUL,
    and the names so replaced, in order: two problems whose masked messages are equal
    say the same thing about different elements."""
    found: list[str] = []

    def mask(word: re.Match[str]) -> str:
        if word[0] in names:
            found.append(word[0])
            return "\x00"
        return word[0]

    return _WORD.sub(mask, message), tuple(found)


def collapse_alike(problems: Sequence[Alike], names: Callable[[], Collection[str]]) -> list[Alike]:
    """The problems, with those of one code that say the same thing about different
    elements (the same message but for the names in it), when there are more than
    ALIKE_KEPT_APART of them, as one: the first, at its own position and path, with
    "(and N more like it: a, b, c, ...)" naming the others by the first name that varies
    among them (by their paths where only the paths differ). Order is kept. `names` (every
    element name of the spec) is asked for only when a code occurs often enough."""
    counts: dict[str, int] = {}
    for problem in problems:
        counts[problem.code.name] = counts.get(problem.code.name, 0) + 1
    if all(count <= ALIKE_KEPT_APART for count in counts.values()):
        return list(problems)
    known = names()
    groups: dict[tuple[str, str], list[tuple[Alike, tuple[str, ...]]]] = {}
    keys: list[tuple[str, str] | None] = []
    for problem in problems:
        if counts[problem.code.name] <= ALIKE_KEPT_APART:
            keys.append(None)
            continue
        text, found = masked(problem.message, known)
        key = (problem.code.name, text)
        groups.setdefault(key, []).append((problem, found))
        keys.append(key)
    out: list[Alike] = []
    for problem, at in zip(problems, keys, strict=True):
        if at is None:
            out.append(problem)
            continue
        group = groups[at]
        if len(group) <= ALIKE_KEPT_APART:
            out.append(problem)
        elif group[0][0] is problem:
            out.append(replace(problem, message=problem.message + _more_like_it(group)))
    return out


def _more_like_it(group: Sequence[tuple[Problem | LocatedProblem, tuple[str, ...]]]) -> str:
    """' (and 223 more like it: gpu02, gpu03, gpu04, ...)'."""
    slots = len(group[0][1])
    varying = next(
        (i for i in range(slots) if any(found[i] != group[0][1][i] for _, found in group)),
        None,
    )

    def name(problem: Problem | LocatedProblem, found: tuple[str, ...]) -> str:
        return found[varying] if varying is not None else format_path(problem.path)

    seen = {name(*group[0])}
    others: list[str] = []
    for problem, found in group[1:]:
        other = name(problem, found)
        if other not in seen:
            seen.add(other)
            others.append(other)
    shown = ", ".join(others[:NAMES_SHOWN]) + (", ..." if len(others) > NAMES_SHOWN else "")
    return f" (and {len(group) - 1} more like it{': ' + shown if shown else ''})"
