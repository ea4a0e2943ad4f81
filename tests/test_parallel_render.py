"""A large spec renders in two processes (clustergen.commands.parallel): the tree, the summary
and every failure must be exactly those of the one-process render.

Each test forces the two-process render on small specs (MIN_HOSTS 0) and compares it
with CLUSTERGEN_SERIAL=1. The failures are injected on one side at a time: the child
renders the uninstalled families (facility/, acceptance/), the parent the rest.
"""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from clustergen.base import cores
from clustergen.base.artifacts import NO_CHANGE, Artifact, Install
from clustergen.commands import parallel
from clustergen.dev import large_spec as large_spec_module
from clustergen.outputs import FAMILIES, UNINSTALLED
from clustergen.write import disk, transaction
from clustergen.write.manifest import MANIFEST

from support.paths import EXAMPLES
from support.trees import tree_state

ML = EXAMPLES / "ml-training-8node.yaml"
EDGE = EXAMPLES / "edge-roce-2node.yaml"
PARENT = os.getpid()


@pytest.fixture
def two_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLUSTERGEN_SERIAL", raising=False)
    monkeypatch.setattr(cores, "MIN_HOSTS", 0)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1})


@pytest.fixture
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 128-node compact spec: every family, racks, PDUs and Lustre targets."""
    path = tmp_path_factory.mktemp("large") / "large.yaml"
    path.write_text(large_spec_module.compact_spec(128), encoding="utf-8")
    return path


def render_both(
    cli, monkeypatch: pytest.MonkeyPatch, argv: Callable[[Path], list[str]], tmp_path: Path
):  # type: ignore[no-untyped-def]
    """Run argv(out) serially into tmp_path/serial and in two processes into
    tmp_path/two; each result with its tree."""
    results = {}
    for mode in ("serial", "two"):
        out = tmp_path / mode
        if mode == "serial":
            monkeypatch.setenv("CLUSTERGEN_SERIAL", "1")
        else:
            monkeypatch.delenv("CLUSTERGEN_SERIAL")
        result = cli(*argv(out))
        results[mode] = (
            result.code,
            result.out.replace(str(out), "OUT"),
            result.err.replace(str(out), "OUT"),
            tree_state(out) if out.exists() else None,
        )
    return results["serial"], results["two"]


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("spec", [ML, EDGE, "large"])
def test_two_processes_write_the_serial_tree(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spec, large: Path
) -> None:  # type: ignore[no-untyped-def]
    """A fresh tree, then a render of another spec over it (creations, changes and
    removals on both sides), then a render that changes nothing: the trees and what
    the command prints are the serial render's, byte for byte."""
    spec = large if spec == "large" else spec
    other = EDGE if spec != EDGE else ML
    # The other cluster replaces the first one's tree (--replace-cluster).
    steps = [[str(spec)], [str(other), "--replace-cluster"], [str(other)]]
    for step in steps:
        serial, two = render_both(
            cli, monkeypatch, lambda out, step=step: ["render", *step, "-o", str(out)], tmp_path
        )
        assert serial[0] == 0, serial[2]
        assert two == serial


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("rule", ["manifest", "refuse_foreign", "removals"])
def test_a_write_rule_changed_in_one_place_holds_for_both_forms(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rule: str
) -> None:  # type: ignore[no-untyped-def]
    """Both forms reach the writer through write.transaction.TreeWrite, so a write rule changed
    where it uses it (here: the manifest's text, the refusal of files clustergen did not write,
    the removals) changes the serial and the two-process render alike: neither holds a
    copy of it."""
    real = getattr(transaction, rule)
    called = {"serial": 0, "two": 0}

    def changed(*args, **options):  # type: ignore[no-untyped-def]
        called["serial" if os.environ.get("CLUSTERGEN_SERIAL") else "two"] += 1
        result = real(*args, **options)
        if rule == "manifest":
            return Artifact(result.path, result.text + "# changed rule\n", result.mode)
        return result

    monkeypatch.setattr(transaction, rule, changed)
    serial, two = render_both(
        cli, monkeypatch, lambda out: ["render", str(ML), "-o", str(out)], tmp_path
    )
    assert serial[0] == 0, serial[2]
    assert two == serial
    assert called["serial"] == called["two"] == 1
    if rule == "manifest":
        assert serial[3] is not None
        assert serial[3][MANIFEST][2].endswith(b"# changed rule\n")


