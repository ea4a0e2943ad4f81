"""One command refreshes every generated file, and every staleness failure names it.

Each committed file that the code generates (the golden trees, the repository's own
render, the expected outputs, docs/errors.md, the README's key table, the JSON Schema)
has a test that takes the update_golden fixture; tests/regen.py runs exactly those.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import README, REPO, TESTS
from support.regen import REFRESH, check_current

# The repository's own files: the fast matrix leaves this to the main run.
pytestmark = pytest.mark.repository

REGEN = TESTS / "regen.py"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]


def _files_taking_update_golden() -> set[str]:
    found = set()
    for path in sorted(TESTS.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.FunctionDef)
                and node.name.startswith("test_")
                and any(arg.arg == "update_golden" for arg in node.args.args)
            ):
                found.add(path.name)
    return found


def test_the_command_selects_every_test_of_a_generated_file() -> None:
    listed = subprocess.run(
        [sys.executable, str(REGEN), "--collect-only"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    selected = {line.split("::")[0].removeprefix("tests/") for line in listed.stdout.splitlines()}
    expected = _files_taking_update_golden()
    assert {"test_golden.py", "test_schema.py", "test_lustre.py"} <= expected
    assert expected <= selected
    assert "test_the_repository_top_is_the_render_of_spec_yaml" in listed.stdout


@pytest.mark.parametrize("name", sorted(_files_taking_update_golden()))
def test_each_staleness_failure_names_the_one_command(name: str) -> None:
    """A test that compares a generated file fails through support.regen, whose
    message names the one command (not a command of its own)."""
    text = (TESTS / name).read_text(encoding="utf-8")
    assert "from support.regen import" in text, f"{name}: compare through support.regen"
    assert "--update-golden" not in text, f"{name} names its own refresh command"


def test_docs_name_the_one_command() -> None:
    """The docs name tests/regen.py; a paragraph may name the flag it passes only
    beside it (as the mechanism, not as a command of its own)."""
    for path in DOCS:
        for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
            assert "--update-golden" not in paragraph or "tests/regen.py" in paragraph, (
                f"{path.relative_to(REPO)} names another refresh command than "
                f"`{REFRESH}`: {paragraph.strip()[:200]}"
            )
    assert REFRESH in README.read_text(encoding="utf-8")
    assert REFRESH in (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_a_stale_file_fails_naming_the_command_and_the_command_rewrites_it(
    tmp_path: Path,
) -> None:
    committed = tmp_path / "generated.txt"
    committed.write_text("old\n", encoding="utf-8")
    with pytest.raises(AssertionError) as failure:
        check_current(committed, "new\n", update_golden=False)
    assert f"run `{REFRESH}`" in str(failure.value)
    assert "-old" in str(failure.value) and "+new" in str(failure.value)
    check_current(committed, "new\n", update_golden=True)
    assert committed.read_text(encoding="utf-8") == "new\n"
    check_current(committed, "new\n", update_golden=False)
