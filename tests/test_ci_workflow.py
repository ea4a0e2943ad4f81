"""The GitHub Actions workflow of docs/ci.md, run step by step on a fixture site repository.

The workflow is read from docs/ci.md itself, so the documented workflow is the
tested one. Its `run:` steps execute in order, each as its own bash script, with
the runner's rules for `if:` (a failed step skips the steps after it unless their
condition says otherwise) and for `$GITHUB_OUTPUT`. The `uses:` steps and the
install and comment steps belong to the runner: clustergen is already installed
here, and nothing is posted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from support.paths import EXAMPLES, REPO
from support.pull_request import PULL_REQUEST, edited

SPEC = EXAMPLES / "ml-training-8node.yaml"
RUNNER_STEPS = {"install", "comment"}
BIN = Path(sys.executable).parent


def workflow() -> dict:  # type: ignore[type-arg]
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    block = re.search(r"`\.github/workflows/cluster\.yml`:\n\n```yaml\n(.*?)```", text, re.S)
    assert block, "docs/ci.md shows the workflow in a yaml block after its file name"
    document: dict = yaml.safe_load(block[1])  # type: ignore[type-arg]
    return document


@dataclass
class Run:
    outcomes: dict[str, str] = field(default_factory=dict)  # step id -> success | failure | skipped
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)


def _condition(expression: str | None, run: Run) -> bool:
    """The `if:` forms the workflow uses: success() by default; `!cancelled()`;
    `steps.X.outcome == 'Y'` joined by &&."""
    if expression is None:
        return all(outcome != "failure" for outcome in run.outcomes.values())
    inner = expression.strip().removeprefix("${{").removesuffix("}}").strip()
    for term in (t.strip() for t in inner.split("&&")):
        if term == "!cancelled()":
            continue
        match = re.fullmatch(r"steps\.(\w+)\.outcome == '(\w+)'", term)
        assert match, f"the test does not know the condition {term!r}"
        if run.outcomes.get(match[1]) != match[2]:
            return False
    return True


def _expand(script: str, run: Run, base_ref: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match[1].strip()
        if name == "github.base_ref":
            return base_ref
        step = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+)", name)
        assert step, f"the test does not know the expression {name!r}"
        return run.outputs.get(step[1], {}).get(step[2], "")

    return re.sub(r"\$\{\{(.*?)\}\}", value, script)


def run_workflow(repository: Path, base_ref: str = "main") -> Run:
    run = Run()
    (job,) = workflow()["jobs"].values()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    for step in job["steps"]:
        if "uses" in step or step.get("id") in RUNNER_STEPS:
            continue
        step_id = step["id"]
        if not _condition(step.get("if"), run):
            run.outcomes[step_id] = "skipped"
            continue
        output = repository / f".github-output-{step_id}"
        summary = repository.parent / "summary.md"
        result = subprocess.run(
            [
                "bash",
                "--noprofile",
                "--norc",
                "-eo",
                "pipefail",
                "-c",
                _expand(step["run"], run, base_ref),
            ],
            cwd=repository,
            env={**env, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        run.outcomes[step_id] = "success" if result.returncode == 0 else "failure"
        run.logs[step_id] = result.stdout + result.stderr
        if output.exists():
            pairs = (line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            run.outputs[step_id] = dict(pairs)
            output.unlink()
    return run


def git(repository: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "user.name=admin", "-c", "user.email=admin@example.org", *args],
        cwd=repository,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def render(repository: Path) -> None:
    subprocess.run(
        [BIN / "clustergen", "render", "spec.yaml", "-o", "cluster"],
        cwd=repository,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site repository whose main branch (on its origin) holds the 8-node spec and
    its rendered tree, checked out on a new branch `pr`."""
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    shutil.copy(SPEC, seed / "spec.yaml")
    render(seed)
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "the cluster as it runs")
    git(tmp_path, "clone", "-q", "--bare", str(seed), "origin.git")
    git(tmp_path, "clone", "-q", "origin.git", "site")
    repository = tmp_path / "site"
    git(repository, "checkout", "-q", "-b", "pr")
    return repository


def change_spec(repository: Path, *replacements: tuple[str, str]) -> None:
    spec = repository / "spec.yaml"
    spec.write_text(edited(spec.read_text(encoding="utf-8"), *replacements), encoding="utf-8")


def test_a_typo_is_annotated_on_its_line(site: Path) -> None:
    change_spec(site, ("default: true, max_time", "defualt: true, max_time"))
    line = next(
        n
        for n, text in enumerate((site / "spec.yaml").read_text().splitlines(), 1)
        if "defualt" in text
    )
    run = run_workflow(site)
    assert run.outcomes["validate"] == "failure"
    annotation = rf"^::error file=spec\.yaml,line={line},col=\d+,title=[\w.-]+::.*defualt"
    assert re.search(annotation, run.logs["validate"], re.M), run.logs["validate"]
    assert "did you mean 'default'" in run.logs["validate"]
    # An invalid spec is neither checked against its tree nor planned.
    assert run.outcomes["check"] == "skipped"
    assert run.outcomes["plan"] == "skipped"


def test_a_stale_tree_fails_the_check(site: Path) -> None:
    change_spec(site, *PULL_REQUEST[:2])  # the spec changes; the tree is not re-rendered
    run = run_workflow(site)
    assert run.outcomes["validate"] == "success"
    assert run.outcomes["check"] == "failure"
    # The driver's group_vars and versions.lock, and all.yml's release digest with them,
    # and the manifest, which records the digest of each.
    assert "cluster: 5 file(s) differ from what spec.yaml renders" in run.logs["check"]
    assert '+nvidia_driver_version: "550.127.05"' in run.logs["check"]
    # The plan still tells the reviewer what the change means.
    assert run.outcomes["plan"] == "success"
    assert "Rolling upgrade with reboots" in run.logs["plan"]


def test_the_pull_request_plan(site: Path) -> None:
    """A pull request that bumps the driver, adds two nodes and changes one OST's device."""
    change_spec(site, *PULL_REQUEST)
    render(site)
    git(site, "add", "-A")
    git(site, "commit", "-q", "-m", "driver 550.127.05, gpu09 and gpu10, OST 3 on a new device")
    run = run_workflow(site)
    assert run.outcomes == {
        "validate": "success",
        "check": "success",
        "plan": "success",
        "destructive": run.outcomes["destructive"],
    }
    plan = run.logs["plan"]
    assert "### Rolling upgrade with reboots: 8 node(s) in 8 batch(es) of 1" in plan
    assert "- NVIDIA driver: libnvidia-cfg1-550 550.90.07-0ubuntu1 -> 550.127.05-0ubuntu1" in plan
    assert "- NVIDIA fabric manager: nvidia-fabricmanager-550 550.90.07-1 -> 550.127.05-1" in plan
    assert "- **restart `slurmctld`** on slurm-head" in plan
    assert "- **restart `slurmd`** on gpu[01-08]" in plan
    assert "- added: gpu[09-10]; bring them up first" in plan
    assert run.outputs["plan"]["status"] in ("4", "5")
    assert run.outcomes["destructive"] == (
        "failure" if run.outputs["plan"]["status"] == "5" else "success"
    )
