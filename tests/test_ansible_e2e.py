"""site.yml and verify.yml against real Debian nodes (chroots), per shared/reference/testbed.md.

Renders the ml-training reference spec, runs the real playbooks on two compute nodes
of one GPU profile and the controller, and shows that: the first run succeeds; every
node has exactly the lock file's versions, held; a second run changes nothing; a
manual upgrade on one node and a hold taken off on another make verify.yml fail naming
both nodes and the package; a converge run, of exactly those two nodes, puts the pin and
the hold back and verify.yml passes. The first two runs are verbose
(-vvv), and their whole output holds no vault value and no digest of one (nor of a file
that carries one).
"""

from __future__ import annotations

import base64
import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from clustergen.cli import main

from support.ansible_testbed import (
    Ansible,
    Node,
    PlaybookRun,
    base_system,
    chroot_inventory,
    encrypt_vault,
    expected_versions,
    group_memberships,
    make_nodes,
    missing_prerequisites,
    newer_version,
    stand_in_repository,
)
from support.ci import skip_or_fail
from support.paths import EXAMPLES
from support.secret_scan import leaks, secret_needles

pytestmark = pytest.mark.daemons

SPEC = EXAMPLES / "ml-training-8node.yaml"
# Two compute nodes of the hgx-h100 profile, and the controller (also slurmdbd and login).
NODES = ("gpu01", "gpu02", "slurm-head")
DRIFT_NODE, DRIFT_PACKAGE = "gpu02", "libnccl2"
# verify.yml and the converge check also catch a hold that is gone: another node's pin.
UNHELD_NODE = "gpu01"
# The converge check's tasks: all that a current node runs (the fast path).
CHECK_TASKS = 2
# A package of the driver branch that is not its meta package: pinned, held and reported
# like any other, and moving it rolls the driver on that node alone.
DRIFT_BRANCH_PACKAGE = "libnvidia-compute-550"
STORAGE_PASS = "testbed-db-secret"
MUNGE_KEY_B64 = base64.b64encode(bytes(range(256)) * 4).decode()  # what mungekey writes: 1 KiB
ROLLOUT_PLAY = "NVIDIA driver | roll out in batches (drain, install, reboot, check, resume)"


def _require_testbed() -> None:
    missing = missing_prerequisites()
    if not missing:
        return
    skip_or_fail(f"the Ansible testbed needs {', '.join(missing)}")


def _drift_rows(output: str, package: str) -> dict[str, list[str]]:
    """verify.yml's table rows for one package, by node: [locked, installed, held]."""
    rows = {}
    for line in output.splitlines():
        cells = line.strip().lstrip("-").strip().strip("'\"").split()
        if len(cells) == 5 and cells[1] == package:
            rows[cells[0]] = [cells[2], cells[3], cells[4]]
    return rows


def _succeeded(run: PlaybookRun, what: str) -> None:
    """The run passed; else each failed task's lines (its header before, its result
    after), then the output's end."""
    if run.returncode == 0:
        return
    lines = run.output.splitlines()
    failed = [
        "\n".join(lines[max(0, i - 3) : i + 25])
        for i, line in enumerate(lines)
        if line.startswith(("fatal:", "failed:"))
    ]
    raise AssertionError(
        f"{what} failed (exit {run.returncode}):\n"
        + "\n".join(failed)
        + f"\n...\n{run.output[-6000:]}"
    )


def _assert_pinned(
    nodes: list[Node], expected: dict[str, dict[str, str]], stand_ins: set[str]
) -> None:
    """Exactly the lock's packages at exactly its versions (a `39.0-*` pin: at any
    revision of 39.0, as apt preferences match it), each held; no other stand-in."""
    for node in nodes:
        status = node.dpkg_status()
        wrong = {
            name: status.get(name, ("not installed", "-"))
            for name, version in expected[node.name].items()
            if name not in status
            or status[name][1] != "hold"
            or not fnmatch.fnmatchcase(status[name][0], version)
        }
        assert not wrong, f"{node.name}: not at the locked version and held: {wrong}"
        extra = sorted((stand_ins & set(status)) - set(expected[node.name]))
        assert not extra, f"{node.name}: installed packages the lock does not give it: {extra}"