def test_large_specs_only_use_two_processes(large: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clustergen.spec.load import load_spec
    from clustergen.validate import validate_cluster

    monkeypatch.delenv("CLUSTERGEN_SERIAL", raising=False)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1})
    small, _ = validate_cluster(load_spec(str(ML)), set())
    big, _ = validate_cluster(load_spec(str(large)), set())
    assert small is not None and big is not None
    monkeypatch.setattr(cores, "MIN_HOSTS", 100)
    assert not parallel._two_processes(small)
    assert parallel._two_processes(big)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0})
    assert not parallel._two_processes(big), "one core: one process"
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv("CLUSTERGEN_SERIAL", "1")
    assert not parallel._two_processes(big)


@pytest.mark.usefixtures("two_processes")
def test_validate_walks_the_fabric_beside_the_other_checks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On a large fabric the checks marked apart (its walks) run in a second process
    (the in_two the CLI hands validation) while this one runs the rest: every problem
    is the serial run's, in the same order, those of the checks apart included; a
    smaller fabric is walked here."""
    from clustergen import checks
    from clustergen.spec.load import load_spec
    from clustergen.validate import validate_cluster

    monkeypatch.setattr(checks, "APART_SWITCHES", 100)
    path = tmp_path / "rails.yaml"
    path.write_text(large_spec_module.compact_rail_spec(512), encoding="utf-8")
    forked = []
    real = parallel.in_two

    def spy(first, second, what):  # type: ignore[no-untyped-def]
        forked.append(what)
        return real(first, second, what)

    two = validate_cluster(load_spec(str(path)), (), spy)[1]
    monkeypatch.setenv("CLUSTERGEN_SERIAL", "1")
    serial = validate_cluster(load_spec(str(path)), (), spy)[1]
    assert forked == ["running the fabric's checks"]  # not when serial
    monkeypatch.delenv("CLUSTERGEN_SERIAL")
    monkeypatch.setattr(checks, "APART_SWITCHES", 100_000)
    assert validate_cluster(load_spec(str(path)), (), spy)[1] == serial
    assert len(forked) == 1
    assert two == serial
    found = {problem.code.name for problem in two}
    assert "network.rails-not-joined" in found  # a check apart
    assert "network.subnet-manager-planes" in found  # one beside it


def _fail_on(
    side: str, monkeypatch: pytest.MonkeyPatch, error: BaseException, *, after_staging: bool = False
) -> None:
    """Raise error in one side's staging (child: facility/, parent: slurm/), before or
    after the file is staged."""
    stage = disk.stage_file

    def failing_stage(target: Path, rendered, **options):  # type: ignore[no-untyped-def]
        in_child = os.getpid() != PARENT
        if in_child == (
            side == "child"
        ) and f"{os.sep}{'facility' if side == 'child' else 'slurm'}{os.sep}" in str(target):
            if after_staging:
                stage(target, rendered, **options)
            raise error
        return stage(target, rendered, **options)

    monkeypatch.setattr(disk, "stage_file", failing_stage)


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("side", ["child", "parent"])
def test_a_full_disk_on_either_side_leaves_the_tree_as_it_was(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, side: str
) -> None:  # type: ignore[no-untyped-def]
    """ENOSPC while one side stages: exit 2 with the serial message, and nothing either
    side staged is left, in an existing tree or in a new one (no directory made)."""
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    before = tree_state(out)
    _fail_on(
        side, monkeypatch, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), after_staging=True
    )
    for target in (out, tmp_path / "new" / "site"):
        result = cli("render", str(ML), "-o", str(target), "--replace-cluster")
        assert result.code == 2, result.err
        assert f"cannot write {target}: No space left on device" in result.err
    assert tree_state(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("where", ["facility/pdus.md", "slurm/slurm.conf", "both"])
def test_files_clustergen_did_not_write_are_refused_as_serially(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str
) -> None:  # type: ignore[no-untyped-def]
    """Files in the way on either side, or both: one message naming all of them, as
    the serial render words it, and the tree as it was."""
    paths = ["facility/pdus.md", "slurm/slurm.conf"] if where == "both" else [where]

    def argv(out: Path) -> list[str]:
        for path in paths:
            (out / path).parent.mkdir(parents=True, exist_ok=True)
            (out / path).write_text("mine\n")
        return ["render", str(ML), "-o", str(out)]

    serial, two = render_both(cli, monkeypatch, argv, tmp_path)
    assert serial[0] == 2
    assert all(path in serial[2] for path in paths), serial[2]
    assert two == serial
    adopted = render_both(
        cli, monkeypatch, lambda out: [*argv(out), "--adopt"], tmp_path / "adopted"
    )
    assert adopted[0][0] == 0, adopted[0][2]
    assert adopted[1] == adopted[0]


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("command", ["check", "plan"])
def test_a_link_in_the_childs_share_is_refused_as_serially(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str
) -> None:  # type: ignore[no-untyped-def]
    """render --check and plan compare each process's share of the tree where it was
    rendered: a link where the child's file lies is refused there, in the serial
    words, and nothing is followed or written."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("not the tree's\n", encoding="utf-8")

    def argv(out: Path) -> list[str]:
        assert cli("render", str(ML), "-o", str(out)).code == 0
        target = out / "facility" / "racks.csv"
        target.unlink()
        target.symlink_to(elsewhere)
        if command == "check":
            return ["render", str(ML), "-o", str(out), "--check"]
        return ["plan", str(ML), "-o", str(out)]

    serial, two = render_both(cli, monkeypatch, argv, tmp_path)
    assert serial[0] == 2, serial[2]
    assert "facility/racks.csv" in serial[2] and "link" in serial[2], serial[2]
    assert two == serial
    assert elsewhere.read_text(encoding="utf-8") == "not the tree's\n"


