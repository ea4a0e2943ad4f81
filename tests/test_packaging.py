"""The package as users get it: the README quick start, a wheel that carries templates, data
and the Ansible site files, and lint- and type-clean code."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clustergen.model.common import expand_hostlist

from support.ci import require, tool
from support.paths import EXAMPLES, README, REPO
from support.trees import generated_only, golden_tree, site_sources, tree_on_disk

# The first ```sh block after "## Quick start": the commands a new user types.
_QUICK_START = re.compile(r"^## Quick start\n.*?^```sh\n(?P<commands>.*?)^```", re.S | re.M)
_RENDER_OUTPUT = re.compile(r"clustergen render (?P<spec>\S+) -o (?P<out>\S+)")


def _clean_env(tmp_path: Path, *path: Path) -> dict[str, str]:
    """PATH with only the given directories and the system's; a HOME of its own, so no
    collection, config or package installed for the user is seen. The pip cache is
    shared, so reruns download nothing."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": ":".join([*(str(p) for p in path), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "NO_COLOR": "1",
    }


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, (
        f"{' '.join(argv)} exited {proc.returncode}\n{proc.stdout}{proc.stderr}"
    )
    return proc.stdout


def _fresh_clone(target: Path) -> None:
    """The repository as a clone would have it: tracked and new files, no .venv or caches."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.mark.slow
def test_quick_start_renders_a_tree_that_applies_with_only_the_wheel_and_ansible(
    tmp_path: Path,
) -> None:
    """The README's quick start, typed as written into a fresh clone with this Python as
    python3 and nothing else on PATH; then, inside the rendered tree alone, with only
    clustergen's wheel and the `ansible` package installed: both playbooks pass
    --syntax-check, the inventory parses, and ansible-lint's production profile passes."""
    require("git")
    clone = tmp_path / "clone"
    _fresh_clone(clone)
    python_dir = tmp_path / "python"
    python_dir.mkdir()
    (python_dir / "python3").symlink_to(sys.executable)
    env = _clean_env(tmp_path, python_dir)

    readme = README.read_text(encoding="utf-8")
    quick_start = _QUICK_START.search(readme)
    assert quick_start, "README.md has no ```sh block under '## Quick start'"
    commands = quick_start.group("commands")
    _run(["bash", "-euo", "pipefail", "-c", commands], clone, env)

    venv_bin = clone / ".venv" / "bin"
    location = _run(
        [str(venv_bin / "python"), "-c", "import clustergen; print(clustergen.__file__)"],
        tmp_path,
        env,
    )
    assert str(clone / ".venv") in location, f"imported a checkout, not the wheel: {location}"
    shipped = _run(
        [str(venv_bin / "python"), "-c", _SHIPS_DEVELOPMENT_TOOLS],
        tmp_path,
        env,
    )
    assert shipped.strip() == "False", "the wheel ships clustergen.dev, the development tools"

    rendered = _RENDER_OUTPUT.search(commands)
    assert rendered, "the quick start renders no example"
    out = clone / rendered.group("out")
    spec = Path(rendered.group("spec")).stem
    tree = tree_on_disk(out)
    assert generated_only(tree) == golden_tree(spec)
    assert {path: tree.get(path) for path in site_sources()} == site_sources()
    for other in sorted(EXAMPLES.glob("*.yaml")):
        target = tmp_path / "trees" / other.stem
        _run([str(venv_bin / "clustergen"), "render", str(other), "-o", str(target)], tmp_path, env)
        assert generated_only(tree_on_disk(target)) == golden_tree(other.stem)

    # What a site installs to apply the tree: the wheel (above) and Ansible.
    _run([str(venv_bin / "pip"), "install", "-q", "ansible", "ansible-lint"], tmp_path, env)
    ansible_env = _clean_env(tmp_path, venv_bin)
    for playbook in ("site.yml", "verify.yml"):
        _run(["ansible-playbook", playbook, "--syntax-check"], out, ansible_env)
    graph = _run(["ansible-inventory", "--graph"], out, ansible_env)
    first_gpu = yaml.safe_load((out / "versions.lock").read_text())["groups"]["nvidia_gpu"]
    assert "@nvidia_gpu:" in graph and f"--{expand_hostlist(first_gpu['nodes'])[0]}" in graph
    _run(["ansible-lint", "--offline", "--profile", "production"], out, ansible_env)


def test_ruff_is_clean() -> None:
    """Plain `ruff check` at the repository root, as an editor or a contributor runs it."""
    require("ruff")
    proc = subprocess.run(
        [str(tool("ruff")), "check", "--no-cache"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
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


_SHIPS_DEVELOPMENT_TOOLS = (
    "import importlib.util; print(importlib.util.find_spec('clustergen.dev') is not None)"
)
# What only clustergen's own development uses (the doc generators, the large-spec
# generator): kept out of the wheel.
DEVELOPMENT_ONLY = {"clustergen.dev"}


def test_every_python_package_ships_in_the_wheel() -> None:
    """pyproject.toml lists the packages (two of them are remapped data trees); a new
    subpackage that is not listed would be missing from the wheel. The development tools
    alone stay out."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    listing = re.search(r"^packages = \[(.*?)\]", text, re.S | re.M)
    assert listing is not None
    listed = set(re.findall(r'"([\w.]+)"', listing[1]))
    package_root = REPO / "generator"
    found = {
        ".".join(init.parent.relative_to(package_root).parts)
        for init in package_root.glob("clustergen/**/__init__.py")
    }
    assert found - listed - DEVELOPMENT_ONLY == set(), "add these to [tool.setuptools] packages"
    assert not listed & DEVELOPMENT_ONLY, "the development tools do not ship"
