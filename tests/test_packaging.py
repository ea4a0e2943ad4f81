"""The package as users get it: a wheel with its templates and data, lint- and type-clean code."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

from support.ci import require, tool
from support.paths import EXAMPLES, GOLDEN, REPO
from support.trees import tree_on_disk


def test_wheel_installs_and_renders_the_goldens(tmp_path: Path) -> None:
    """A wheel (not the editable checkout) in a fresh venv renders byte-identical trees."""
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("clustergen-*.whl")
    env_dir = tmp_path / "venv"
    # The runtime dependencies come from this interpreter's site-packages, so the
    # test needs no network; clustergen itself comes only from the wheel.
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
        capture_output=True,
    )
    for spec in sorted(EXAMPLES.glob("*.yaml")):
        out = tmp_path / "out" / spec.stem
        proc = subprocess.run(
            [str(env_dir / "bin" / "clustergen"), "render", str(spec), "-o", str(out)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert tree_on_disk(out) == tree_on_disk(GOLDEN / spec.stem)
    location = subprocess.run(
        [str(python), "-c", "import clustergen; print(clustergen.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert str(env_dir) in location, f"imported the checkout, not the wheel: {location}"


def test_ruff_is_clean() -> None:
    """Plain `ruff check` at the repository root, as an editor or a contributor runs it."""
    require("ruff")
    proc = subprocess.run(
        [str(tool("ruff")), "check", "--no-cache"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    """Plain `mypy` at the repository root: pyproject.toml names the package, no tricks."""
    require("mypy")
    proc = subprocess.run(
        [str(tool("mypy")), "--no-incremental", "--cache-dir", "/dev/null"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
