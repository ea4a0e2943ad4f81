"""Shared fixtures: the CLI runner, the golden-refresh flag, and tools that must exist in CI."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from clustergen.cli import main

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
REFERENCE_SPECS = sorted(EXAMPLES.glob("*.yaml"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden and tests/invalid/*.expected from the current code; "
        "review the result with `git diff` before committing",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run clustergen in-process: cli('validate', path) -> Result(code, out, err)."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(*tools: str, root: bool = False) -> None:
    """Skip locally when a real consumer is missing; in CI a missing consumer is a failure."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if root and os.geteuid() != 0:
        missing.append("root privileges")
    if missing:
        message = f"needs {', '.join(missing)}"
        if in_ci():
            pytest.fail(f"{message}, and CI must run this test (.ci/run installs it)")
        pytest.skip(message)
