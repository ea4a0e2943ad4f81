"""No function in generator/clustergen/ is over MAX_LINES lines, except the flat tables and
argument parsers named in LONG (each with its reason; docs/architecture.md lists them).

A function is counted from its `def` (decorators aside) to its last line, as ast gives
them; a nested function counts in its own right and in the function around it. An
entry of LONG that no longer names a long function fails too, so the list cannot rot.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.paths import REPO

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

PACKAGE = REPO / "generator" / "clustergen"
ARCHITECTURE = REPO / "docs" / "architecture.md"
MAX_LINES = 80

# "module path under generator/clustergen:qualified name" -> why it may be long.
LONG = {
    "cli/__init__.py:_parser": (
        "an argument parser: one add_argument per option of each subcommand, read top to "
        "bottom as the command's help"
    ),
}


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """Each function's qualified name (Class.method, outer.inner) and its length."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            assert node.end_lineno is not None
            yield name, node.end_lineno - node.lineno + 1
            yield from functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def lengths(package: Path) -> dict[str, int]:
    """Every function of the package's modules, as 'module.py:qualname', and its length."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        for name, length in functions(ast.parse(path.read_text(encoding="utf-8"))):
            found[f"{module}:{name}"] = length
    return found


def too_long(found: dict[str, int], allowed: dict[str, str]) -> list[str]:
    """What fails: a long function not allowed, and an allowed one that is gone or short."""
    failures = [
        f"{name} is {length} lines (at most {MAX_LINES}): split it by what it computes, or, "
        "for a flat table or an argument parser, name it in LONG with its reason and in "
        "docs/architecture.md"
        for name, length in sorted(found.items())
        if length > MAX_LINES and name not in allowed
    ]
    failures += [
        f"{name} is in LONG but is "
        + ("gone" if name not in found else f"{found[name]} lines now")
        + ": take it out of LONG and docs/architecture.md"
        for name in sorted(allowed)
        if found.get(name, 0) <= MAX_LINES
    ]
    return failures


def test_no_function_is_over_the_limit_but_the_listed_ones() -> None:
    assert too_long(lengths(PACKAGE), LONG) == []


def test_the_listed_exceptions_are_in_the_architecture_doc() -> None:
    """docs/architecture.md names each exception (as `module.py:qualname`), and no other."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Long functions", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([\w/]+\.py:[\w.]+)`", section))
    assert listed == set(LONG)


@pytest.mark.parametrize(
    ("source", "allowed", "expected"),
    [
        # A long function, a long method, each by its qualified name; a nested function
        # counts in the function around it.
        (
            "def f():\n" + "    x = 1\n" * 80,
            {},
            ["m.py:f is 81 lines"],
        ),
        (
            "class C:\n    def g(self):\n" + "        x = 1\n" * 80,
            {},
            ["m.py:C.g is 81 lines"],
        ),
        (
            "def f():\n    def inner():\n" + "        x = 1\n" * 79 + "    return inner\n",
            {},
            ["m.py:f is 82 lines"],  # inner is 80
        ),
        # 80 lines is within the limit.
        ("def f():\n" + "    x = 1\n" * 79, {}, []),
        # An allowed long function passes; an allowed one that is gone or short fails.
        ("def f():\n" + "    x = 1\n" * 80, {"m.py:f": "a table"}, []),
        ("def f():\n    return 1\n", {"m.py:f": "a table"}, ["m.py:f is in LONG but is 2 lines"]),
        ("", {"m.py:f": "a table"}, ["m.py:f is in LONG but is gone"]),
    ],
)
def test_the_check_finds(
    tmp_path: Path, source: str, allowed: dict[str, str], expected: list[str]
) -> None:
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    failures = too_long(lengths(tmp_path), allowed)
    assert len(failures) == len(expected)
    for failure, start in zip(failures, expected, strict=True):
        assert failure.startswith(start), failure
