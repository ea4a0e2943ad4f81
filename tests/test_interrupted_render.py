"""A render killed anywhere leaves a tree the next write makes whole.

Each render here is a separate process whose renames are slowed, so that kills
land inside the swap as well as before it. After each kill, `render --check`
reports the interrupted render and changes nothing (it writes nothing, and a journal
may have been planted); the recovery every write makes first completes or undoes
the render, and the tree is then byte for byte the old render or the new one, with
no temporary file and no journal left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster
from clustergen.write.disk import TEMPORARY
from clustergen.write.journal import JOURNAL, recover
from clustergen.write.manifest import with_manifest
from clustergen.write.tree import digest

from support.paths import EXAMPLES

# Kills renders at measured moments: timing that a loaded machine bends; the main run has
# them, with the machine to itself (slow).
pytestmark = pytest.mark.slow

OLD = EXAMPLES / "ml-training-8node.yaml"
NEW = EXAMPLES / "edge-roce-2node.yaml"
RENAME_DELAY_S = 0.02

# Runs clustergen with every os.replace slowed, printing a line before each (the first
# is the journal's commit) so the test knows the swap is about to start, and where in it
# the render is: once the test reads line n, n - 1 renames are done.
SLOW_RENDER = f"""
import os, sys, time
real_replace = os.replace
def slow_replace(source, target, **options):
    print("swap", flush=True)
    time.sleep({RENAME_DELAY_S})
    real_replace(source, target, **options)
os.replace = slow_replace
from clustergen.cli.entry import configured_main
sys.exit(configured_main(sys.argv[1:]))
"""


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def clustergen(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "clustergen", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The old and the new render, each written whole by an uninterrupted run."""
    trees = []
    for spec in (OLD, NEW):
        out = tmp_path_factory.mktemp("whole")
        assert clustergen("render", str(spec), "-o", str(out)).returncode == 0
        trees.append(tree(out))
    old, new = trees
    assert old.keys() != new.keys(), "the two renders must create, change and remove files"
    return old, new


def interrupted_render(out: Path, after_swap_start_s: float | None, delay_s: float) -> bool:
    """Render NEW over OLD's tree in out and SIGKILL it; returns whether it was killed
    before finishing. after_swap_start_s None kills delay_s after the start instead."""
    process = slowed_render(SLOW_RENDER, out)
    assert process.stdout is not None
    if after_swap_start_s is None:
        time.sleep(delay_s)
    else:
        assert process.stdout.readline() == "swap\n"
        time.sleep(after_swap_start_s)
    return kill(process)


