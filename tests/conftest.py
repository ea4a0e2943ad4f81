"""Fixtures, and the `generated` mark tests/regen.py selects (helpers live in tests/support/)."""

from __future__ import annotations

import os

import pytest

from clustergen.cli import main

from support.cli import Result

# The date validation judges Slurm's end of support on (catalog.slurm_releases.today), so
# the expected warnings stay the same whenever the tests run: 2026-11-25.
os.environ["SOURCE_DATE_EPOCH"] = "1795564800"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite each generated file a selected test compares (the golden trees, the "
        "repository's own render, the expected outputs, docs/errors.md, README's key table, "
        "the JSON Schema) from the current code; tests/regen.py selects them all; "
        "review the result with `git diff` before committing",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that takes update_golden compares a generated file: mark it `generated`,
    the mark tests/regen.py selects, so the one command refreshes every such file."""
    for item in items:
        if "update_golden" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.generated)


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run clustergen in-process: cli('validate', path) -> Result(code, out, err)."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def testbed_scratch(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Where node trees and repositories are built in CI (CI=true), once per test run, so
    the chroot and the booted tests share one debootstrap base (support.ansible_testbed)."""
    return tmp_path_factory.mktemp("testbed")