@pytest.mark.usefixtures("two_processes")
def test_a_bug_in_the_child_is_an_internal_error_and_writes_nothing(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    before = tree_state(out)

    def broken(cluster, env):  # type: ignore[no-untyped-def]
        raise TypeError("a facility bug")

    monkeypatch.setitem(FAMILIES, "facility", broken)
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 3, result.err
    assert (
        "internal error (RuntimeError: in the process rendering the uninstalled families: "
        "TypeError: a facility bug)" in result.err
    )
    assert tree_state(out) == before


@pytest.mark.usefixtures("two_processes")
def test_a_child_killed_after_staging_leaves_no_temporary(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The child dies (SIGKILL) with its files staged and nothing reported: the parent
    says so (exit 3), takes back its own files and sweeps the child's."""
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    before = tree_state(out)
    stage = transaction.TreeWrite.stage

    def stage_then_die(writer, files, **options):  # type: ignore[no-untyped-def]
        part = stage(writer, files, **options)
        if os.getpid() != PARENT:
            assert part.staged.temporaries
            os.kill(os.getpid(), signal.SIGKILL)
        return part

    monkeypatch.setattr(transaction.TreeWrite, "stage", stage_then_die)
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 3, result.err
    assert "it ended with signal 9 before it reported" in result.err
    assert tree_state(out) == before


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("side", ["child", "parent"])
def test_ctrl_c_on_either_side_writes_nothing(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, side: str
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    assert cli("render", str(EDGE), "-o", str(out)).code == 0
    before = tree_state(out)
    _fail_on(side, monkeypatch, KeyboardInterrupt(), after_staging=True)
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 2, result.err
    assert "clustergen: interrupted" in result.err
    assert tree_state(out) == before


def test_an_uninstalled_family_that_installs_a_file_is_a_bug(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The child's families must install nothing, or the Ansible family, rendered
    without them, would miss a file."""
    from clustergen.render import render_families
    from clustergen.spec.load import load_spec
    from clustergen.templating import environment
    from clustergen.validate import validate_cluster

    cluster, _ = validate_cluster(load_spec(str(EDGE)), set())
    assert cluster is not None
    installed = Artifact("facility/x", "x\n", install=Install("/etc/x", "all", NO_CHANGE))
    name = sorted(UNINSTALLED)[0]
    monkeypatch.setitem(FAMILIES, name, lambda cluster, env: [installed])
    with pytest.raises(AssertionError, match=f"the {name} family installs facility/x"):
        render_families(cluster, environment(), [name])


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("failing", ["fork", "pipe"])
def test_no_second_process_renders_in_one(
    cli,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    failing: str,
) -> None:
    """No process or pipe left (EAGAIN, EMFILE): the render is made in one process, the
    same tree, and nothing of the attempt is left beside it."""
    serial = tmp_path / "serial"
    monkeypatch.setenv("CLUSTERGEN_SERIAL", "1")
    assert cli("render", str(ML), "-o", str(serial)).code == 0
    monkeypatch.delenv("CLUSTERGEN_SERIAL")
    code = errno.EAGAIN if failing == "fork" else errno.EMFILE

    refused = []

    def refuse(*args: object) -> None:
        refused.append(failing)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(parallel.os, failing, refuse)
    out = tmp_path / "new" / "site"
    result = cli("render", str(ML), "-o", str(out), "--replace-cluster")
    assert result.code == 0, result.err
    assert refused == [failing]
    assert tree_state(out) == tree_state(serial)
    assert sorted(p.name for p in out.parent.iterdir()) == ["site"]


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("spec", [ML, "large"])
def test_the_commands_that_write_nothing_render_and_compare_as_serially(
    cli, spec: Path | str, large: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """render --check and --diff, and plan, render in two processes too, and compare
    what each process rendered with the tree while the other works: the files are
    render_all's, byte for byte, with the same install metadata, and each change is
    what compare makes of the whole render, in path order."""
    from clustergen.render import render_all
    from clustergen.spec.load import load_spec
    from clustergen.validate import validate_cluster
    from clustergen.write.changes import compare
    from clustergen.write.manifest import with_manifest

    path = large if spec == "large" else spec
    out = tmp_path / "site"
    assert cli("render", str(path), "-o", str(out)).code == 0
    # Each process's share changed on disk, and one file of each gone.
    (out / "slurm" / "slurm.conf").write_text("# edited\n", encoding="utf-8")
    (out / "facility" / "racks.csv").write_text("# edited\n", encoding="utf-8")
    (out / "site.yml").unlink()
    (out / "facility" / "racks.md").unlink()
    cluster, _ = validate_cluster(load_spec(str(path)))
    assert cluster is not None
    files, compared = parallel.compared_in_two(out, cluster)
    serial = with_manifest(render_all(cluster), cluster.spec.cluster.name)
    assert files == serial
    assert compared == compare(out, serial)
    assert [(c.path, c.action) for c in compared if c.action != "unchanged"] == [
        ("facility/racks.csv", "change"),
        ("facility/racks.md", "create"),
        ("site.yml", "create"),
        ("slurm/slurm.conf", "change"),
    ]


@pytest.mark.usefixtures("two_processes")
@pytest.mark.parametrize("argv", [["--check"], ["--diff"]], ids=["check", "diff"])
def test_check_diff_and_plan_say_what_the_serial_ones_say(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, large: Path, argv: list[str]
) -> None:  # type: ignore[no-untyped-def]
    text = large.read_text(encoding="utf-8")
    assert 'max_time: "01:00:00"' in text
    changed = tmp_path / "changed.yaml"  # the debug partition's limit: slurm.conf changes
    changed.write_text(text.replace('max_time: "01:00:00"', 'max_time: "02:00:00"'), "utf-8")
    said = {}
    for mode in ("serial", "two"):
        out = tmp_path / mode  # --diff writes: a tree of its own for each
        assert cli("render", str(large), "-o", str(out)).code == 0
        # A file of the child's share changed too (the processes compare a share each).
        (out / "facility" / "racks.csv").write_text("# edited\n", encoding="utf-8")
        if mode == "serial":
            monkeypatch.setenv("CLUSTERGEN_SERIAL", "1")
        else:
            monkeypatch.delenv("CLUSTERGEN_SERIAL")
        plan = cli("plan", str(changed), "-o", str(out))
        check = cli("render", str(changed), "-o", str(out), *argv)
        said[mode] = tuple(
            part.replace(str(out), "OUT") if isinstance(part, str) else part
            for part in (check.code, check.out, check.err, plan.code, plan.out, plan.err)
        )
    assert said["two"] == said["serial"]
    assert said["two"][0] == (1 if argv == ["--check"] else 0), said["two"][2]
    assert said["two"][3] == 4 and "slurm.conf" in said["two"][4]
    assert "facility/racks.csv (changed)" in said["two"][4]
    if argv == ["--check"]:
        assert "stale: change OUT/facility/racks.csv" in said["two"][2]
        assert "stale: change OUT/slurm/slurm.conf" in said["two"][2]
    else:
        assert "+++ b/facility/racks.csv" in said["two"][1]


@pytest.mark.usefixtures("two_processes")
def test_a_bug_in_the_child_of_a_check_is_an_internal_error(
    cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "site"
    assert cli("render", str(ML), "-o", str(out)).code == 0

    def broken(cluster, env):  # type: ignore[no-untyped-def]
        raise TypeError("a facility bug")

    monkeypatch.setitem(FAMILIES, "facility", broken)
    for argv in (["render", str(ML), "-o", str(out), "--check"], ["plan", str(ML), "-o", str(out)]):
        result = cli(*argv)
        assert result.code == 3, result.err
        assert "in the process rendering the uninstalled families: TypeError: a facility bug" in (
            result.err
        )
