"""The one command that refreshes every generated file this repository commits, and the
comparison each staleness test makes with it.

A test that compares a committed file with what the code generates takes the
`update_golden` fixture: conftest.py marks it `generated`, and tests/regen.py runs
every test so marked with --update-golden, which rewrites the file instead of
comparing. Its failure names that one command, whatever the file.
"""

from __future__ import annotations

import difflib
from pathlib import Path

REFRESH = ".venv/bin/python tests/regen.py"


def stale(what: str) -> str:
    """The message of a staleness failure: which file, and the one command."""
    return (
        f"{what} is not what the code generates; if the change is intended, run "
        f"`{REFRESH}` and read `git diff` before committing"
    )


def check_current(path: Path, current: str, update_golden: bool) -> None:
    """Compare the committed file with the generated text, or rewrite it (--update-golden)."""
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(current, encoding="utf-8")
        return
    committed = path.read_text(encoding="utf-8") if path.is_file() else None
    if committed != current:
        shown = _shown(path)
        diff = difflib.unified_diff(
            (committed or "").splitlines(),
            current.splitlines(),
            f"committed/{shown}" if committed is not None else "(missing)",
            f"generated/{shown}",
            lineterm="",
        )
        raise AssertionError("\n".join([*diff, stale(shown)]))


def _shown(path: Path) -> str:
    from support.paths import REPO

    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