def slowed_render(script: str, out: Path) -> subprocess.Popen[str]:
    """Render NEW into out with script (a slowed clustergen), its first line readable."""
    return subprocess.Popen(
        [sys.executable, "-c", script, "render", str(NEW), "-o", str(out), "--replace-cluster"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def kill(process: subprocess.Popen[str]) -> bool:
    """SIGKILL the process unless it has ended; whether it was killed."""
    killed = process.poll() is None
    if killed:
        os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()
    return killed


def swap_seconds(old: dict[str, bytes], new: dict[str, bytes]) -> float:
    """How long the slowed swap takes: one rename per new or changed file, plus the
    journal's commit (removals are not renames)."""
    renames = sum(old.get(path) != text for path, text in new.items()) + 1
    return renames * RENAME_DELAY_S


# Kills while the process starts and stages its files (seconds after it starts),
# then at fractions of the swap (from its first rename, the journal's commit).
KILL_POINTS = [("start", 0.15), ("start", 0.35)] + [("swap", n / 10) for n in range(11)]


@pytest.mark.parametrize(("phase", "when"), KILL_POINTS)
def test_next_command_leaves_the_old_or_the_new_render_whole(
    renders: tuple[dict[str, bytes], dict[str, bytes]], tmp_path: Path, phase: str, when: float
) -> None:
    old, new = renders
    after_swap_start_s = when * swap_seconds(old, new) if phase == "swap" else None
    delay_s = when if phase == "start" else 0.0
    out = tmp_path / "tree"
    assert clustergen("render", str(OLD), "-o", str(out)).returncode == 0
    killed = interrupted_render(out, after_swap_start_s, delay_s)
    left = tree(out)

    check = clustergen("render", str(NEW), "-o", str(out), "--check")
    assert tree(out) == left, "--check applied or removed something"
    if JOURNAL in left:
        assert check.returncode == 1, check.stderr
        assert "a render was interrupted there" in check.stderr

    # What a write does first (the render of NEW's digests: what the journal may finish).
    cluster, _ = validate_cluster(load_spec(str(NEW)))
    assert cluster is not None
    files = with_manifest(render_all(cluster), cluster.spec.cluster.name)
    digests = {path: digest(a.text.encode("utf-8")) for path, a in files.items()}
    repaired = recover(out, lambda: digests) or ""
    after = tree(out)
    leftovers = [p for p in after if p.endswith(TEMPORARY) or p == JOURNAL]
    assert leftovers == []
    assert after in (old, new), (
        f"a mix: {len(after.keys() & old.keys())} paths of the old render, "
        f"{len(after.keys() & new.keys())} of the new; recovery said {repaired}"
    )
    check = clustergen("render", str(NEW), "-o", str(out), "--check")
    assert check.returncode == (0 if after == new else 1), check.stderr
    if killed and JOURNAL in left:
        assert "completed a render that was interrupted" in repaired


def test_an_interrupted_swap_mixes_the_trees_until_the_next_command(
    renders: tuple[dict[str, bytes], dict[str, bytes]], tmp_path: Path
) -> None:
    """The case the journal exists for: killed mid-swap, the tree on disk is a mix
    (which is why recovery must run first); --check says so and changes nothing, and
    the next write completes it."""
    old, new = renders
    out = tmp_path / "tree"
    assert clustergen("render", str(OLD), "-o", str(out)).returncode == 0
    # Killed by rename count, not by time, so that a loaded machine still kills it with
    # the journal committed and about half of the files renamed.
    process = slowed_render(SLOW_RENDER, out)
    assert process.stdout is not None
    halfway = round(swap_seconds(old, new) / RENAME_DELAY_S) // 2 + 1
    assert [process.stdout.readline() for _ in range(halfway)] == ["swap\n"] * halfway
    assert kill(process)
    mixed = tree(out)
    assert JOURNAL in mixed
    assert {p: b for p, b in mixed.items() if p != JOURNAL and not p.endswith(TEMPORARY)} not in (
        old,
        new,
    )
    check = clustergen("render", str(NEW), "-o", str(out), "--check")
    assert check.returncode == 1, check.stderr
    assert "a render was interrupted there" in check.stderr
    assert tree(out) == mixed
    written = clustergen("render", str(NEW), "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert "completed a render that was interrupted" in written.stderr
    assert tree(out) == new


@pytest.mark.parametrize("line", ["replace ../outside", "replace /etc/hosts", "chmod slurm"])
def test_a_journal_that_leaves_the_tree_is_refused(tmp_path: Path, line: str) -> None:
    out = tmp_path / "tree"
    assert clustergen("render", str(OLD), "-o", str(out)).returncode == 0
    before = tree(out)
    (out / JOURNAL).write_text(f"{line}\n", encoding="utf-8")
    result = clustergen("render", str(OLD), "-o", str(out))
    assert result.returncode == 2
    assert "unreadable clustergen journal line" in result.stderr
    assert "Traceback" not in result.stderr
    assert {p: b for p, b in tree(out).items() if p != JOURNAL} == before


# Runs clustergen with every staged file slowed, printing a line at the first one.
SLOW_STAGING = f"""
import sys, time
from clustergen.write import disk
real_stage = disk.stage_file
started = []
def slow_stage(path, rendered, **options):
    if not started:
        started.append(True)
        print("staging", flush=True)
    time.sleep({RENAME_DELAY_S})
    return real_stage(path, rendered, **options)
disk.stage_file = slow_stage
from clustergen.cli.entry import configured_main
sys.exit(configured_main(sys.argv[1:]))
"""


def test_a_new_tree_killed_while_staged_is_no_tree_and_the_next_command_sweeps_it(
    renders: tuple[dict[str, bytes], dict[str, bytes]], tmp_path: Path
) -> None:
    """A render into a directory that does not exist builds the tree in a staging
    folder beside it and renames it into place whole. Killed part way, there is no
    tree at all (not a partial one); the next command removes the staging folder, says
    so, and renders the whole tree."""
    _, new = renders
    out = tmp_path / "tree"
    process = slowed_render(SLOW_STAGING, out)
    assert process.stdout is not None
    assert process.stdout.readline() == "staging\n"
    time.sleep(len(new) * RENAME_DELAY_S / 2)
    assert kill(process), "the render finished before it was killed"
    staging = tmp_path / f".tree{TEMPORARY}"
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [staging.name]
    assert any(staging.rglob("*.conf")), "killed while staging"
    result = clustergen("render", str(NEW), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert f"removed {staging}, where a render that was interrupted was building" in result.stderr
    assert tree(out) == new
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]
