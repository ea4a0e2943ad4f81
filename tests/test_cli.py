"""The command line: exit codes, messages, and what is (and is not) written."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clustergen.write import disk

from support.paths import EXAMPLES, REPO, SCHEMA
from support.trees import tree_state

ML = EXAMPLES / "ml-training-8node.yaml"
EDGE = EXAMPLES / "edge-roce-2node.yaml"


def files_under(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_validate_reference_specs(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("validate", str(ML), str(EDGE))
    assert result.code == 0, result.err
    # Valid, with only warnings (a rule a reference spec breaks is a warning there).
    for line, spec in zip(result.out.splitlines(), (ML, EDGE), strict=True):
        assert re.fullmatch(rf"{re.escape(str(spec))}: valid( \(\d+ warning\(s\)\))?", line)
    assert all(": warning: " in line for line in result.err.splitlines())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "absent.yaml", "no such file"),
        (lambda d: d, "is a directory"),
        (lambda d: _write(d / "latin1.yaml", b"cluster: caf\xe9\n"), "not UTF-8"),
    ],
    ids=["missing", "directory", "not-utf8"],
)
def test_unreadable_input_exits_2(cli, tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path)
    for command in (("validate", str(path)), ("render", str(path), "-o", str(tmp_path / "out"))):
        result = cli(*command)
        assert result.code == 2
        assert message in result.err
        assert "Traceback" not in result.err
    assert not (tmp_path / "out").exists()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_unusable_invocation_exits_2() -> None:
    for argv in ([], ["render"], ["frobnicate"], ["render", str(ML), "--bogus"]):
        proc = subprocess.run(
            [sys.executable, "-m", "clustergen", *argv], capture_output=True, text=True
        )
        assert proc.returncode == 2, argv
        assert "usage:" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_invalid_spec_renders_nothing(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text(ML.read_text().replace("hardware: hgx-h100\n", "hardware: hgx-h10\n"))
    result = cli("render", str(bad), "-o", str(tmp_path / "out"))
    assert result.code == 1
    assert (
        "nodes[0].hardware: unknown hardware profile 'hgx-h10' (did you mean 'hgx-h100'?)"
        in result.err
    )
    assert not (tmp_path / "out").exists()


def test_render_then_check_then_stale(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    assert cli("render", str(ML), "-o", str(out)).code == 0
    assert (out / "slurm" / "slurm.conf").is_file()
    assert os.stat(out / "slurm" / "health-epilog.sh").st_mode & 0o777 == 0o755
    check = cli("render", str(ML), "-o", str(out), "--check")
    assert check.code == 0, check.err

    (out / "slurm" / "gres.conf").write_text("edited by hand\n")
    before = files_under(out)
    stale = cli("render", str(ML), "-o", str(out), "--check", "--diff")
    assert stale.code == 1
    assert f"stale: change {out / 'slurm' / 'gres.conf'}" in stale.err
    assert "-edited by hand" in stale.out and "+NodeName=gpu[01-08] Name=gpu Type=h100" in stale.out
    assert files_under(out) == before, "--check must write nothing"


def test_rerender_removes_only_what_clustergen_wrote(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    assert cli("render", str(ML), "-o", str(out)).code == 0
    ml_files = set(files_under(out))
    (out / "slurm" / "site-notes.txt").write_text("mine\n")
    edge_out = tmp_path / "edge"
    assert cli("render", str(EDGE), "-o", str(edge_out)).code == 0
    only_ml = ml_files - set(files_under(edge_out))
    result = cli("render", str(EDGE), "-o", str(out), "--replace-cluster")
    assert result.code == 0
    assert f"{len(only_ml)} removed" in result.out
    assert not only_ml & set(files_under(out))
    assert not (out / "slurm" / "slurmdbd.conf").exists()  # edge has no accounting
    assert not (out / "slurm" / "health-epilog.sh").exists()
    # ... nor slurmdbd, NVSwitch or Lustre nodes, so neither their group_vars
    for group in ("slurm_dbd", "nvswitch", "lustre_client"):
        assert not (out / "inventory" / "group_vars" / f"{group}.yml").exists()
    assert (out / "slurm" / "site-notes.txt").read_text() == "mine\n"


def test_second_render_changes_nothing(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    cli("render", str(ML), "-o", str(out))
    first = files_under(out)
    result = cli("render", str(ML), "-o", str(out))
    assert " 0 created, 0 changed, 0 removed" in result.out
    assert files_under(out) == first


def test_blocked_target_fails_before_writing_anything(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    cli("render", str(EDGE), "-o", str(out))
    before = files_under(out)
    (out / "slurm" / "topology.conf").unlink()
    (out / "slurm" / "topology.conf").mkdir()  # something in the way of one output file
    del before["slurm/topology.conf"]
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 2
    assert "is not a regular file" in result.err
    assert files_under(out) == before, "no file may change when the render cannot complete"
    assert not list(out.rglob("*.clustergen-tmp"))


@pytest.mark.parametrize("blocker", ["slurm", "facility/racks"])
def test_a_file_where_a_folder_goes_fails_before_writing_anything(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, blocker: str
) -> None:
    """A file where the render puts a folder (an existing one, or one only the new spec
    needs) stops the render before anything is written, naming it."""
    out = tmp_path / "site"
    cli("render", str(EDGE), "-o", str(out))
    shutil.rmtree(out / blocker, ignore_errors=True)
    (out / blocker).parent.mkdir(parents=True, exist_ok=True)
    (out / blocker).write_text("in the way\n")
    before = files_under(out)
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 2, result.err
    assert f"cannot write into {out / blocker}: it is not a directory" in result.err
    assert files_under(out) == before
    assert not list(out.rglob("*.clustergen-tmp"))


def test_files_clustergen_did_not_write_are_never_replaced(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A hand-written site.yml (or this repository's own sources) stops the render, with
    nothing written; --check only reports the tree stale; --adopt takes the files over."""
    out = tmp_path / "site"
    (out / "inventory").mkdir(parents=True)
    (out / "site.yml").write_text("# mine\n")
    (out / "inventory" / "hosts.yml").write_text("# mine too\n")
    before = files_under(out)
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 2
    assert "did not write" in result.err
    assert "inventory/hosts.yml, site.yml" in result.err
    assert "--adopt" in result.err
    assert files_under(out) == before
    checked = cli("render", str(ML), "-o", str(out), "--check")
    assert checked.code == 1
    assert files_under(out) == before
    adopted = cli("render", str(ML), "-o", str(out), "--adopt")
    assert adopted.code == 0
    assert (out / "site.yml").read_text() != "# mine\n"
    assert "site.yml" in listed_paths(out)
    assert cli("render", str(ML), "-o", str(out)).code == 0, "adopted files are clustergen's now"


