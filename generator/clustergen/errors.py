"""Problems found in a spec, and the exit codes every command maps them to.

Exit codes are decided here and nowhere else:
0 the spec is valid (warnings allowed), 1 the spec is invalid (or `render
--check` found stale output), 2 the invocation is unusable or a file cannot be
read or written, 3 an internal error (a bug).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Literal, NamedTuple

from clustergen.codes import Code, Severity, is_registered

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
        raise ValueError(f"{code.name}: not a code registered in clustergen.codes")


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
