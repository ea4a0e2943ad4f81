"""Problems as the user asked to see them: text lines, GitHub workflow commands, or JSON.

Text is for people (stderr, with a summary per spec); `github` makes each problem
an annotation on the spec's line in a pull request; `json` is one array for tools.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from clustergen.base.errors import LocatedProblem, format_path

Format = Literal["text", "github", "json"]
FORMATS: tuple[Format, ...] = ("text", "github", "json")


def github_line(problem: LocatedProblem) -> str:
    """`::error file=F,line=L,col=C,title=CODE::path: message`, escaped as GitHub reads it."""
    properties = ",".join(
        f"{key}={_escape_property(str(value))}"
        for key, value in (
            ("file", problem.file),
            ("line", problem.position.line),
            ("col", problem.position.col),
            ("title", problem.code.name),
        )
    )
    dotted = format_path(problem.path)
    text = f"{dotted}: {problem.message}" if dotted else problem.message
    return f"::{problem.severity} {properties}::{_escape_data(text)}"


def json_record(problem: LocatedProblem) -> dict[str, object]:
    return {
        "file": problem.file,
        "line": problem.position.line,
        "column": problem.position.col,
        "path": format_path(problem.path),
        "code": problem.code.name,
        "severity": problem.severity,
        "message": problem.message,
    }


def json_document(problems: Sequence[LocatedProblem]) -> str:
    return json.dumps([json_record(p) for p in problems], indent=2, ensure_ascii=False) + "\n"


# GitHub's workflow-command escaping (actions/toolkit, core/src/command.ts).
def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
