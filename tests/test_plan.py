"""`clustergen plan`: what applying a spec's render to the running cluster means.

Each case renders a reference spec into a tree (the cluster as it runs), changes
the spec as a pull request would, and plans the change against that tree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast, get_args

import pytest
import yaml

from clustergen.base.artifacts import SEVERITY, Artifact, Install, NodeChange, PlanAction
from clustergen.base.errors import ExitCode
from clustergen.catalog.distributions import DISTRIBUTIONS
from clustergen.catalog.packages import CONCERNS
from clustergen.commands.plan import make_plan
from clustergen.commands.plan_text import markdown
from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster
from clustergen.write.manifest import with_manifest

from support.paths import DATA, EXAMPLES, REPO
from support.pull_request import (
    ADD_TWO_NODES,
    BUMP_DRIVER,
    BUMP_NCCL,
    NEW_OSS_SERVERS,
    NEW_OST,
    NEW_OST_DEVICE,
    edited,
)
from support.regen import check_current

ML = EXAMPLES / "ml-training-8node.yaml"
ROLES = REPO / "roles"


def applied(cli, spec_text: str, tmp_path: Path, name: str = ML.name) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """The tree the cluster runs on, rendered from spec_text; returns (spec, tree)."""
    spec = tmp_path / "pr" / name  # same name as the spec that rendered the tree
    spec.parent.mkdir()
    spec.write_text(spec_text, encoding="utf-8")
    tree = tmp_path / "tree"
    assert cli("render", str(spec), "-o", str(tree)).code == 0
    return spec, tree


def edit(spec: Path, *replacements: tuple[str, str]) -> None:
    spec.write_text(edited(spec.read_text(encoding="utf-8"), *replacements), encoding="utf-8")


def test_nothing_to_do_exits_0(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.OK, result.err
    assert "Nothing to do on the nodes." in result.out


@pytest.mark.parametrize("example", ["edge-roce-2node.yaml", "vera-rubin-nvl72-spectrumx.yaml"])
def test_an_unchanged_spec_without_accounting_has_nothing_to_say(
    cli, tmp_path: Path, example: str
) -> None:  # type: ignore[no-untyped-def]
    """A concern whose group has no node (slurmdbd without accounting) is in no lock: the
    plan of the unchanged spec names nothing, not "slurm-smd-slurmdbd (newly pinned)"."""
    spec, tree = applied(cli, (EXAMPLES / example).read_text(encoding="utf-8"), tmp_path, example)
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.OK, result.err
    assert result.out.rstrip().endswith("Nothing to do on the nodes."), result.out


def test_a_new_doca_release_reboots_the_rdma_nodes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """DOCA-OFED's DKMS modules replace the running ones: its new release is a reboot of
    the nodes with fabric HCAs, not a package that needs nothing, and not the driver's
    roll-out, which site.yml runs for the driver alone."""
    example = "vera-rubin-nvl72-spectrumx.yaml"
    spec, tree = applied(cli, (EXAMPLES / example).read_text(encoding="utf-8"), tmp_path, example)
    edit(
        spec,
        ("version: 3.2.1, repository: doca", "version: 3.2.3, repository: doca"),
        ("/doca/3.2.1/ubuntu24.04/", "/doca/3.2.3/ubuntu24.04/"),
    )
    result = cli("plan", str(spec), "-o", str(tree))
    assert "### Reboot\n\n- **reboot** on vr[001-036]\n" in result.out, result.out
    assert "Rolling upgrade" not in result.out  # site.yml rolls out the driver alone
    assert "doca-ofed 3.2.1-* -> 3.2.3-*" in result.out


def test_render_and_plan_say_where_slurm_comes_from_is_unknown(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The reference spec pins SchedMD's Slurm by default and names no repository that
    serves it: a warning that render and plan both print; naming one silences it."""
    warning = "[software.slurm-schedmd-without-repository]"
    spec = tmp_path / "pr" / ML.name
    spec.parent.mkdir()
    spec.write_text(ML.read_text(encoding="utf-8"), encoding="utf-8")
    tree = tmp_path / "tree"
    rendered = cli("render", str(spec), "-o", str(tree))
    assert rendered.code == ExitCode.OK and warning in rendered.err
    planned = cli("plan", str(spec), "-o", str(tree))
    assert planned.code == ExitCode.OK and warning in planned.err
    edit(spec, ("  slurm: 23.11.10\n", "  slurm: 23.11.10\n  slurm_repository: cuda\n"))
    assert warning not in cli("plan", str(spec), "-o", str(tree)).err


