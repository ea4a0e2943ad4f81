"""clustergen holds a bounded number of descriptors, whatever the cluster's size (#42).

A rendered tree has a folder per node, and the writer used to keep every folder it
opened until the end: under the usual soft limit of 1,024 open files a render of 1,024
nodes failed with "Too many open files". Here every command that reads or writes a tree
runs as its own process under a limit well below the tree's folder count.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from clustergen.commands.audit.expect import applied_tree, expectations
from clustergen.dev.large_spec import compact_spec
from clustergen.render import render_all
from clustergen.spec.load import parse_spec
from clustergen.validate import validate_cluster
from clustergen.write.tree import KEPT_FOLDERS, Tree

from support.audit_facts import healthy_facts, ibnetdiscover
from support.trees import tree_state

pytestmark = pytest.mark.slow  # renders a cluster of hundreds of nodes four times

NODES = 256  # some 430 folders
LIMIT = 128  # open files: a third of the folders, twice what a tree keeps


def _limited(*args: str | Path) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, hard))

    return subprocess.run(
        [sys.executable, "-m", "clustergen", *map(str, args)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
    )


def test_render_check_plan_and_audit_under_a_low_open_files_limit(tmp_path: Path) -> None:
    text = compact_spec(NODES)
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / "out"

    first = _limited("render", spec, "-o", out)
    assert first.returncode == 0, first.stderr
    folders = sum(1 for _ in out.rglob("*") if _.is_dir())
    assert folders > 3 * LIMIT, f"the tree has {folders} folders: too few to prove the bound"
    unlimited = tmp_path / "unlimited"
    assert (
        subprocess.run(
            [sys.executable, "-m", "clustergen", "render", str(spec), "-o", str(unlimited)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    assert tree_state(out) == tree_state(unlimited)

    check = _limited("render", spec, "-o", out, "--check")
    assert check.returncode == 0, check.stderr

    # A driver bump: plan reads the whole tree, and the render over it stages, journals
    # and replaces files in folders all over it.
    bumped = tmp_path / "bumped.yaml"
    bumped.write_text(text.replace("550.90.07", "550.127.05"), encoding="utf-8")
    assert bumped.read_text(encoding="utf-8") != text
    plan = _limited("plan", bumped, "-o", out)
    assert plan.returncode == 4, plan.stdout + plan.stderr  # changes, none destructive
    again = _limited("render", bumped, "-o", out)
    assert again.returncode == 0, again.stderr
    assert _limited("render", bumped, "-o", out, "--check").returncode == 0

    cluster, problems = validate_cluster(parse_spec(text, str(spec), str(spec)))
    assert cluster is not None, problems[:3]
    files = render_all(cluster)
    expected = expectations(
        cluster, applied_tree(files["versions.lock"].text, files["facility/cables.csv"].text)
    )
    facts = tmp_path / "facts"
    facts.mkdir()
    scan = ibnetdiscover(expected)
    for index, (name, node) in enumerate(expected.items()):
        body = healthy_facts(name, node, scan if index == 0 else None)
        (facts / f"{name}.txt").write_text(body, encoding="utf-8")
    audit = _limited("audit", spec, facts, "-o", unlimited)
    assert audit.returncode == 0, audit.stderr[-2000:]


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_tree_keeps_the_folders_used_last_and_reopens_the_others(tmp_path: Path) -> None:
    """Past KEPT_FOLDERS the folders used longest ago are closed as the next call
    starts; a closed one is opened again when a path needs it; a call whose paths run
    deeper than KEPT_FOLDERS still has every descriptor it needs."""
    names = [f"node{i:03d}/etc" for i in range(3 * KEPT_FOLDERS)]
    before = _descriptors()
    with Tree(tmp_path, own=True) as tree:
        made: list[str] = []
        for name in names:
            tree.folder(name, made=made)
        assert tree.open_folders() <= KEPT_FOLDERS + 3  # and the last call's path
        tree.unlink("nothing-here")  # a call starts: the surplus is closed
        assert tree.open_folders() <= KEPT_FOLDERS + 1  # the tree's own folder besides
        assert _descriptors() - before == tree.open_folders()
        (tmp_path / names[0] / "a").write_text("first", encoding="utf-8")
        assert tree.read_text(f"{names[0]}/a") == "first"  # closed, opened again

        deep = "/".join(f"d{i}" for i in range(2 * KEPT_FOLDERS))
        tree.folder(deep, made=made)
        (tmp_path / deep / "from").write_text("moved", encoding="utf-8")
        tree.replace(f"{deep}/from", f"{deep}/to")
        assert tree.read_text(f"{deep}/to") == "moved"
    assert _descriptors() == before
