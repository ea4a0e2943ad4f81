#!/usr/bin/env python3
"""Refresh every generated file this repository commits, from the current code.

    .venv/bin/python tests/regen.py

It rewrites the golden trees (tests/golden/, and the top of this repository, which is
the render of spec.yaml), the expected outputs (tests/invalid/*.expected,
tests/warnings/*.expected, tests/formats/), docs/errors.md, the README's key table and
schemas/clustergen.schema.json. Each of those files has a test that compares it with
what the code generates; this runs those tests (the ones conftest.py marks `generated`:
every test taking the `update_golden` fixture) with --update-golden, which rewrites
the file instead. Read `git diff` line by line before committing. Arguments are passed
on to pytest (`--collect-only` lists the tests it runs).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    command = [sys.executable, "-m", "pytest", "-m", "generated", "--update-golden", "-q"]
    return subprocess.run([*command, *argv], cwd=REPO, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
