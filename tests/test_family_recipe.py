"""docs/architecture.md's recipe for an output family, tried as a new maintainer would:
in a scratch copy of the repository, a toy family `gpuhealth` (one health.conf per GPU
profile, on that profile's nodes, and a service of its own, clustergen-gpuhealth, which a
change to the file restarts) is three hand-written files and nothing else. Every check of
the places a family needs (tests/test_family_places.py, the layer table, the wheel's
package list, the README's folder table) passes with them, and the render installs the
unit, starts it, watches it in the converge check and restarts it on a change; removed
again, the copy is as it was. The generated files (goldens, the repository's top) are the one
refresh, `tests/regen.py`, which this trial leaves out: they follow the code, whatever
family it has."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clustergen.outputs.ansible.files import FAMILIES_HANDLER

from support.paths import REPO

pytestmark = pytest.mark.slow

TOY = {
    "generator/clustergen/outputs/gpuhealth.py": '''"""A toy family: health.conf and its service."""

from __future__ import annotations

import jinja2

from clustergen.base.artifacts import Artifact, Install, NodeChange
from clustergen.catalog.groups import hardware_group
from clustergen.resolve import ResolvedCluster
from clustergen.templating import render_template

SERVICE = "clustergen-gpuhealth"
UNIT = f"/etc/systemd/system/{SERVICE}.service"
RESTART = NodeChange("restart", SERVICE)


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    used = {host.hardware_name for host in cluster.hosts}
    profiles = [
        (name, profile.gpu.count)
        for name, profile in cluster.spec.hardware.items()
        if profile.gpu is not None and name in used
    ]
    artifacts = []
    for name, count in profiles:
        group = hardware_group(name)
        text = render_template(env, "gpuhealth/health.conf.j2", cluster, gpus=count)
        conf = Install("/etc/clustergen/gpuhealth.conf", group, RESTART)
        unit = Install(UNIT, group, RESTART, start=True)
        artifacts.append(Artifact(f"gpuhealth/{name}/health.conf", text, install=conf))
        text = render_template(env, "gpuhealth/clustergen-gpuhealth.service.j2", cluster)
        artifacts.append(Artifact(f"gpuhealth/{name}/{SERVICE}.service", text, install=unit))
    return artifacts
''',
    "templates/gpuhealth/health.conf.j2": "# {{ spec.cluster.name }}\ngpus={{ gpus }}\n",
    "templates/gpuhealth/clustergen-gpuhealth.service.j2": (
        "[Unit]\nDescription=GPU health (toy family)\n\n"
        "[Service]\nType=oneshot\nRemainAfterExit=yes\n"
        "ExecStart=/bin/grep -q gpus= /etc/clustergen/gpuhealth.conf\n\n"
        "[Install]\nWantedBy=multi-user.target\n"
    ),
}
# The checks that name a place a family needs, run in the scratch copy.
PLACE_CHECKS = [
    "tests/test_family_places.py",
    "tests/test_imports.py",
    "tests/test_readme.py::test_readme_first_screen_says_what_each_top_level_folder_is",
    "tests/test_packaging.py::test_every_python_package_ships_in_the_wheel",
]


def _scratch(tmp_path: Path) -> Path:
    """The repository's files (tracked, and new ones not ignored) in a scratch git
    repository, the package importable from there with its templates and site files."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    root = tmp_path / "repo"
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    # clustergen.templates is the top-level templates/ (pyproject.toml's package-dir);
    # importing from the copy needs it beside the modules, as in the wheel.
    (root / "generator" / "clustergen" / "templates").symlink_to(root / "templates")
    identity = ["-c", "user.name=trial", "-c", "user.email=trial@example.invalid"]
    for command in (["init", "-q"], ["add", "-A"], [*identity, "commit", "-q", "-m", "before"]):
        subprocess.run(["git", *command], cwd=root, check=True)
    return root


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root / "generator"), "PYTHONDONTWRITEBYTECODE": "1"}


def _places_pass(root: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider", *PLACE_CHECKS],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]


def _render(root: Path, out: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "clustergen", "render", "-o", str(out), "spec.yaml"],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_a_family_with_a_service_of_its_own_is_three_files_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    root = _scratch(tmp_path)
    for name, text in TOY.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    _places_pass(root)

    out = tmp_path / "tree"
    _render(root, out)
    groups = out / "files" / "groups"
    entries = [
        entry
        for path in sorted(groups.glob("*.yml"))
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")) or []
        if entry["family"] == "gpuhealth"
    ]
    unit = [e for e in entries if e["dest"].endswith(".service")]
    conf = [e for e in entries if e["dest"] == "/etc/clustergen/gpuhealth.conf"]
    assert unit and conf, entries
    assert all(e["installed_by"] == "families" for e in entries)
    assert all(e["notify"] == FAMILIES_HANDLER for e in entries)
    assert all(e["start"] == {"name": "clustergen-gpuhealth.service"} for e in unit)
    assert (out / "roles" / "families" / "handlers" / "main.yml").is_file()
    check = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "--syntax-check", "site.yml"],
        cwd=out,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr

    for name in TOY:
        (root / name).unlink()
    (root / "templates" / "gpuhealth").rmdir()
    # Nothing left: the copy is then the repository as committed before the toy, whose
    # place checks the main suite runs on the repository itself.
    left = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
    )
    assert left.stdout == "", f"the toy family, removed, left behind:\n{left.stdout}"
