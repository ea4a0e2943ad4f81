"""The CI switch, and finding the tools a test hands its files to.

Locally a test whose real consumer is missing skips, naming the one command that
installs every tool the full suite needs (INSTALL); in CI (CI=true) it fails, because
.ci/run runs that command and CI must run every test.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

import pytest

# Installs every Debian package and tool the full suite needs (root, Debian 12 or later).
INSTALL = "sudo .ci/install-deps"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def tool(name: str) -> str | None:
    """A command installed beside this Python (a venv's bin/, which need not be on PATH),
    else the one on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def require(*tools: str, root: bool = False) -> None:
    """Skip locally when a real consumer is missing; in CI a missing consumer is a failure."""
    missing = [name for name in tools if tool(name) is None]
    if missing:
        skip_or_fail(f"needs {', '.join(missing)}")
    if root and os.geteuid() != 0:
        skip_or_fail("needs root privileges (run the test command as root)", install=False)


def skip_or_fail(message: str, install: bool = True) -> NoReturn:
    """Skip the calling test locally, saying what installs the missing piece (unless
    `install` is false: nothing to install); in CI fail it, because CI must run every
    test."""
    if in_ci():
        pytest.fail(f"{message}, and CI must run this test (.ci/run installs it)")
    pytest.skip(
        f"{message}; `{INSTALL}` installs every tool the full suite needs" if install else message
    )