def test_every_plan_repeats_the_trusted_repositories(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A repository marked trusted: true is a warning on every plan, and the plan itself
    (the pull-request comment, which carries no warnings) names it even when nothing else
    changes and the warning is ignored; a signed repository is not named."""
    local = (
        "  repositories:\n",
        "  repositories:\n    - name: local\n      url: http://mirror.hpc.example.org/local/\n"
        "      trusted: true\n",
    )
    spec, tree = applied(cli, edited(ML.read_text(encoding="utf-8"), local), tmp_path)
    warning = "[software.repository-trusted]"
    heading = "### Trusted repositories: packages installed as root without a full check"
    line = "- `local` (http://mirror.hpc.example.org/local/): no signature check, plain http://"
    for _ in range(2):  # every time, not once
        planned = cli("plan", str(spec), "-o", str(tree))
        assert planned.code == ExitCode.OK, planned.err
        assert warning in planned.err
        assert "Nothing to do on the nodes." in planned.out
        assert heading in planned.out and line in planned.out
        assert "`cuda`" not in planned.out
    ignored = cli("plan", str(spec), "-o", str(tree), "--ignore", "software.repository-trusted")
    assert warning not in ignored.err and line in ignored.out
    document = json.loads(cli("plan", str(spec), "-o", str(tree), "--format", "json").out)
    assert document["trusted_repositories"] == [line.removeprefix("- ")]


def test_a_renamed_spec_renders_the_same_tree_and_plans_nothing(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """No rendered file names the spec's file: the same spec under another name renders
    the same bytes, so the plan has nothing to do (it once reformatted every target)."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    renamed = tmp_path / "prod-cluster.yaml"
    renamed.write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    again = tmp_path / "again"
    assert cli("render", str(renamed), "-o", str(again)).code == 0
    files = sorted(p.relative_to(tree) for p in tree.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert [f for f in files if (tree / f).read_bytes() != (again / f).read_bytes()] == []
    result = cli("plan", str(renamed), "-o", str(tree))
    assert result.code == ExitCode.OK, result.out
    assert "DESTRUCTIVE" not in result.out


def test_a_clone_made_under_umask_002_plans_nothing(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """git records only a file's executable bit: a clone under umask 002 has every file
    group-writable (0664, 0775), and that is no change for plan or render --check (the
    nodes take each file's mode from its install metadata). The executable bit is."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    files = [p for p in tree.rglob("*") if p.is_file()]
    for path in files:
        path.chmod(path.stat().st_mode | 0o020)
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.OK, result.out
    assert "DESTRUCTIVE" not in result.out
    assert cli("render", str(spec), "-o", str(tree), "--check").code == 0
    script = next(p for p in files if p.stat().st_mode & 0o100)
    script.chmod(0o664)
    stale = cli("render", str(spec), "-o", str(tree), "--check")
    assert stale.code != 0 and str(script.relative_to(tree)) in stale.out + stale.err


def test_driver_bump_and_two_new_nodes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    edit(spec, *BUMP_DRIVER, *ADD_TWO_NODES)
    result = cli("plan", str(spec), "-o", str(tree), "--driver-batch-size", "3")
    assert result.code == ExitCode.PLAN_CHANGES, result.err
    out = result.out
    assert "### Rolling upgrade with reboots: 8 node(s) in 3 batch(es) of 3" in out
    assert "- NVIDIA driver: libnvidia-cfg1-550 550.90.07-0ubuntu1 -> 550.127.05-0ubuntu1" in out
    # The roll-out's batches install the fabric manager too, before their reboot: it is
    # listed with them, never as a restart beside them.
    assert (
        "\n- NVIDIA fabric manager: nvidia-fabricmanager-550 550.90.07-1 -> 550.127.05-1\n" in out
    )
    assert "nvidia-fabricmanager`**" not in out
    assert re.search(r"^1\. gpu\[01-03\]\n2\. gpu\[04-06\]\n3\. gpu\[07-08\]$", out, re.M)
    # The new nodes are brought up, not rolled. The NodeName lines change, so the role
    # restarts slurmctld on the controller and slurmd on the compute nodes, and skips
    # the reconfigure (the restarted slurmctld reads slurm.conf).
    assert "- **restart `slurmctld`** on slurm-head\n" in out
    assert "- **restart `slurmd`** on gpu[01-08]\n" in out
    assert "reconfigure `slurmctld`" not in out
    # The new nodes' interface files (host_network) touch no node that runs.
    assert "- **reconfigure `host-network`** on no running node\n" in out
    assert out.count("reconfigure") == 1, out
    assert "- added: gpu[09-10]; bring them up first" in out
    # No concern's title twice in a row ("NVIDIA fabric manager: NVIDIA fabric manager").
    for concern in CONCERNS:
        assert f"{concern.title}: {concern.title}" not in out
    # Most severe first.
    order = [out.index(h) for h in ("Rolling upgrade", "### Restart", "### Nodes")]
    assert order == sorted(order)

    document = json.loads(cli("plan", str(spec), "-o", str(tree), "--format", "json").out)
    assert document["exit_code"] == ExitCode.PLAN_CHANGES
    assert document["destructive"] is False
    assert document["driver_rollout"]["batches"] == [[f"gpu0{n}"] for n in range(1, 9)]
    assert "NVIDIA fabric manager" in {p["concern"] for p in document["driver_rollout"]["packages"]}
    assert document["nodes"] == {"added": ["gpu09", "gpu10"], "removed": []}
    restarts = {s["service"]: s["nodes"] for s in document["steps"] if s["action"] == "restart"}
    assert restarts == {"slurmctld": ["slurm-head"], "slurmd": [f"gpu0{n}" for n in range(1, 9)]}


@pytest.mark.parametrize(
    ("slurm", "os"), [("23.11.10", "ubuntu-22.04"), ("22.05.8", "debian-12")], ids=str
)
def test_new_nodes_restart_what_the_slurm_role_restarts(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, slurm: str, os: str
) -> None:
    """Plan and role read one source: the NodeName lines each daemon last started with
    are rendered files whose install metadata names the restart, on the nodes that run
    the daemon. The role installs them with the handlers that metadata names and has no
    hand-written notify of its own; the plan names the same restarts on the same nodes."""
    text = ML.read_text().replace("slurm: 23.11.10", f"slurm: {slurm}")
    # NVIDIA's repository moves with the OS (checks/platform.py).
    codename = DISTRIBUTIONS[os].nvidia_codename
    text = text.replace("os: ubuntu-22.04", f"os: {os}").replace("/ubuntu2204/", f"/{codename}/")
    spec, tree = applied(cli, text, tmp_path)
    edit(spec, *ADD_TWO_NODES)
    document = json.loads(cli("plan", str(spec), "-o", str(tree), "--format", "json").out)
    steps = {(s["action"], s["service"]): s for s in document["steps"]}
    assert set(steps) == {
        ("restart", "slurmctld"),
        ("restart", "slurmd"),
        ("reconfigure", "host-network"),  # the new nodes' own interface files
    }
    assert steps[("reconfigure", "host-network")]["nodes"] == []
    assert steps[("restart", "slurmctld")]["nodes"] == ["slurm-head"]
    assert steps[("restart", "slurmd")]["nodes"] == [f"gpu0{n}" for n in range(1, 9)]
    assert (
        "slurm/clustergen-nodes.slurmd changed (installed at /etc/slurm/clustergen-nodes.slurmd)"
        in steps[("restart", "slurmd")]["reasons"]
    )

    # The rendered group file lists say the same: each record notifies its daemon's restart,
    # on the group whose nodes run it, and the slurm role's handlers of those names act there.
    def entries(group: str) -> list[dict[str, str]]:
        rendered = yaml.safe_load((tree / "files" / "groups" / f"{group}.yml").read_text())
        return [e for e in rendered if "clustergen-nodes" in e["dest"]]

    assert [(e["dest"], e["notify"]) for e in entries("slurm_controller")] == [
        ("/etc/slurm/clustergen-nodes.slurmctld", "Restart slurmctld")
    ]
    assert [(e["dest"], e["notify"]) for e in entries("compute")] == [
        ("/etc/slurm/clustergen-nodes.slurmd", "Restart slurmd")
    ]
    handlers = {
        h["name"]: h for h in yaml.safe_load((ROLES / "slurm/handlers/main.yml").read_text())
    }
    assert "slurm_is_controller" in handlers["Restart slurmctld"]["when"]
    assert "slurm_is_compute" in handlers["Restart slurmd"]["when"]
    for tasks in (ROLES / "slurm/tasks").glob("*.yml"):
        assert all("notify" not in task for task in yaml.safe_load(tasks.read_text()) or []), tasks


def test_the_roll_out_installs_what_the_plan_rolls() -> None:
    """The concerns the plan lists in the roll-out's batches are the roles site.yml's
    roll-out play runs: the driver's (a reboot) and those installed with it."""
    plays = yaml.safe_load((REPO / "site.yml").read_text())
    (roll_out,) = [p for p in plays if p.get("vars", {}).get("nvidia_driver_rolling")]
    roles = {entry["role"] for entry in roll_out["roles"]}
    roles |= {
        task["ansible.builtin.include_role"]["name"]
        for task in roll_out.get("tasks", [])
        if "ansible.builtin.include_role" in task
    }
    assert roles == {c.role for c in CONCERNS if c.name == "nvidia_driver" or c.with_driver}


def without_racks(text: str) -> str:
    """The spec without its racks section (so nodes can go without emptying a rack)."""
    return re.sub(r"^racks:.*?(?=^\S)", "", text, flags=re.M | re.S)


def test_removed_nodes_are_named(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec, tree = applied(cli, without_racks(ML.read_text()), tmp_path)
    edit(
        spec,
        ("names: gpu[01-08]", "names: gpu[01-06]"),
        ('nodes: "gpu[01-08]"', 'nodes: "gpu[01-06]"'),
        ('nodes: "gpu[05-08],slurm-head', 'nodes: "gpu[05-06],slurm-head'),
    )
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.PLAN_CHANGES, result.err
    assert "- removed: gpu[07-08]; drain them before applying" in result.out
    assert "- **restart `slurmctld`** on slurm-head\n" in result.out
    assert "- **restart `slurmd`** on gpu[01-06]\n" in result.out


def test_a_reformat_is_destructive_and_comes_first(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Any artifact declaring a reformat makes the plan destructive (exit 5); the
    plan names exactly that target and lists it before everything else."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    edit(spec, *BUMP_DRIVER)
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    files = render_all(cluster)
    identity = "lustre/format/training-ost0003.format"  # an existing target's, changed
    files[identity] = Artifact(
        identity,
        files[identity].text + "mkfs.lustre --ost --index=3 /dev/disk/by-id/dm-name-ost3b\n",
        0o644,
        Install("/etc/clustergen/x.format", "lustre_oss", NodeChange("reformat", "OST0003")),
    )
    plan = make_plan(cluster, with_manifest(files, cluster.spec.cluster.name), tree)
    assert plan.exit_code == ExitCode.PLAN_DESTRUCTIVE
    text = markdown(plan)
    assert text.index("**DESTRUCTIVE") < text.index("### DESTRUCTIVE: reformat")
    assert text.index("### DESTRUCTIVE: reformat") < text.index("Rolling upgrade with reboots")
    assert "- **reformat `OST0003`** on oss[01-04]" in text
    assert f"  - {identity} changed" in text


def test_a_new_ost_device_reformats_that_target_on_its_own_node(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A target's format script and mount unit are installed on its service nodes only,
    so the plan names the one node whose target is destroyed, not every OSS."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    edit(spec, *NEW_OST_DEVICE)
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.PLAN_DESTRUCTIVE, result.err
    assert "- **reformat `training-OST0003`** on oss02" in result.out, result.out
    assert "- **remount `lustre`** on oss02\n" in result.out, result.out


def test_a_format_script_whose_comments_change_reformats_nothing(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Only a target's format identity decides a reformat: a new script that formats the
    same way (a comment, a header, the dry-run wording) is installed as is."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    files = render_all(cluster)
    script = "lustre/format/training-ost0003.sh"
    old = files[script]
    files[script] = Artifact(old.path, old.text + "# a comment\n", old.mode, old.install)
    plan = make_plan(cluster, with_manifest(files, cluster.spec.cluster.name), tree)
    assert plan.exit_code == ExitCode.OK
    assert plan.steps == []
    assert plan.tree_only == [
        f"{script} (changed, installed at /usr/local/sbin/lustre-format-training-ost0003 as is)"
    ]


def _as_rendered_before_format_identities(tree: Path) -> None:
    """The tree as a clustergen before the format identity files rendered it: no
    `.format` files, and each format script stood for its target's reformat."""
    manifest = tree / ".clustergen-manifest"
    lines = []
    for line in manifest.read_text(encoding="utf-8").splitlines(keepends=True):
        path, *fields = line.rstrip("\n").split("\t")
        # That release recorded no digests either.
        fields = [field for field in fields if not field.startswith("sha256:")]
        line = "\t".join([path, *fields]) + "\n"
        if path.startswith("lustre/format/") and path.endswith(".format"):
            (tree / path).unlink()
            continue
        if path.startswith("lustre/format/") and path.endswith(".sh"):
            group, _nothing, dest = fields
            script = tree / path
            line = "\t".join([path, group, f"reformat {_label_of(script)}", dest]) + "\n"
            # The header as the older release wrote it.
            text = script.read_text(encoding="utf-8").splitlines(keepends=True)
            text[2] = "# Rendered by clustergen from ml-training-8node.yaml. Do not edit.\n"
            script.write_text("".join(text), encoding="utf-8")
        lines.append(line)
    manifest.write_text("".join(lines), encoding="utf-8")


def _label_of(script: Path) -> str:
    stem = script.stem  # mgs, training-ost0003
    if stem == "mgs":
        return "MGS"
    fsname, target = stem.rsplit("-", 1)
    return f"{fsname}-{target[:3].upper()}{target[3:]}"


def test_a_tree_from_before_format_identities_plans_no_reformat(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The first plan after upgrading clustergen: the tree has no identity files yet, its
    format scripts stood for the targets' reformats. Scripts that format the same way
    (headers aside) plan no reformat; the identity files are recorded as they install."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    _as_rendered_before_format_identities(tree)
    result = cli("plan", str(spec), "-o", str(tree))
    assert "DESTRUCTIVE" not in result.out, result.out
    assert result.code == ExitCode.OK, result.out
    assert "training-ost0003.format (new, installed at" in result.out


def test_a_tree_from_before_format_identities_still_plans_a_real_reformat(
    cli, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    _as_rendered_before_format_identities(tree)
    edit(spec, ("dm-name-ost3}", "dm-name-ost3-new}"))
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.PLAN_DESTRUCTIVE, result.out
    assert "DESTRUCTIVE" in result.out


ZFS = DATA / "lustre-zfs.yaml"


@pytest.mark.parametrize(
    ("old", "new", "target", "node"),
    [
        ("ashift: 12", "ashift: 13", "scratch-OST0000", "oss1"),
        ("recordsize: 1M", "recordsize: 4M", "scratch-OST0000", "oss1"),
        ("quota_type=ug]", "quota_type=ugp]", "scratch-OST0000", "oss1"),
        ("scsi-ost0-d]", "scsi-ost0-e]", "scratch-OST0000", "oss1"),
        (
            "vdev_type: mirror, devices: [/dev/disk/by-id/nvme-mdt0-a",
            "vdev_type: stripe, devices: [/dev/disk/by-id/nvme-mdt0-a",
            "scratch-MDT0000",
            "mds1",
        ),
        ("device: ost1pool/ost1", "device: ost1pool/ost1b", "scratch-OST0001", "oss2"),
        ("- index: 1\n", "- index: 2\n", "scratch-OST0002", "oss2"),
    ],
)
def test_what_decides_a_format_plans_a_reformat(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, old: str, new: str, target: str, node: str
) -> None:
    spec, tree = applied(cli, ZFS.read_text(), tmp_path)
    edit(spec, (old, new))
    result = cli("plan", str(spec), "-o", str(tree), "--format", "json")
    assert result.code == ExitCode.PLAN_DESTRUCTIVE, result.out
    reformats = {
        s["service"]: s["nodes"]
        for s in json.loads(result.out)["steps"]
        if s["action"] == "reformat"
    }
    formats = {s["service"] for s in json.loads(result.out)["steps"] if s["action"] == "format"}
    if "index" in old:
        # The old index's target is gone with its data; the new index is a new target.
        assert reformats == {"scratch-OST0001": ["oss1", "oss2"]} and formats == {target}
        return
    # Only the target whose format changes.
    assert target in reformats and node in reformats[target]
    assert len(reformats) == 1 and not formats, (reformats, formats)


def test_failover_nids_are_not_a_reformat(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The MGS and service NIDs go into the format script, but tunefs.lustre changes them
    on a formatted target: the scripts change, nothing is reformatted."""
    spec, tree = applied(cli, ZFS.read_text(), tmp_path)
    edit(spec, ("failover: [oss1]", "failover: []"))
    result = cli("plan", str(spec), "-o", str(tree))
    assert "DESTRUCTIVE" not in result.out
    assert "lustre/format/scratch-ost0001.sh (changed, installed at" in result.out


def test_a_file_no_longer_rendered_uses_the_old_manifest(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    files = render_all(cluster)
    del files["slurm/gres.conf"]
    plan = make_plan(cluster, with_manifest(files, cluster.spec.cluster.name), tree)
    (step,) = plan.steps
    assert (step.action, step.service) == ("restart", "slurmd")
    assert step.reasons == [
        "slurm/gres.conf is no longer rendered; the copy installed at /etc/slurm/gres.conf "
        "stays until removed by hand"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--driver-batch-size", "0"], "is not a whole number of at least 1"),
        (["-o", "/nonexistent/tree"], "no rendered tree there to plan against"),
    ],
)
def test_unusable_plan_invocations_exit_2(
    cli, tmp_path: Path, args: list[str], message: str
) -> None:  # type: ignore[no-untyped-def]
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    argv = (
        ["plan", str(spec), "-o", str(tree), *args]
        if "-o" not in args
        else ["plan", str(spec), *args]
    )
    try:
        result = cli(*argv)
    except SystemExit as exc:  # argparse rejects the value itself
        assert exc.code == ExitCode.USAGE
        return
    assert result.code == ExitCode.USAGE
    assert message in result.err


ALIAS_BOMB = "\n".join(
    [
        "a: &a ['x','x','x','x','x','x','x','x','x']",
        *(
            f"{n}: &{n} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]"
            for p, n in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "groups: *i",
    ]
)


@pytest.mark.parametrize(
    ("path", "text", "says"),
    [
        ("versions.lock", ALIAS_BOMB, "a YAML alias or anchor, which clustergen never writes"),
        (
            "inventory/hosts.yml",
            "all:\n  hosts:\n    gpu[0:99999999999]: {}\n",
            "the range gpu[0:99999999999] names more than 1048576 hosts",
        ),
        (
            "inventory/hosts.yml",
            "all:\n  hosts:\n"
            + "".join(f"    g{i}[{'0' * 400}:{'0' * 394}900000]: {{}}\n" for i in range(4)),
            "names more than 1048576 hosts",
        ),
    ],
    ids=["alias-bomb-in-the-lock", "range-of-the-inventory", "padded-ranges"],
)
def test_a_committed_file_that_would_expand_without_end_is_refused(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, path: str, text: str, says: str
) -> None:
    """The committed tree is untrusted until it merges: a ten-line alias bomb in
    versions.lock, or an inventory range of 10^11 hosts, ran plan out of memory. plan
    refuses the file (exit 2), naming it, and expands nothing."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    (tree / path).write_text(text, encoding="utf-8")
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.USAGE, result.err
    assert says in result.err and "Traceback" not in result.err


def test_a_library_upgrade_is_an_install_on_the_nodes_that_get_it(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A pinned package whose version changes is installed by site.yml on its group's nodes:
    an action (exit 4) that says what running jobs see, never "Nothing to do"."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    edit(spec, *BUMP_NCCL)
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.PLAN_CHANGES, result.out
    assert "Nothing to do" not in result.out
    section = result.out.split("### Install new package versions\n", 1)[1].split("\n### ")[0]
    assert "- **install `nccl`** on gpu[01-08]\n" in section, result.out
    assert "libnccl2 2.21.5-1+cuda12.4 -> 2.23.4-1+cuda12.4" in section, section
    assert "jobs started after the install load it" in section, section
    assert "libnccl2" not in result.out.split("### No action on the nodes", 1)[-1].split("###")[0]
    steps = json.loads(cli("plan", str(spec), "-o", str(tree), "--format", "json").out)["steps"]
    assert [(s["action"], s["service"], s["nodes"][-1]) for s in steps] == [
        ("install", "nccl", "gpu08")
    ]


def test_a_new_target_is_formatted_and_mounted_not_destroyed(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Adding an OST is creation: a format of the new target (its script formats only a
    blank device) and a mount, with no DESTRUCTIVE banner and exit 4."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    edit(spec, *NEW_OST)
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.PLAN_CHANGES, result.out
    assert "DESTRUCTIVE" not in result.out and "reformat" not in result.out, result.out
    assert "### Format new targets\n" in result.out
    assert "- **format new target `training-OST0008`** on oss04\n" in result.out, result.out
    assert "formats only a blank device" in result.out
    assert "- **mount `lustre`** on oss04\n" in result.out, result.out
    assert "remount `lustre`" not in result.out, result.out


def test_new_servers_with_new_targets_plan_their_formats(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Two new OSS servers, two new OSTs each: each target's format on its new server
    (named, though the servers are new), nothing destroyed, and the servers to bring up."""
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    edit(spec, *NEW_OSS_SERVERS)
    result = cli("plan", str(spec), "-o", str(tree), "--format", "json")
    assert result.code == ExitCode.PLAN_CHANGES, result.out
    document = json.loads(result.out)
    assert not document["destructive"]
    formats = {s["service"]: s["nodes"] for s in document["steps"] if s["action"] == "format"}
    assert formats == {
        "training-OST0008": ["oss05"],
        "training-OST0009": ["oss05"],
        "training-OST000a": ["oss06"],
        "training-OST000b": ["oss06"],
    }
    # The new servers get their mounts and interfaces at their bring-up: no running node.
    assert {s["action"] for s in document["steps"]} == {"format", "mount", "reconfigure"}
    assert all(s["nodes"] == [] for s in document["steps"] if s["action"] != "format")
    assert document["nodes"]["added"] == ["oss05", "oss06"]


# The plans a reviewer reads for the pull requests above, committed (tests/plans/) and
# refreshed with tests/regen.py: each is read as a reviewer would, in the diff.
PLAN_CASES = {
    "nccl-upgrade": BUMP_NCCL,
    "new-ost": NEW_OST,
    "new-oss-servers": NEW_OSS_SERVERS,
    "driver-and-two-nodes": [*BUMP_DRIVER, *ADD_TWO_NODES],
    "ost-on-a-new-device": NEW_OST_DEVICE,
}


@pytest.mark.parametrize("case", sorted(PLAN_CASES))
def test_the_plans_a_reviewer_reads(cli, tmp_path: Path, case: str, update_golden: bool) -> None:  # type: ignore[no-untyped-def]
    spec, tree = applied(cli, ML.read_text(), tmp_path)
    edit(spec, *PLAN_CASES[case])
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code in (ExitCode.PLAN_CHANGES, ExitCode.PLAN_DESTRUCTIVE), result.err
    text = result.out.replace(str(tree), "TREE")
    check_current(REPO / "tests" / "plans" / f"{case}.md", text, update_golden)


@pytest.mark.parametrize(
    "change",
    [
        NodeChange("nothing"),
        NodeChange("reboot"),
        NodeChange("restart", "slurmd"),
        NodeChange("reformat", "OST0003"),
        NodeChange("set_param", "lustre"),
    ],
    ids=lambda c: c.describe(),
)
def test_the_manifest_reads_back_the_change_it_wrote(change: NodeChange) -> None:
    assert NodeChange.read(change.describe()) == change


@pytest.mark.parametrize("written", ["", "explode gpu01", "restart", "reboot now", "nothing x"])
def test_a_change_no_clustergen_wrote_needs_nothing_known(written: str) -> None:
    """A hand edit or an older word: plan asks nothing of the nodes for it (and never
    fails on it), rather than guess."""
    assert NodeChange.read(written) == NodeChange("nothing")


def test_one_order_names_every_action_once() -> None:
    """Artifacts and plan share SEVERITY: every action a file's change or a plan step can
    take is in it once ("nothing" is no step), so no second order can drift from it."""
    assert sorted(SEVERITY) == sorted(set(get_args(PlanAction)) - {"nothing"})
    assert len(set(SEVERITY)) == len(SEVERITY)
    assert SEVERITY[:2] == ("reformat", "reboot")  # markdown() writes these two first


GB200 = EXAMPLES / "gb200-nvl72-4rack.yaml"
GB200_DRIVER = ("nvidia_driver: 570.133.20", "nvidia_driver: 570.158.01")
GB200_DOMAINS = {
    f"nvl{n}": [f"gb{t:03d}" for t in range(18 * n - 17, 18 * n + 1)] for n in (1, 2, 3, 4)
}


def _gb200_bumped(cli, tmp_path: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """The GB200 example's tree, and its spec with a newer driver of the branch."""
    spec, tree = applied(cli, GB200.read_text(), tmp_path, GB200.name)
    edit(spec, GB200_DRIVER)
    return spec, tree


def _gb200_driver_plan(cli, tmp_path: Path, *options: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    spec, tree = _gb200_bumped(cli, tmp_path)
    result = cli("plan", str(spec), "-o", str(tree), "--format", "json", *options)
    assert result.code == ExitCode.PLAN_CHANGES, result.err
    return cast(dict[str, Any], json.loads(result.out)["driver_rollout"])


def test_a_driver_roll_out_on_nvlink_domains_takes_each_domain_whole(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """GB200 NVL72: each batch is one NVLink domain's 18 trays (a domain runs one driver
    and IMEX across its trays), and IMEX moves inside the batches with the driver: no
    restart of it on every tray afterwards."""
    rollout = _gb200_driver_plan(cli, tmp_path)
    assert rollout["batch_nvlink_domains"] == [["nvl1"], ["nvl2"], ["nvl3"], ["nvl4"]]
    assert rollout["batches"] == [GB200_DOMAINS[d] for d in ("nvl1", "nvl2", "nvl3", "nvl4")]
    moved = {(p["concern"], p["package"], p["new"]) for p in rollout["packages"]}
    assert ("NVIDIA IMEX", "nvidia-imex-570", "570.158.01-1") in moved, moved


def test_domains_per_batch_takes_that_many_domains_at_once(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rollout = _gb200_driver_plan(cli, tmp_path, "--driver-domains-per-batch", "3")
    assert rollout["batch_nvlink_domains"] == [["nvl1", "nvl2", "nvl3"], ["nvl4"]]
    assert [len(batch) for batch in rollout["batches"]] == [54, 18]


def test_the_gb200_driver_plan_a_reviewer_reads(cli, tmp_path: Path, update_golden: bool) -> None:  # type: ignore[no-untyped-def]
    spec, tree = _gb200_bumped(cli, tmp_path)
    result = cli("plan", str(spec), "-o", str(tree))
    assert result.code == ExitCode.PLAN_CHANGES, result.err
    assert "restart `nvidia-imex`" not in result.out
    text = result.out.replace(str(tree), "TREE")
    check_current(REPO / "tests" / "plans" / "gb200-driver.md", text, update_golden)