def _assert_plain_upgrade_moves_nothing(node: Node) -> None:
    """What unattended-upgrades or an admin's `apt upgrade` would do, simulated."""
    simulated = node.run("apt-get", "-s", "dist-upgrade").stdout
    moved = [line for line in simulated.splitlines() if line.startswith("Inst ")]
    assert not moved, f"{node.name}: a plain upgrade would move pinned packages: {moved}"


def _assert_accounts_and_munge_key(nodes: dict[str, Node]) -> None:
    """One slurm and one munge UID on every node (cluster.accounts defaults), and the
    vault's MUNGE key on every Slurm node, owned by munge, 0400."""
    for node in nodes.values():
        passwd = {
            line.split(":")[0]: int(line.split(":")[2])
            for line in (node.root / "etc/passwd").read_text().splitlines()
        }
        assert (passwd["slurm"], passwd["munge"]) == (64030, 64031), node.name
        key = node.root / "etc/munge/munge.key"
        assert key.read_bytes() == base64.b64decode(MUNGE_KEY_B64), node.name
        assert (key.stat().st_uid, stat.S_IMODE(key.stat().st_mode)) == (64031, 0o400)
        hosts = (node.root / "etc/hosts").read_text()
        assert "10.0.1.2 slurm-head slurm-head.hpc.example.org" in hosts, node.name


def _assert_slurm_files(nodes: dict[str, Node], rendered: Path) -> None:
    head, compute = nodes["slurm-head"], nodes["gpu01"]
    for node in (head, compute):
        for name in ("slurm.conf", "gres.conf", "cgroup.conf", "topology.conf"):
            installed = node.root / "etc/slurm" / name
            assert installed.read_text() == (rendered / "slurm" / name).read_text(), (
                f"{node.name}: {name}"
            )
    dbd = head.root / "etc/slurm/slurmdbd.conf"
    info = dbd.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    passwd = (head.root / "etc/passwd").read_text()
    slurm_uid = next(
        int(line.split(":")[2]) for line in passwd.splitlines() if line.startswith("slurm:")
    )
    assert info.st_uid == slurm_uid, "slurmdbd.conf must belong to SlurmUser"
    rendered_dbd = (rendered / "slurm" / "slurmdbd.conf").read_text()
    assert dbd.read_text() == rendered_dbd + f"StoragePass={STORAGE_PASS}\n"
    assert not (compute.root / "etc/slurm/slurmdbd.conf").exists(), (
        "only slurmdbd nodes get the secret"
    )
    epilog = compute.root / "etc/slurm/health-epilog.sh"
    assert stat.S_IMODE(epilog.stat().st_mode) == 0o755
    # Job steps keep slurmd's locked-memory limit (PropagateResourceLimitsExcept=MEMLOCK).
    memlock = "etc/systemd/system/slurmd.service.d/clustergen-memlock.conf"
    assert "\n[Service]\nLimitMEMLOCK=infinity\n" in (compute.root / memlock).read_text()
    assert not (head.root / memlock).exists(), "slurmd runs on compute nodes only"


