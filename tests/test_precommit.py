"""The pre-commit hooks of .pre-commit-hooks.yaml, run by pre-commit itself.

`pre-commit try-repo` installs this repository the way a site's
.pre-commit-config.yaml would, and runs each hook in a fixture site repository.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import EXAMPLES, REPO

BIN = Path(sys.executable).parent


def run(cwd: Path, *argv: str | Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "PRE_COMMIT_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's cache, shared so each hook environment is installed once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def site(tmp_path: Path, home: Path) -> Path:
    """A site repository with spec.yaml and the tree it renders at its top."""
    repository = tmp_path / "site"
    repository.mkdir()
    shutil.copy(EXAMPLES / "ml-training-8node.yaml", repository / "spec.yaml")
    assert (
        run(repository, BIN / "clustergen", "render", "spec.yaml", "-o", ".", home=home).returncode
        == 0
    )
    for argv in (["init", "-q"], ["add", "-A"]):
        assert run(repository, "git", *argv, home=home).returncode == 0
    return repository


def try_repo(site: Path, hook: str, home: Path) -> subprocess.CompletedProcess[str]:
    return run(site, BIN / "pre-commit", "try-repo", REPO, hook, "--all-files", home=home)


def test_manifest_is_valid_for_pre_commit(home: Path) -> None:
    result = run(REPO, BIN / "pre-commit", "validate-manifest", ".pre-commit-hooks.yaml", home=home)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_validate_hook(site: Path, home: Path) -> None:
    passed = try_repo(site, "clustergen-validate", home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "clustergen validate" in passed.stdout and "Passed" in passed.stdout

    spec = site / "spec.yaml"
    spec.write_text(spec.read_text().replace("default: true,", "defualt: true,"))
    failed = try_repo(site, "clustergen-validate", home)
    assert failed.returncode == 1
    assert "spec.yaml:" in failed.stdout and "defualt" in failed.stdout


@pytest.mark.slow
def test_check_hook(site: Path, home: Path) -> None:
    passed = try_repo(site, "clustergen-check", home)
    assert passed.returncode == 0, passed.stdout + passed.stderr

    spec = site / "spec.yaml"
    spec.write_text(spec.read_text().replace(": 550.90.07", ": 550.127.05"))  # driver and FM
    stale = try_repo(site, "clustergen-check", home)
    assert stale.returncode == 1
    assert "differ from what spec.yaml renders" in stale.stdout