def listed_paths(out: Path) -> list[str]:
    """The paths the manifest lists (each line: the path, then tab-separated fields)."""
    text = (out / ".clustergen-manifest").read_text()
    return [line.split("\t")[0] for line in text.splitlines()]


def test_a_file_already_as_rendered_is_not_in_the_way(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A file clustergen did not write but would write byte for byte (a role source in
    this repository, which renders itself) is taken into the manifest, not refused."""
    out = tmp_path / "site"
    out.mkdir()
    (out / "site.yml").write_bytes((REPO / "site.yml").read_bytes())
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 0, result.err
    assert "site.yml" in listed_paths(out)


def test_output_path_is_a_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "file"
    target.write_text("x")
    result = cli("render", str(ML), "-o", str(target))
    assert result.code == 2 and "not a directory" in result.err


def test_schema_command_writes_committed_schema(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "schema.json"
    assert cli("schema", "-o", str(target)).code == 0
    assert target.read_text() == SCHEMA.read_text()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]\n",
        "just a string\n",
        "version: 1\n" * 2,
        "a: [\n",
        "\t- x\n",
        "- a\n- b\n",
        "{a: 1\n",
        "x: !!python/object:os.system ls\n",
        "&a [*a]\n",
        "a: &x {b: *x}\n",
    ],
    ids=range(11),
)
def test_malformed_documents_exit_1(cli, tmp_path: Path, text: str) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    result = cli("validate", str(spec))
    assert result.code == 1, result.err
    assert result.err.startswith(f"{spec}:"), result.err
    assert "internal error" not in result.err


def test_an_invalid_spec_leaves_a_rendered_tree_byte_identical(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    before = tree_state(out)
    bad = tmp_path / "bad.yaml"
    bad.write_text(ML.read_text().replace("hardware: hgx-h100\n", "hardware: hgx-h10\n"))
    for argv in (["render", str(bad), "-o", str(out)], ["validate", str(bad)]):
        result = cli(*argv)
        assert result.code == 1, result.err
        assert tree_state(out) == before, argv


def _disk_full_after(count: int, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Staging fails with ENOSPC once `count` files are staged; the staged paths."""
    stage = disk.stage_file
    staged: list[Path] = []

    def stage_until_the_disk_is_full(target: Path, rendered, **options):  # type: ignore[no-untyped-def]
        if len(staged) == count:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        staged.append(target)
        return stage(target, rendered, **options)

    monkeypatch.setattr(disk, "stage_file", stage_until_the_disk_is_full)
    return staged


def test_a_render_failing_while_it_writes_leaves_the_tree_byte_identical(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The disk fills up (ENOSPC) after the render has staged part of the new tree,
    some of it in directories the old tree lacks: exit 2, and nothing of it is left,
    neither temporaries nor the directories made for them."""
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    before = tree_state(out)
    staged = _disk_full_after(40, monkeypatch)
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 2, result.err
    assert "No space left on device" in result.err
    assert {p.relative_to(out).parts[0] for p in staged} - set(before), "no new directory tried"
    assert tree_state(out) == before


def test_a_render_failing_while_it_writes_a_new_tree_leaves_no_directory(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same into a directory that did not exist: neither it nor its parent is left."""
    _disk_full_after(10, monkeypatch)
    assert cli("render", str(ML), "-o", str(tmp_path / "new" / "site")).code == 2
    assert list(tmp_path.iterdir()) == []


def test_the_staged_files_reach_the_disk_with_syncfs_or_one_fsync_each(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One syncfs(2) makes the staged tree durable on Linux; where it is missing every
    staged file and its folder is fsynced instead, and the tree is the same: for a new
    tree (built in its staging folder) and over an existing one (temporaries)."""
    assert disk.syncfs(tmp_path) is (sys.platform.startswith("linux"))
    assert cli("render", str(ML), "-o", str(tmp_path / "syncfs")).code == 0
    synced: list[Path] = []
    fsync = disk.fsync_path
    monkeypatch.setattr(disk, "syncfs", lambda path: False)
    monkeypatch.setattr(
        disk, "fsync_path", lambda path, **options: (synced.append(path), fsync(path, **options))
    )
    new = tmp_path / "fsync"
    assert cli("render", str(ML), "-o", str(new)).code == 0
    assert tree_state(tmp_path / "syncfs") == tree_state(new)
    staging = disk.staging_folder(new)
    files = sorted(path for path, (kind, _, _) in tree_state(new).items() if kind == "file")
    staged_files = sorted(
        str(p.relative_to(staging)) for p in synced if p.is_relative_to(staging) and p != staging
    )
    assert set(files) <= set(staged_files)
    assert staging / "slurm" in synced, "the folders' entries too"
    assert tmp_path in synced, "and the entry of the new tree itself"
    synced.clear()
    assert cli("render", str(EDGE), "-o", str(new), "--replace-cluster").code == 0
    changed = sum(kind == "file" for kind, _, _ in tree_state(new).values())
    temporaries = [p for p in synced if p.name.endswith(disk.TEMPORARY)]
    assert temporaries and len(temporaries) <= changed
    assert all(p.parent.is_relative_to(new) for p in temporaries)
    assert new / "slurm" in synced


def test_a_link_planted_where_a_file_is_staged_is_never_followed(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """A symbolic link at a staging name (.<name>.clustergen-tmp) pointing elsewhere:
    the render refuses (exit 2) and the file the link points at is untouched."""
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (out / "slurm" / f".slurm.conf{disk.TEMPORARY}").symlink_to(victim)
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 2, result.err
    assert victim.read_text() == "precious\n"
    assert not [p for p in out.rglob(f"*{disk.TEMPORARY}") if not p.is_symlink()]


def test_a_sync_that_fails_leaves_the_tree_as_it_was(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An I/O error while syncing the staged files (the data did not reach the disk)
    fails the render before any file is replaced: exit 2, the old tree byte for byte."""
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    before = tree_state(out)

    def failing_sync(path: Path) -> bool:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(disk, "syncfs", failing_sync)
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 2, result.err
    assert "Input/output error" in result.err
    assert tree_state(out) == before


@pytest.mark.parametrize("command", ["schema", "expand"])
def test_a_failing_file_write_leaves_nothing(
    cli,  # type: ignore[no-untyped-def]
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`schema -o` and `expand -o` write their file whole or not at all: a full disk
    leaves neither a partial file nor the directories made for it, and an existing file
    as it was."""
    argv = [command, *([str(ML)] if command == "expand" else [])]
    existing = tmp_path / "old.txt"
    existing.write_text("as it was\n")
    stage = disk.stage_file

    def stage_onto_a_full_disk(target: Path, rendered):  # type: ignore[no-untyped-def]
        stage(target, rendered)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(disk, "stage_file", stage_onto_a_full_disk)
    for target in (tmp_path / "new" / "dir" / "file.txt", existing):
        result = cli(*argv, "-o", str(target))
        assert result.code == 2, result.err
        assert "No space left on device" in result.err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["old.txt"]
    assert existing.read_text() == "as it was\n"


def test_another_cluster_is_not_rendered_over_a_tree(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The manifest names the cluster: rendering another one into its tree would replace
    and remove its files, and is refused unless --replace-cluster says so."""
    tree = tmp_path / "tree"
    assert cli("render", str(ML), "-o", str(tree)).code == 0
    assert "# cluster: ml-training\n" in (tree / ".clustergen-manifest").read_text()
    before = tree_state(tree)
    for argv in ([], ["--diff"]):
        refused = cli("render", str(EDGE), "-o", str(tree), *argv)
        assert refused.code == 2, refused.err
        assert (
            f"{tree} holds the rendered tree of cluster 'ml-training', not 'edge-lab'"
            in refused.err
        )
        assert "--replace-cluster" in refused.err
        assert tree_state(tree) == before
    # --check writes nothing: another cluster's tree is only stale to it.
    assert cli("render", str(EDGE), "-o", str(tree), "--check").code == 1
    replaced = cli("render", str(EDGE), "-o", str(tree), "--replace-cluster")
    assert replaced.code == 0, replaced.err
    assert "# cluster: edge-lab\n" in (tree / ".clustergen-manifest").read_text()
    assert cli("render", str(EDGE), "-o", str(tree), "--check").code == 0


def render_here(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """clustergen run in cwd (a test never changes its own directory)."""
    return subprocess.run(
        [sys.executable, "-m", "clustergen", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO / "generator")},
    )


def test_render_without_o_needs_an_empty_directory_or_a_tree(tmp_path: Path) -> None:
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("mine\n")
    refused = render_here(elsewhere, "render", str(ML))
    assert refused.returncode == 2, refused.stderr
    assert "is not empty and holds no clustergen tree" in refused.stderr
    assert "-o DIR" in refused.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["notes.txt"]
    # Named with -o, the same directory is rendered into (its own file left alone).
    assert render_here(elsewhere, "render", str(ML), "-o", ".").returncode == 0
    assert (elsewhere / "notes.txt").read_text() == "mine\n"
    # Now a clustergen tree: rendering there again needs no -o; nor does an empty one.
    assert render_here(elsewhere, "render", str(ML)).returncode == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert render_here(empty, "render", str(ML)).returncode == 0
    assert (empty / "slurm" / "slurm.conf").is_file()


def test_diff_with_json_is_refused_without_a_report(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli("render", str(ML), "-o", str(tmp_path / "t"), "--diff", "--format", "json")
    assert result.code == 2
    assert result.out == ""
    assert "--diff writes to standard output" in result.err


def test_schema_without_o_writes_standard_output_and_creates_nothing(tmp_path: Path) -> None:
    result = render_here(tmp_path, "schema")
    assert result.returncode == 0, result.stderr
    assert result.stdout == SCHEMA.read_text(encoding="utf-8")
    assert list(tmp_path.iterdir()) == []