def test_site_pins_holds_and_reports_drift(
    tmp_path: Path, testbed_scratch: Path, measured: Callable[[str], None]
) -> None:
    _require_testbed()
    started = time.monotonic()

    out = tmp_path / "out"
    assert main(["render", str(SPEC), "-o", str(out)]) == 0
    lock = yaml.safe_load((out / "versions.lock").read_text())
    memberships = group_memberships(out / "inventory")
    expected = {name: expected_versions(lock, memberships[name]) for name in NODES}
    every_pin = {n: v for group in lock["groups"].values() for n, v in group["packages"].items()}
    assert DRIFT_PACKAGE in expected[DRIFT_NODE]

    setup_started = time.monotonic()
    base = base_system(testbed_scratch)
    # munge and chrony are the distribution's, not pinned; the chroots get stand-ins of them.
    repository = stand_in_repository(
        {**every_pin, "munge": "0.5.15-2", "chrony": "4.3-2+deb12u1"}, testbed_scratch
    )
    (tmp_path / "nodes").mkdir()
    node_list = make_nodes(NODES, base, repository, tmp_path / "nodes")
    nodes = {node.name: node for node in node_list}
    setup_seconds = time.monotonic() - setup_started

    vault, password = encrypt_vault(
        {"vault_slurmdbd_storage_pass": STORAGE_PASS, "vault_munge_key": MUNGE_KEY_B64}, tmp_path
    )
    # Run from the rendered tree, as a site does: its own playbooks, roles and ansible.cfg.
    ansible = Ansible(
        out,
        (out / "inventory", chroot_inventory(node_list, tmp_path / "testbed.yml")),
        limit=",".join(NODES),
        extra_args=("-e", f"@{vault}", "--vault-password-file", str(password)),
    )

    # Verbose, as an admin debugging a run would: the output holds every module's
    # arguments and result, and every command line, yet no secret and no digest of one.
    needles = secret_needles(
        {"vault_slurmdbd_storage_pass": STORAGE_PASS, "vault_munge_key": MUNGE_KEY_B64},
        {
            "/etc/slurm/slurmdbd.conf": (
                (out / "slurm" / "slurmdbd.conf").read_text() + f"StoragePass={STORAGE_PASS}\n"
            ).encode(),
            "/etc/munge/munge.key": base64.b64decode(MUNGE_KEY_B64),
        },
    )
    first = ansible.playbook("site.yml", "-vvv")
    _succeeded(first, "first site.yml run")
    assert not leaks(first.output, needles), "\n".join(leaks(first.output, needles))
    # Both GPU nodes get their driver, one batch (clustergen_driver_batch_size=1) at a time.
    assert first.output.count(f"PLAY [{ROLLOUT_PLAY}]") == 2, first.output
    _assert_pinned(node_list, expected, set(every_pin))
    _assert_slurm_files(nodes, out)
    _assert_accounts_and_munge_key(nodes)
    for node in node_list:
        _assert_plain_upgrade_moves_nothing(node)

    second = ansible.playbook("site.yml", "-vvv")
    _succeeded(second, "second site.yml run")
    # The converge check's request (the sha256 of slurmdbd.conf and of the key) was sent.
    assert "TASK [clustergen_state : Check the node against the release" in second.output
    assert not leaks(second.output, needles), "\n".join(leaks(second.output, needles))
    no_rollout = rf"PLAY \[{re.escape(ROLLOUT_PLAY)}\] \**\nskipping: no hosts matched"
    assert re.search(no_rollout, second.output), "no node needs a driver change, none is rolled"
    assert set(second.changed()) == set(NODES)
    assert not any(second.changed().values()), (
        f"the second run changed something: {second.changed()}\n{second.output}"
    )
    # The converge check found every node current: the converge plays ran on none.
    for node in NODES:
        assert f"ok: [{node}] => (item=current)" in second.output, second.output
    assert "TASK [slurm : " not in second.output, second.output
    # Forced, every play runs on every node again, and still changes nothing.
    forced = ansible.playbook("site.yml", "-e", "clustergen_converge_all=true")
    _succeeded(forced, "site.yml -e clustergen_converge_all=true")
    assert "TASK [slurm : " in forced.output, forced.output
    assert not any(forced.changed().values()), (
        f"the forced run changed something: {forced.changed()}\n{forced.output}"
    )
    _succeeded(ansible.playbook("verify.yml"), "verify.yml on converged nodes")

    # An admin moves one package on one node past its pin, and takes another node's hold
    # off the same package.
    assert DRIFT_BRANCH_PACKAGE in expected[DRIFT_NODE]
    assert DRIFT_PACKAGE in expected[UNHELD_NODE]
    newer = newer_version(expected[DRIFT_NODE][DRIFT_PACKAGE])
    newer_branch = newer_version(expected[DRIFT_NODE][DRIFT_BRANCH_PACKAGE])
    nodes[DRIFT_NODE].run(
        "apt-get",
        "install",
        "-y",
        "--allow-change-held-packages",
        f"{DRIFT_PACKAGE}={newer}",
        f"{DRIFT_BRANCH_PACKAGE}={newer_branch}",
    )
    nodes[UNHELD_NODE].run("apt-mark", "unhold", DRIFT_PACKAGE)
    drifted_nodes = {DRIFT_NODE, UNHELD_NODE}

    previewed = ansible.playbook("site.yml", "--check")
    _succeeded(previewed, "site.yml --check on the drifted nodes")
    assert {n for n, c in previewed.changed().items() if c} == drifted_nodes, previewed.changed()

    drifted = ansible.playbook("verify.yml")
    assert drifted.returncode != 0, f"verify.yml passed despite drift:\n{drifted.output}"
    # The table's rows of the package, by node: locked, installed, held.
    rows = _drift_rows(drifted.output, DRIFT_PACKAGE)
    pin = expected[DRIFT_NODE][DRIFT_PACKAGE]
    assert set(rows) == drifted_nodes, drifted.output
    assert rows[DRIFT_NODE][:2] == [pin, newer], rows
    assert rows[UNHELD_NODE] == [pin, pin, "no"], rows
    branch_rows = [
        line
        for line in drifted.output.splitlines()
        if DRIFT_BRANCH_PACKAGE in line and newer_branch in line and DRIFT_NODE in line
    ]
    assert branch_rows, f"the report misses {DRIFT_BRANCH_PACKAGE}:\n{drifted.output}"
    named = re.search(r"differ from the lock on (.+?)\s*$", drifted.output, re.MULTILINE)
    assert named is not None and named[1] == ", ".join(sorted(drifted_nodes)), drifted.output

    converge = ansible.playbook("site.yml")
    _succeeded(converge, "converge run")
    assert {n for n, c in converge.changed().items() if c} == drifted_nodes, converge.changed()
    # The moved branch package puts that node, and only it, through the rolling play.
    assert converge.output.count(f"PLAY [{ROLLOUT_PLAY}]") == 1, converge.output
    # The check sent exactly the two drifted nodes to the plays of the packages' family
    # (the NVIDIA stack's, with the driver's plan and roll-out: `partial nccl`), each for
    # its own reason, in the check's words; the current node ran the check alone, and no
    # drifted node ran a play of another family.
    current = set(NODES) - drifted_nodes
    for node in current:
        assert f"ok: [{node}] => (item=current)" in converge.output, converge.output
        assert converge.recap[node]["ok"] == CHECK_TASKS, (node, converge.recap)
    for node in drifted_nodes:
        assert converge.recap[node]["ok"] > CHECK_TASKS, converge.recap
    verdicts = {
        line.split("]")[0].removeprefix("ok: ["): line
        for line in converge.output.splitlines()
        if "(item=partial nccl: " in line
    }
    assert f"package {DRIFT_PACKAGE}: {newer}, pinned {pin}" in verdicts[DRIFT_NODE], verdicts
    assert f"package {DRIFT_PACKAGE}: not held" in verdicts[UNHELD_NODE], verdicts
    assert "TASK [slurm : " not in converge.output, converge.output
    assert "TASK [cluster_base : " not in converge.output, converge.output
    _succeeded(ansible.playbook("verify.yml"), "verify.yml after the converge run")
    _assert_pinned(node_list, expected, set(every_pin))

    measured(
        f"\nansible e2e ({len(NODES)} chroot nodes, {os.cpu_count()} cores): "
        f"first site.yml run {first.seconds:.1f}s, no-op run {second.seconds:.1f}s, "
        f"testbed setup {setup_seconds:.1f}s, whole test {time.monotonic() - started:.1f}s"
    )
