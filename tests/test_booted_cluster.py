"""site.yml on booted Debian nodes over SSH with become, as a site runs it.

Debian 12 nodes run the whole of it below; tests/test_booted_debian_13.py boots the same
spec on Debian 13, with pull mode, and takes its helpers from here.

Three nodes of tests/data/booted-3node.yaml (head: slurmctld and slurmdbd; gpu1, gpu2:
8 fake GPUs each) are booted with systemd-nspawn on a bridge the test creates
(tests/support/booted.py). Ansible reaches them only over SSH as the admin user, with
become; nothing of the rendered inventory is overridden but how to connect. The first
site.yml run of the working cluster is verbose (-vvv): over SSH with become, with a real
MariaDB, its output holds no vault value and no digest of one.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from clustergen.catalog.groups import hardware_group
from clustergen.cli import main

from support.ansible_testbed import Ansible, PlaybookRun, encrypt_vault, newer_version, run
from support.booted import (
    ADMIN,
    BootedCluster,
    BootedNode,
    NodePlan,
    booted_cluster,
    daemon_packages,
    local_repository,
    missing_prerequisites,
    node_base,
    refuse_outside,
)
from support.ci import skip_or_fail, tool
from support.paths import DATA
from support.secret_scan import leaks, secret_needles

pytestmark = pytest.mark.daemons

SPEC = DATA / "booted-3node.yaml"
# The rolling driver step: the same spec with a newer driver of the branch.
DRIVER, NEWER_DRIVER = "550.90.07", "550.127.05"
DRIVER_UPGRADE = (f"nvidia_driver: {DRIVER}", f"nvidia_driver: {NEWER_DRIVER}")
# A change a reconfigure applies (MaxTime), and one that needs restarts: new GPU boards
# change the GRES type of the node lines and of gres.conf.
MAX_TIME_CHANGE = ('max_time: "1-00:00:00"', 'max_time: "2-00:00:00"')
GPU_MODEL_CHANGE = ("model: h100-pcie-80gb", "model: h100-nvl-94gb")
# Where the restart round adds a newer libnccl2 (software.packages): a library bump.
NCCL_LINE = "  nccl: 2.21.5\n"
NEW_GRES = "gpu:h100nvl:8"
HEAD, GPU_NODES = "head", ("gpu1", "gpu2")
GPUS_PER_NODE = 8
MUNGE_KEY = bytes(range(256)) * 4  # 1024 bytes, what mungekey writes
STORAGE_PASS = "booted-db-secret"
ROLLOUT_PLAY = "NVIDIA driver | roll out in batches (drain, install, reboot, check, resume)"
# The job on the second node runs until the first node is back from its upgrade (the
# test then releases it by creating this file there), however long the run takes; it
# gives up on its own after JOB_SECONDS.
RELEASE_FILE = "/run/clustergen-test-release"
JOB_SECONDS = 900
REBOOTED = "gpu2"
SLURM_VERSION = "22.05.8"
SLURM_PACKAGES = ("slurm-client", "slurmctld", "slurmd", "slurmdbd")
SLURM_STACK = ("munge", "mariadb-server", "slurmctld", "slurmd", "slurmdbd", "slurm-client")


def _require() -> None:
    missing = missing_prerequisites()
    if missing:
        skip_or_fail(f"booted nodes need {', '.join(missing)}")


def _succeeded(result: PlaybookRun, what: str) -> None:
    assert result.returncode == 0, (
        f"{what} failed (exit {result.returncode}):\n{result.output[-8000:]}"
    )


@dataclass(frozen=True)
class Rendered:
    out: Path
    addresses: dict[str, str]
    gpus: dict[str, int]
    subnet: ipaddress.IPv4Network
    gateway: ipaddress.IPv4Address
    pins: tuple[dict[str, str], ...]
    spec_text: str


def _edited(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} is not in the spec exactly once"
    return text.replace(old, new)


class SpecEdits:
    """The admin's edits to the spec, one after another, each rendered over the same
    tree as a site does before running site.yml again."""

    def __init__(self, rendered: Rendered, work: Path) -> None:
        self.rendered = rendered
        self.text = rendered.spec_text
        self.path = work / SPEC.name

    def apply(self, old: str, new: str) -> None:
        self.text = _edited(self.text, old, new)
        self.path.write_text(self.text)
        assert main(["render", str(self.path), "-o", str(self.rendered.out)]) == 0


def _pins(out: Path) -> dict[str, str]:
    lock = yaml.safe_load((out / "versions.lock").read_text())
    return {n: v for group in lock["groups"].values() for n, v in group["packages"].items()}


def _site_spec(debs: Path, version: str = SLURM_VERSION) -> str:
    """The test spec as it stands. Debian's Slurm packages carry a revision suffix
    (22.05.8-4+deb12uN) that changes with Debian's point releases; the spec's
    `slurm_packages: distribution` pins them at 22.05.8-*, which matches the revision the
    mirror offers today (the downloaded packages), so the spec names no revision."""
    real = dict(deb.name.split("_")[:2] for deb in debs.glob("*.deb"))
    for name in SLURM_PACKAGES:
        assert real[name].startswith(version + "-"), (name, real[name])
    return SPEC.read_text()


def _render(
    tmp_path: Path,
    spec_text: str,
    slurm_packages: tuple[str, ...] = SLURM_PACKAGES,
    version: str = SLURM_VERSION,
) -> Rendered:
    out = tmp_path / "out"
    spec_path = tmp_path / SPEC.name
    spec_path.write_text(spec_text)
    assert main(["render", str(spec_path), "-o", str(out)]) == 0
    upgraded = tmp_path / "upgraded" / SPEC.name
    upgraded.parent.mkdir()
    upgraded.write_text(_edited(spec_text, *DRIVER_UPGRADE))
    assert main(["render", str(upgraded), "-o", str(tmp_path / "upgraded" / "out")]) == 0
    listing = json.loads(
        run([str(tool("ansible-inventory")), "-i", str(out / "inventory"), "--list"]).stdout
    )
    hostvars = listing["_meta"]["hostvars"]
    addresses = {host: str(hostvars[host]["ansible_host"]) for host in sorted(hostvars)}
    spec = yaml.safe_load(spec_text)
    management = spec["network"]["management"]
    # Each node's fake GPUs: its hardware profile's count (group hw_<profile>).
    gpus = {
        host: profile["gpu"]["count"]
        for name, profile in spec["hardware"].items()
        if "gpu" in profile
        for host in listing.get(hardware_group(name), {}).get("hosts", [])
    }
    # The local repository offers both stacks, as a site's mirror would.
    pins = (_pins(out), _pins(tmp_path / "upgraded" / "out"))
    # Debian's own Slurm, at any Debian revision of the spec's version.
    assert {name: pins[0].get(name) for name in SLURM_PACKAGES} == {
        name: version + "-*" if name in slurm_packages else None for name in SLURM_PACKAGES
    }
    return Rendered(
        out,
        addresses,
        gpus,
        ipaddress.IPv4Network(management["cidr"]),
        ipaddress.IPv4Address(management["gateway"]),
        pins,
        spec_text,
    )


def test_refuses_addresses_outside_the_subnet_it_created() -> None:
    subnet = ipaddress.IPv4Network("10.213.7.0/24")
    refuse_outside({"head": "10.213.7.2", "gpu1": "10.213.7.11"}, subnet)
    with pytest.raises(RuntimeError, match=r"outside the test's subnet .*'gpu2': '10.0.1.12'"):
        refuse_outside({"head": "10.213.7.2", "gpu2": "10.0.1.12"}, subnet)


@pytest.fixture(scope="module")
def node_tree(testbed_scratch: Path) -> Path:
    _require()
    return node_base(testbed_scratch)


@pytest.fixture(scope="module")
def rendered(
    node_tree: Path, testbed_scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> Rendered:
    spec_text = _site_spec(daemon_packages(node_tree, testbed_scratch))
    return _render(tmp_path_factory.mktemp("render"), spec_text)


def _booted(
    rendered: Rendered,
    base: Path,
    repo: Path,
    work: Path,
    binds: Sequence[tuple[Path, str]] = (),
) -> AbstractContextManager[BootedCluster]:
    """The rendered spec's nodes, booted from base with repo (and binds, read-only);
    checked first, before any node exists, so the test talks to no address it did not
    create."""
    refuse_outside(rendered.addresses, rendered.subnet)
    plans = [
        NodePlan(host, address, rendered.gpus.get(host, 0))
        for host, address in rendered.addresses.items()
    ]
    return booted_cluster(plans, rendered.subnet, rendered.gateway, base, repo, work, binds=binds)


@pytest.fixture(scope="module")
def cluster(
    rendered: Rendered,
    node_tree: Path,
    testbed_scratch: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[BootedCluster]:
    work = tmp_path_factory.mktemp("booted")
    started = time.monotonic()
    base = node_tree
    repo = local_repository(rendered.pins, base, testbed_scratch)
    build_seconds = time.monotonic() - started
    with _booted(rendered, base, repo, work) as booted:
        booted.timings["build"] = build_seconds
        booted.timings["boot"] = booted.boot_seconds
        yield booted


@pytest.fixture(scope="module")
def ansible(
    rendered: Rendered, cluster: BootedCluster, tmp_path_factory: pytest.TempPathFactory
) -> Ansible:
    connection = cluster.connection_inventory(tmp_path_factory.mktemp("conn") / "connection.yml")
    return Ansible(
        rendered.out,
        (rendered.out / "inventory", connection),
        limit="all",
    )


# --- every optional component absent -----------------------------------------------------

# The spec's own cluster less everything optional: no DCGM, accounting (slurmdbd) or
# QOS; no fabric manager, Lustre or cuDNN (the test spec pins none of them either). On
# its own subnet with one GPU node, so it never waits for the module's cluster.
BARE_SUBNET = "10.213.8"
BARE_GPU_NODE = "gpu1"
OPTIONAL_SOFTWARE = ("dcgm", "cudnn", "fabric_manager")


def _without_optional_components(spec_text: str) -> str:
    spec = yaml.safe_load(spec_text)
    for key in OPTIONAL_SOFTWARE:
        spec["software"].pop(key, None)
    spec.pop("lustre", None)
    spec["network"].pop("fabric", None)  # and the GPU nodes' fabric_ip below: no host network
    spec.pop("monitoring", None)
    slurm = spec["slurm"]
    for key in ("accounting", "qos", "preemption", "mpi"):
        slurm.pop(key, None)
    spec["network"]["management"] = {
        "cidr": f"{BARE_SUBNET}.0/24",
        "gateway": f"{BARE_SUBNET}.1",
    }
    gpu, head = spec["nodes"]
    gpu.update(names=BARE_GPU_NODE, management_ip=f"{BARE_SUBNET}.11")
    gpu.pop("fabric_ip", None)
    head.update(roles=["slurm_controller", "login"], management_ip=f"{BARE_SUBNET}.2")
    slurm["partitions"][0]["nodes"] = BARE_GPU_NODE
    devices = spec["racks"][0]["devices"]
    spec["racks"][0]["devices"] = [d for d in devices if d["node"] in (BARE_GPU_NODE, HEAD)]
    return yaml.safe_dump(spec, sort_keys=False)


def test_site_converges_with_every_optional_component_absent(
    node_tree: Path,
    testbed_scratch: Path,
    tmp_path: Path,
    measured: Callable[[str], None],
) -> None:
    """site.yml on bare nodes of a spec without DCGM, fabric manager, Lustre,
    accounting, QOS and cuDNN: the first run converges, a second changes nothing, and
    a forced run (every play on every node again) changes nothing either. Defined
    before the module's cluster tests, so its nodes are gone before those boot."""
    spec_text = _without_optional_components(
        _site_spec(daemon_packages(node_tree, testbed_scratch))
    )
    (tmp_path / "render").mkdir()
    rendered = _render(tmp_path / "render", spec_text, ("slurm-client", "slurmctld", "slurmd"))
    # Nothing optional is in the rendered tree.
    lock_groups = yaml.safe_load((rendered.out / "versions.lock").read_text())["groups"]
    assert not any(
        name.startswith(
            (
                "datacenter-gpu-manager",
                "libcudnn",
                "libnvidia-nscq",
                "nvidia-fabricmanager",
                "lustre",
            )
        )
        for name in rendered.pins[0]
    ), rendered.pins[0]
    assert not any(group.startswith(("lustre", "nvswitch")) for group in lock_groups)
    slurm_conf = (rendered.out / "slurm" / "slurm.conf").read_text()
    assert "AccountingStorageType" not in slurm_conf
    assert not (rendered.out / "slurm" / "slurmdbd.conf").exists()
    assert not (rendered.out / "slurm" / "clustergen-qos.sh").exists()
    assert not (rendered.out / "lustre").exists()
    gpu_vars = yaml.safe_load((rendered.out / "inventory/group_vars/nvidia_gpu.yml").read_text())
    assert (gpu_vars["dcgm_packages"], gpu_vars["cudnn_packages"]) == ({}, {})

    repo = local_repository(rendered.pins, node_tree, testbed_scratch)
    assert sorted(rendered.addresses) == sorted((BARE_GPU_NODE, HEAD))
    with _booted(rendered, node_tree, repo, tmp_path / "booted") as cluster:
        vault, password = encrypt_vault(
            {"vault_munge_key": base64.b64encode(MUNGE_KEY).decode()}, tmp_path
        )
        ansible = Ansible(
            rendered.out,
            (rendered.out / "inventory", cluster.connection_inventory(tmp_path / "conn.yml")),
            limit="all",
            extra_args=("-e", f"@{vault}", "--vault-password-file", str(password)),
        )
        first = ansible.playbook("site.yml")
        _succeeded(first, "first site.yml run without optional components")
        head, gpu = cluster.nodes[HEAD], cluster.nodes[BARE_GPU_NODE]
        states = {
            (node.name, unit): _active(node, unit)
            for node, units in ((head, ("munge", "slurmctld")), (gpu, ("munge", "slurmd")))
            for unit in units
        }
        assert set(states.values()) == {"active"}, states
        for node in (head, gpu):
            for unit in ("nvidia-dcgm", "slurmdbd", "mariadb", "nvidia-fabricmanager", "lnet"):
                loaded = node.sh(f"systemctl show -P LoadState {unit}").stdout.strip()
                assert loaded == "not-found", (node.name, unit, loaded)
        _wait_for(
            f"{BARE_GPU_NODE} idle",
            lambda: _node_states(cluster).get(BARE_GPU_NODE, ("", ""))[0] == "idle",
        )
        _assert_jobs_lock_unlimited_memory(cluster, (BARE_GPU_NODE,))

        second = ansible.playbook("site.yml")
        _succeeded(second, "second site.yml run without optional components")
        assert not any(second.changed().values()), second.output
        _assert_fast_path(second, set(cluster.nodes))
        forced = ansible.playbook("site.yml", "-e", "clustergen_converge_all=true")
        _succeeded(forced, "forced site.yml run without optional components")
        assert "TASK [dcgm : " in forced.output, forced.output
        assert not any(forced.changed().values()), (
            f"the forced run changed: {forced.changed()}\n{forced.output}"
        )
        _succeeded(ansible.playbook("verify.yml"), "verify.yml without optional components")
    measured(
        f"\nbooted, every optional component absent: first site.yml {first.seconds:.1f}s, "
        f"no-op {second.seconds:.1f}s, forced {forced.seconds:.1f}s"
    )


def test_nodes_answer_over_ssh_with_become(
    rendered: Rendered, cluster: BootedCluster, ansible: Ansible, measured: Callable[[str], None]
) -> None:
    """The smoke test: every node answers Ansible as admin, become gives root, and the
    GPU nodes see their fake devices."""
    assert set(cluster.nodes) == set(rendered.addresses)
    ping = ansible.adhoc("all", "-m", "ansible.builtin.ping", "--become")
    _succeeded(ping, "ansible -m ping --become")
    for host in rendered.addresses:
        assert f"{host} | SUCCESS" in ping.output, ping.output
    # Root has no way in: everything privileged goes through become.
    as_root = ansible.adhoc("all", "-m", "ansible.builtin.ping", "-e", "ansible_user=root")
    assert as_root.returncode != 0, as_root.output
    for host in rendered.addresses:
        assert f"{host} | UNREACHABLE!" in as_root.output, as_root.output
    whoami = ansible.adhoc("all", "-m", "ansible.builtin.command", "-a", "whoami", "--become")
    _succeeded(whoami, "become whoami")
    plain = ansible.adhoc("all", "-m", "ansible.builtin.command", "-a", "whoami")
    _succeeded(plain, "whoami")
    for host in rendered.addresses:
        assert f"{host} | CHANGED | rc=0 >>\nroot" in whoami.output, whoami.output
        assert f"{host} | CHANGED | rc=0 >>\nadmin" in plain.output, plain.output
    assert rendered.gpus == dict.fromkeys(GPU_NODES, GPUS_PER_NODE)
    for host, node in cluster.nodes.items():
        listed = node.sh("ls /dev | grep '^nvidia' || true").stdout.split()
        want = [f"nvidia{n}" for n in range(rendered.gpus.get(host, 0))]
        if want:
            want.append("nvidiactl")
        assert sorted(listed) == sorted(want), f"{host}: {listed}"
    # No package of the Slurm stack is in the base: the playbook starts from bare nodes.
    for node in cluster.nodes.values():
        installed = node.sh("dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n'").stdout
        names = {line.split()[1] for line in installed.splitlines() if line.startswith("ii")}
        present = sorted(names & set(SLURM_STACK))
        assert present == [], f"{node.name} is not bare: {present}"
    # A reboot (the driver roll-out's) brings the node back, cgroups writable again.
    node = cluster.nodes[REBOOTED]
    reboot = ansible.adhoc(REBOOTED, "-m", "ansible.builtin.reboot", "--become")
    _succeeded(reboot, f"reboot {REBOOTED}")
    assert node.boots == 2
    assert node.sh("systemctl is-active testbed-cgroup-rw").stdout.strip() == "active"
    measured(
        f"\nbooted nodes ({len(cluster.nodes)}, {os.cpu_count()} cores): build "
        f"{cluster.timings['build']:.1f}s, boot {cluster.timings['boot']:.1f}s, "
        f"ping --become {ping.seconds:.1f}s, reboot {reboot.seconds:.1f}s"
    )


# --- the end-to-end test ------------------------------------------------------------------


def _active(node: BootedNode, unit: str) -> str:
    return node.sh(f"systemctl is-active {unit}", check=False).stdout.strip()


def _on_head(cluster: BootedCluster, command: str) -> str:
    return cluster.nodes[HEAD].sh(command).stdout


def _wait_for(what: str, probe: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f}s waiting for {what}")
        time.sleep(1)


def _node_states(cluster: BootedCluster) -> dict[str, tuple[str, str]]:
    """sinfo per node: (state, GRES)."""
    rows = _on_head(cluster, "sinfo -h -N -o '%N %t %G'").split("\n")
    return {r.split()[0]: (r.split()[1], r.split()[2]) for r in rows if r.strip()}


def _changes(result: PlaybookRun) -> list[str]:
    """The tasks and handlers that changed something, with the hosts they changed."""
    changes, header = [], ""
    for line in result.output.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            header = line.rstrip("* ")
        elif line.startswith("changed:"):
            changes.append(f"{header} {line.split(' =>')[0]}")
    return changes


def _task_headers(result: PlaybookRun) -> int:
    return sum(1 for line in result.output.splitlines() if line.startswith("TASK ["))


# The converge check's two tasks (roles/clustergen_state/tasks/check.yml): all that a
# run does on a node that already runs the release.
CHECK_TASKS = 2


def _assert_fast_path(result: PlaybookRun, current: set[str]) -> None:
    """The nodes in `current` ran only the converge check; when every node is current,
    every converge play matched no host."""
    for host in current:
        assert f"ok: [{host}] => (item=current)" in result.output, result.output
        assert result.recap[host]["ok"] == CHECK_TASKS, (host, result.recap, result.output)
        assert result.recap[host]["changed"] == 0, (host, result.recap)
        assert result.recap[host]["skipped"] == 0, (host, result.recap)
    if current == set(result.recap):
        headers = [line for line in result.output.splitlines() if line.startswith("TASK [")]
        assert len(headers) == CHECK_TASKS, headers
        assert all(h.startswith("TASK [clustergen_state : ") for h in headers), headers
        plays = result.output.count("\nPLAY [")
        skipped = result.output.count("skipping: no hosts matched")
        assert skipped == plays - 1, result.output


def _verdicts(result: PlaybookRun) -> dict[str, str]:
    """Each node's verdict, as the converge check's group_by task labels its first item."""
    task = result.output.split("TASK [clustergen_state : Put the node in the group", 1)[1]
    lines = task.split("\nTASK [", 1)[0].splitlines()
    items = [
        line.split("]", 1)[0].removeprefix("ok: [") + "]" + line.split("(item=", 1)[1]
        for line in lines
        if line.startswith("ok: [") and "(item=" in line
    ]
    return {
        host: label.removesuffix(")")
        for host, label in (item.split("]", 1) for item in items)
        if not label.startswith("clustergen_")
    }


def _assert_partial(result: PlaybookRun, family: str, roles: set[str]) -> None:
    """A release that changed only `family`'s rendered files: every node's verdict was
    partial (no node converged in full), the head node's named the family, and no task
    ran but those of `roles`."""
    verdicts = _verdicts(result)
    assert verdicts and all(v.startswith("partial") for v in verdicts.values()), verdicts
    assert verdicts[HEAD].startswith(f"partial {family}: "), verdicts
    ran = {
        line.removeprefix("TASK [").split(" : ")[0]
        for line in result.output.splitlines()
        if line.startswith("TASK [") and " : " in line
    }
    assert ran <= roles, (ran, result.output)


def _assert_services(cluster: BootedCluster) -> None:
    wanted = {HEAD: ("munge", "mariadb", "slurmdbd", "slurmctld")}
    wanted.update({name: ("munge", "slurmd") for name in GPU_NODES})
    inactive = {
        name: {unit: _active(cluster.nodes[name], unit) for unit in units}
        for name, units in wanted.items()
    }
    assert all(state == "active" for units in inactive.values() for state in units.values()), (
        inactive
    )


def _assert_one_munge_key_and_slurm_uid(cluster: BootedCluster) -> None:
    keys = {
        name: node.sh("sha256sum /etc/munge/munge.key").stdout.split()[0]
        for name, node in cluster.nodes.items()
    }
    assert set(keys.values()) == {hashlib.sha256(MUNGE_KEY).hexdigest()}, keys
    ids = {
        name: node.sh("id -u slurm; id -g slurm").stdout.split()
        for name, node in cluster.nodes.items()
    }
    assert len({tuple(v) for v in ids.values()}) == 1, f"slurm UID/GID differ: {ids}"
    # munge credentials made on one node decode on another: the key is really shared.
    credential = cluster.nodes["gpu1"].sh("munge -n").stdout
    decoded = cluster.nodes[HEAD].sh(f"echo '{credential.strip()}' | unmunge").stdout
    assert "STATUS:          Success (0)" in decoded, decoded


def _run_gpu_job(cluster: BootedCluster) -> str:
    """srun on both GPU nodes with all 8 GPUs; returns the job id."""
    script = "echo $(hostname) $CUDA_VISIBLE_DEVICES $SLURM_JOB_ID"
    # -c 1: the test nodes have 2 CPUs for their 8 GPUs, and the partition's
    # DefCpuPerGPU=1 (used only when a job names no CPU count) would ask for 8.
    out = _on_head(cluster, f"srun -N2 -c 1 --gres=gpu:{GPUS_PER_NODE} -t 5 bash -c '{script}'")
    lines = sorted(line.split() for line in out.splitlines() if line.strip())
    every_gpu = ",".join(str(n) for n in range(GPUS_PER_NODE))
    assert [line[:2] for line in lines] == [[name, every_gpu] for name in GPU_NODES], out
    return lines[0][2]


def _sacct_state(cluster: BootedCluster, job: str) -> str:
    return _on_head(cluster, f"sacct -n -X -P -j {job} -o State,NodeList").strip()


MEMLOCK_DROPIN = "/etc/systemd/system/slurmd.service.d/clustergen-memlock.conf"


def _locked_memory(limits: str) -> tuple[str, str]:
    """(soft, hard) of /proc/PID/limits' "Max locked memory" line, in bytes or unlimited."""
    (line,) = [line for line in limits.splitlines() if line.startswith("Max locked memory")]
    soft, hard = line.split()[3:5]
    return soft, hard


def _assert_jobs_lock_unlimited_memory(cluster: BootedCluster, compute: Sequence[str]) -> None:
    """RDMA needs unlimited locked memory in jobs: slurmd runs with LimitMEMLOCK=infinity
    (the slurm role's drop-in), and a job submitted from a shell with a low limit (a
    login node's 64 KiB) gets slurmd's, not the shell's (PropagateResourceLimitsExcept=
    MEMLOCK). Where root may not raise the hard limit (a machine without
    CAP_SYS_RESOURCE, as some CI containers are), systemd sets the closest it can: the
    node's hard limit; a real node has no such cap and slurmd runs unlimited."""
    expected_kib = []
    for name in compute:
        node = cluster.nodes[name]
        assert node.sh("systemctl show -P LimitMEMLOCK slurmd").stdout.strip() == "infinity"
        assert MEMLOCK_DROPIN in node.sh("systemctl show -P DropInPaths slurmd").stdout
        raisable = node.sh("ulimit -H -l unlimited 2>/dev/null", check=False).returncode == 0
        node_hard = _locked_memory(node.sh("cat /proc/1/limits").stdout)[1]
        allowed = "unlimited" if raisable else node_hard
        slurmd = node.sh("cat /proc/$(systemctl show -P MainPID slurmd)/limits").stdout
        assert _locked_memory(slurmd) == (allowed, allowed), (name, slurmd)
        expected_kib.append(allowed if allowed == "unlimited" else str(int(allowed) // 1024))
    nodes = ",".join(compute)
    out = _on_head(
        cluster,
        f"ulimit -S -l 64 && srun -N{len(compute)} -w {nodes} -c 1 -t 2 "
        "bash -c 'echo $(hostname) $(ulimit -S -l)'",
    )
    lines = sorted(line.strip() for line in out.splitlines() if line.strip())
    expected = sorted(f"{name} {kib}" for name, kib in zip(compute, expected_kib, strict=True))
    assert lines == expected, out
    assert all(kib != "64" for kib in expected_kib)


USER, USER_UID = "alice", 2001
ADOPTED = "gpu1"
SSH_OPTIONS = (
    "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
    "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
)  # fmt: skip


def _ssh(key: Path, user: str, address: str, command: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", *SSH_OPTIONS, "-i", str(key), f"{user}@{address}", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def _slurm_diagnostics(cluster: BootedCluster) -> str:
    """What Slurm says when a job does not start: node reasons, the queue, slurmd's logs."""
    parts = [
        cluster.nodes[HEAD]
        .sh(
            "sinfo -R; squeue -a; scontrol show nodes | grep -E 'NodeName|State|Reason'",
            check=False,
        )
        .stdout
    ]
    for name in GPU_NODES:
        log = cluster.nodes[name].sh("tail -n 60 /var/log/slurm/slurmd.log", check=False)
        parts.append(f"--- {name} slurmd.log\n{log.stdout}{log.stderr}")
    return "\n".join(parts)


def _users_kept_inside_their_jobs(
    cluster: BootedCluster, rendered: Rendered, tmp_path: Path
) -> float:
    """pam_slurm_adopt (slurm.isolation.ssh_adopt), proven with the real module: a user
    without a job on a compute node is refused by ssh; with a job there, the session is
    adopted into the job's extern step (its cgroup); the admin of ssh_admins gets in
    without a job. And job_container/tmpfs: a file a job writes to /tmp is gone from the
    node's own /tmp."""
    started = time.monotonic()
    key = tmp_path / "user_ed25519"
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)])
    public = (tmp_path / "user_ed25519.pub").read_text().strip()
    for node in cluster.nodes.values():
        node.sh(
            f"id {USER} >/dev/null 2>&1 || useradd -m -u {USER_UID} -s /bin/bash {USER}; "
            f"install -d -m 700 -o {USER} -g {USER} /home/{USER}/.ssh; "
            f"echo '{public}' > /home/{USER}/.ssh/authorized_keys; "
            f"chown {USER}: /home/{USER}/.ssh/authorized_keys; "
            f"chmod 600 /home/{USER}/.ssh/authorized_keys"
        )
    address = rendered.addresses[ADOPTED]
    node = cluster.nodes[ADOPTED]
    # The PAM stack the role left: the include after the account lines, no pam_systemd.
    stack = node.sh("cat /etc/pam.d/sshd").stdout
    assert "account    include      clustergen-slurm-adopt" in stack, stack
    assert "@include common-session-noninteractive" in stack, stack
    assert "pam_systemd" not in node.sh("cat /etc/pam.d/common-session-noninteractive").stdout

    refused = _ssh(key, USER, address, "cat /proc/self/cgroup")
    assert refused.returncode == 255, (refused.returncode, refused.stdout, refused.stderr)
    assert "/slurm" not in refused.stdout
    journal = node.sh("journalctl -q --no-pager | grep pam_slurm_adopt | tail -n 5 || true")
    assert "pam_slurm_adopt" in journal.stdout + refused.stderr, (journal.stdout, refused.stderr)

    job = _on_head(
        cluster,
        f'su - {USER} -c "sbatch --parsable -w {ADOPTED} -c 1 -t 5 -o /dev/null '
        f"--wrap 'touch /tmp/clustergen-job-file; sleep 300'\"",
    ).strip()
    _wait_for(
        f"job {job} running on {ADOPTED}",
        lambda: _on_head(cluster, f"squeue -h -j {job} -o %T").strip() == "RUNNING",
        seconds=120,
    )
    adopted = _ssh(key, USER, address, "cat /proc/self/cgroup; ls /tmp")
    assert adopted.returncode == 0, (adopted.stdout, adopted.stderr)
    assert f"/job_{job}/step_extern" in adopted.stdout, adopted.stdout
    # The session shares the job's /tmp; with job_container/tmpfs the node's own is another.
    assert "clustergen-job-file" in adopted.stdout.split(), adopted.stdout
    private_tmp = (rendered.out / "slurm" / "job_container.conf").exists()
    on_node = "clustergen-job-file" in node.sh("ls /tmp").stdout.split()
    assert on_node != private_tmp, (private_tmp, on_node)
    # Only root sees another user's job (PrivateData=jobs).
    assert _on_head(cluster, f"su - {ADMIN} -c 'squeue -h -o %i'").split() == []
    assert _on_head(cluster, f"su - {USER} -c 'squeue -h -o %i'").split() == [job]

    # The admin, with no job anywhere, gets in to the other GPU node, outside any job.
    admin = _ssh(
        cluster.private_key, ADMIN, rendered.addresses[GPU_NODES[1]], "cat /proc/self/cgroup"
    )
    assert admin.returncode == 0, (admin.stdout, admin.stderr)
    assert "job_" not in admin.stdout, admin.stdout
    _on_head(cluster, f"scancel {job}")
    _wait_for(
        f"job {job} to end",
        lambda: _on_head(cluster, f"squeue -h -j {job} -o %T 2>/dev/null || true").strip() == "",
    )
    after = _ssh(key, USER, address, "true")
    assert after.returncode == 255, (after.stdout, after.stderr)
    return time.monotonic() - started


# A stand-in for nccl-tests' all_reduce_perf (the acceptance tests' way: a script at the
# binary's path); it reports the rank and size PMIx gave it.
# Slurm's mpi/pmix plugin gives each task its rank and the step's PMIx namespace,
# slurm.pmix.<job>.<step> (src/plugins/mpi/pmix/pmixp_info.c, the nspace it sets); neither
# is set without the plugin.
PMIX_STAND_IN = '#!/bin/sh\necho "$(hostname) rank=${PMIX_RANK:-none} ns=${PMIX_NAMESPACE:-none}"\n'


def _assert_pmix_step_finds_nccl_tests(cluster: BootedCluster, rendered: Rendered) -> None:
    """slurm.mpi pmix: slurm.conf says MpiDefault=pmix, and a two-node step started as the
    acceptance jobs start all_reduce_perf (srun --mpi=pmix), and one with no --mpi (the
    MpiDefault), each get PMIx ranks 0 and 1 from Slurm's mpi/pmix plugin and Debian's
    libpmix, and find the binary at the GPU nodes' nccl_tests_dir, the directory the
    nccl_tests role installs to and the jobs read (nccl.acceptance.nccl_tests_dir)."""
    conf = (rendered.out / "slurm" / "slurm.conf").read_text()
    assert "\nMpiDefault=pmix\n" in conf, conf
    group_vars = yaml.safe_load((rendered.out / "inventory/group_vars/nvidia_gpu.yml").read_text())
    binary = f"{group_vars['nccl_tests_dir']}/all_reduce_perf"
    for name in GPU_NODES:
        node = cluster.nodes[name]
        node.sh(f"mkdir -p {Path(binary).parent} && printf %s '{PMIX_STAND_IN}' > {binary}")
        node.sh(f"chmod 755 {binary}")
    for mpi in ("--mpi=pmix", ""):
        out = _on_head(cluster, f"srun -N2 --ntasks-per-node=1 -c 1 -t 5 {mpi} {binary}")
        tasks = [
            re.fullmatch(r"(\S+) rank=(\d+) ns=(slurm\.pmix\.\d+\.\d+)", line)
            for line in out.splitlines()
        ]
        assert all(tasks), f"srun {mpi}: {out}"
        found = sorted((m[1], m[2], m[3]) for m in tasks if m is not None)
        assert [(name, rank) for name, rank, _ in found] == [
            (name, str(rank)) for rank, name in enumerate(GPU_NODES)
        ], f"srun {mpi}: {out}"
        assert len({ns for _, _, ns in found}) == 1, f"srun {mpi}: two namespaces: {out}"


def test_site_builds_a_working_slurm_cluster(
    rendered: Rendered,
    cluster: BootedCluster,
    tmp_path: Path,
    measured: Callable[[str], None],
) -> None:
    figures: dict[str, float] = dict(cluster.timings)
    vault, password = encrypt_vault(
        {
            "vault_munge_key": base64.b64encode(MUNGE_KEY).decode(),
            "vault_slurmdbd_storage_pass": STORAGE_PASS,
        },
        tmp_path,
    )
    connection = cluster.connection_inventory(tmp_path / "connection.yml")
    # As a site runs it: from the rendered tree, over SSH as admin; become is the
    # playbook's own (no -b here), secrets from the vault.
    ansible = Ansible(
        rendered.out,
        (rendered.out / "inventory", connection),
        limit="all",
        extra_args=("-e", f"@{vault}", "--vault-password-file", str(password)),
    )

    # 1. From bare nodes to a cluster, verbose: every module's arguments and result and
    #    every command line are in the output, yet no secret and no digest of one.
    first = ansible.playbook("site.yml", "-vvv")
    _succeeded(first, "first site.yml run on bare nodes")
    needles = secret_needles(
        {
            "vault_munge_key": base64.b64encode(MUNGE_KEY).decode(),
            "vault_slurmdbd_storage_pass": STORAGE_PASS,
        },
        {
            "/etc/slurm/slurmdbd.conf": (
                (rendered.out / "slurm" / "slurmdbd.conf").read_text()
                + f"StoragePass={STORAGE_PASS}\n"
            ).encode(),
            "/etc/munge/munge.key": MUNGE_KEY,
        },
    )
    assert not leaks(first.output, needles), "\n".join(leaks(first.output, needles))
    # The database tasks ran, as root over MariaDB's socket.
    assert "TASK [slurm : Create the accounting database's user" in first.output, first.output
    figures["first site.yml"] = first.seconds

    # 2. Daemons up, one key, one slurm UID, both GPU nodes idle with their GPUs.
    _assert_services(cluster)
    _assert_one_munge_key_and_slurm_uid(cluster)
    gres = f"gpu:h100:{GPUS_PER_NODE}"
    _wait_for(
        "both GPU nodes idle with their GRES",
        lambda: all(_node_states(cluster).get(n, ("", ""))[0] == "idle" for n in GPU_NODES),
    )
    states = _node_states(cluster)
    assert {n: states[n] for n in GPU_NODES} == {n: ("idle", gres) for n in GPU_NODES}, states

    # 3. A job on both nodes sees all 8 GPUs on each; accounting records it.
    job = _run_gpu_job(cluster)
    _wait_for(
        f"sacct to record job {job}", lambda: _sacct_state(cluster, job).startswith("COMPLETED")
    )
    assert _sacct_state(cluster, job) == "COMPLETED|gpu[1-2]"
    try:
        _assert_jobs_lock_unlimited_memory(cluster, GPU_NODES)
        # 3b. Users are kept inside their jobs: ssh without a job is refused, ssh with one
        #     lands in its cgroup, the admins get in, and a job's /tmp is its own.
        figures["ssh adoption"] = _users_kept_inside_their_jobs(cluster, rendered, tmp_path)
        _assert_pmix_step_finds_nccl_tests(cluster, rendered)
    except (AssertionError, RuntimeError) as failure:
        raise AssertionError(f"{failure}\n{_slurm_diagnostics(cluster)}") from None

    _node_exporters_answer(cluster, rendered)

    # 4. A second run changes nothing; the no-op run against a ping round.
    second = ansible.playbook("site.yml")
    _succeeded(second, "second site.yml run")
    assert set(second.changed()) == set(cluster.nodes)
    assert not any(second.changed().values()), (
        f"second run changed: {second.changed()}\n{second.output}"
    )
    ping = ansible.adhoc("all", "-m", "ansible.builtin.ping")
    _succeeded(ping, "ansible -m ping")
    # Every node was current: only the check ran, every converge play was empty.
    _assert_fast_path(second, set(cluster.nodes))
    figures["no-op site.yml"] = second.seconds
    figures["ping round"] = ping.seconds
    figures["no-op/ping"] = second.seconds / ping.seconds
    figures["no-op task headers"] = _task_headers(second)
    measured(
        f"\nno-op site.yml {second.seconds:.1f}s, ping round {ping.seconds:.1f}s "
        f"({second.seconds / ping.seconds:.1f}x), {_task_headers(second)} task headers"
    )

    # 5. verify.yml passes on the converged cluster.
    _succeeded(ansible.playbook("verify.yml"), "verify.yml on the converged cluster")
    figures["audit round"] = _audit_finds_only_a_changed_package(
        cluster, ansible, rendered, tmp_path
    )

    # 6. A slurm.conf change that a reconfigure applies restarts nothing; one that
    #    needs slurmd restarted restarts it.
    edits = SpecEdits(rendered, tmp_path)
    figures["reconfigure run"] = _reconfigure_without_restart(cluster, ansible, edits)
    figures["restart run"] = _restart_where_needed(cluster, ansible, edits)

    # 7. (A drifted package and a removed hold, caught by verify.yml and put back by
    #    site.yml: tests/test_ansible_e2e.py, on chroot nodes, where the drift round costs
    #    a fraction of a booted round.)

    # 8. The driver rolls through the GPU nodes one at a time on the live cluster.
    figures["rolling driver run"] = _rolling_driver_upgrade(cluster, ansible, edits)
    _succeeded(ansible.playbook("verify.yml"), "verify.yml after the driver upgrade")

    # 9. Host network: the fabric stand-ins carry the spec's address, MTU and route, the
    #    management interface is left alone, a bad interface name is refused, and one
    #    NIC carrying both networks keeps the management address.
    figures["bad interface run"] = _host_network_applied_and_guarded(cluster, ansible, edits)
    figures.update(_slurm_driven_reboots(cluster, ansible, edits))  # 10. #27, slurm.reboot

    measured("\nbooted e2e (" + ", ".join(f"{k} {v:.1f}" for k, v in figures.items()) + ")")


# --- Slurm-driven reboots (slurm.reboot mode slurm, #27) ------------------------------

SLURM_REBOOT = (
    "slurm:\n  controllers: [head]\n",
    "slurm:\n  reboot: {mode: slurm, max_per_partition: 1, timeout_s: 600}\n"
    "  controllers: [head]\n",
)
DRIVER_BACK = (f"nvidia_driver: {NEWER_DRIVER}", f"nvidia_driver: {DRIVER}")
ROLLOUT = "/etc/slurm/clustergen-reboot-rollout.sh"


def _slurm_driven_reboots(
    cluster: BootedCluster, ansible: Ansible, edits: SpecEdits
) -> dict[str, float]:
    """Step 8 left the nodes on NEWER_DRIVER; the spec moves back to DRIVER in mode slurm.
    site.yml drains and reboots nothing; the rendered roll-out script hands `plan`'s
    batches to `scontrol reboot ASAP nextstate=RESUME`: the idle node reboots first, the
    busy one once its job has ended, never both out (bound 1), and each comes back idle
    with DRIVER from its boot step, booted once more."""
    planned = edits.path.with_name("slurm-reboot-plan.yaml")
    planned.write_text(_edited(_edited(edits.text, *DRIVER_BACK), *SLURM_REBOOT))
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clustergen",
            "plan",
            str(planned),
            "-o",
            str(edits.rendered.out),
            "--format",
            "json",
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        document = json.loads(proc.communicate()[0])
    rollout = document["driver_rollout"]
    assert rollout["mode"] == "slurm" and rollout["batches"] == [["gpu1"], ["gpu2"]], rollout
    edits.apply(*DRIVER_BACK)
    edits.apply(*SLURM_REBOOT)
    boots = {name: cluster.nodes[name].boots for name in GPU_NODES}
    first, busy = GPU_NODES
    job = _job_held_on(cluster, busy)

    # site.yml puts the lists in place and leaves the running driver alone.
    with _StateRecorder(cluster, lambda samples: None) as recorder:
        converge = ansible.playbook("site.yml")
    _succeeded(converge, "site.yml in mode slurm with the driver change")
    for name in GPU_NODES:
        assert cluster.nodes[name].boots == boots[name], f"site.yml rebooted {name}"
        assert set(recorder.sequence(name)) <= {"idle", "alloc"}, recorder.sequence(name)
        assert _smi(cluster, name) == [NEWER_DRIVER] * GPUS_PER_NODE, name
        listed = cluster.nodes[name].sh("cat /etc/clustergen/boot-packages/nvidia_gpu.list")
        assert f" {DRIVER}-" in listed.stdout, listed.stdout

    released: list[int] = []

    def release_once_handed_over(samples: list[dict[str, str]]) -> None:
        # The busy node is draining for its reboot (its job still runs): end the job.
        if not released and samples[-1].get(busy, "").startswith("dr"):
            cluster.nodes[busy].sh(f"touch {RELEASE_FILE}", check=False)
            released.append(len(samples))

    start = time.monotonic()
    with _StateRecorder(cluster, release_once_handed_over) as recorder:
        roll = cluster.nodes[HEAD].sh(
            f"CLUSTERGEN_ROLLOUT_POLL_S=2 {ROLLOUT} "
            + " ".join(",".join(batch) for batch in rollout["batches"]),
            check=False,
        )
    seconds = time.monotonic() - start
    assert roll.returncode == 0, roll.stdout + roll.stderr
    assert released, f"{busy} was never handed to Slurm: {recorder.samples}"
    _wait_for(f"sacct to record job {job}", lambda: _sacct_state(cluster, job) != "")
    assert _sacct_state(cluster, job) == f"COMPLETED|{busy}"
    for name in GPU_NODES:
        assert cluster.nodes[name].boots == boots[name] + 1, f"{name}: {recorder.sequence(name)}"
        assert _smi(cluster, name) == [DRIVER] * GPUS_PER_NODE, name
    states = _node_states(cluster)
    assert {n: states[n][0] for n in GPU_NODES} == dict.fromkeys(GPU_NODES, "idle"), states
    # Bound 1: never both out; the idle node went out while the job ran on the other,
    # and the busy node rebooted only after its job had ended.
    samples = [sample for sample in recorder.samples if sample]  # {}: sinfo failed
    both = [s for s in samples if all(s.get(n) not in ("idle", "alloc") for n in GPU_NODES)]
    assert not both, both
    first_out = next(i for i, s in enumerate(samples) if s.get(first, "idle") != "idle")
    assert samples[first_out].get(busy) == "alloc", recorder.sequence(busy)
    ended = _on_head(cluster, f"sacct -n -X -P -j {job} -o End").strip()
    booted = re.search(r"BootTime=(\S+)", _on_head(cluster, f"scontrol show node {busy}"))
    assert booted and ended <= booted[1], (ended, booted and booted[1])
    return {"slurm roll-out site.yml": converge.seconds, "slurm roll-out": seconds}


def _smi(cluster: BootedCluster, name: str) -> list[str]:
    command = "nvidia-smi --query-gpu=driver_version --format=csv,noheader"
    return cluster.nodes[name].sh(command).stdout.split()


# --- clustergen audit (collect.yml) ---------------------------------------------------

AUDIT_NODE, AUDIT_PACKAGE = "gpu2", "libnccl2"


def _collect_and_audit(
    ansible: Ansible, rendered: Rendered, facts: Path
) -> tuple[int, list[dict[str, object]]]:
    collected = ansible.playbook("collect.yml", "-e", f"collect_facts_dir={facts}")
    _succeeded(collected, "collect.yml")
    spec = facts.parent / "audit-spec.yaml"
    spec.write_text(rendered.spec_text)
    command = ["audit", str(spec), "-o", str(rendered.out), "--format", "json", str(facts)]
    audit = subprocess.run(
        [sys.executable, "-m", "clustergen", *command],
        capture_output=True,
        text=True,
    )
    assert audit.returncode in (0, 1), audit.stdout + audit.stderr
    return audit.returncode, json.loads(audit.stdout)


def _audit_finds_only_a_changed_package(
    cluster: BootedCluster, ansible: Ansible, rendered: Rendered, tmp_path: Path
) -> float:
    """collect.yml on the converged nodes, then `clustergen audit`: nothing found (slurmd -C,
    the stand-in nvidia-smi's GPUs and driver, package lists, addresses). One node's pinned
    package changed by hand: audit names that node and package, nothing else. The pin and
    its hold are put back and audit is clean again."""
    started = time.monotonic()
    facts = tmp_path / "audit-facts"
    code, findings = _collect_and_audit(ansible, rendered, facts)
    assert (code, findings) == (0, []), findings
    assert sorted(p.name for p in facts.iterdir()) == [f"{n}.txt" for n in sorted(cluster.nodes)]
    smi = (facts / f"{AUDIT_NODE}.txt").read_text()
    assert "#### clustergen-section nvidia-smi-q-x rc=0" in smi, smi[:2000]
    assert "#### clustergen-section slurmd-C rc=0" in smi, smi[:2000]
    lock = yaml.safe_load((rendered.out / "versions.lock").read_text())
    pin = lock["groups"]["nvidia_gpu"]["packages"][AUDIT_PACKAGE]
    install = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-change-held-packages"
    node = cluster.nodes[AUDIT_NODE]
    node.sh(f"{install} {AUDIT_PACKAGE}={newer_version(pin)}")
    code, findings = _collect_and_audit(ansible, rendered, facts)
    assert code == 1 and [(f["code"], f["path"]) for f in findings] == [
        ("audit.package-version", f"{AUDIT_NODE}.dpkg-query")
    ], findings
    assert f"{AUDIT_PACKAGE} {newer_version(pin)} is installed" in findings[0]["message"]
    assert f"versions.lock pins {pin}" in findings[0]["message"], findings
    node.sh(f"{install} --allow-downgrades {AUDIT_PACKAGE}={pin} && apt-mark hold {AUDIT_PACKAGE}")
    assert _collect_and_audit(ansible, rendered, facts) == (0, [])
    return time.monotonic() - started


# --- host network (roles/host_network) ------------------------------------------------

FABRIC_ADDRESSES = {"gpu1": "10.213.20.11/24", "gpu2": "10.213.20.12/24"}
FABRIC_ROUTE = "10.213.21.0/24 via 10.213.20.1 dev fab0"
GOOD_INTERFACES = "interfaces: {management: host0, fabric: fab0}"
BAD_INTERFACES = "interfaces: {management: host0, fabric: fab9}"
# One NIC for both networks, as on a small RoCE cluster.
SHARED_INTERFACES = "interfaces: {management: host0, fabric: host0}"


def _assert_fabric_as_the_spec_says(cluster: BootedCluster) -> None:
    for name, address in FABRIC_ADDRESSES.items():
        node = cluster.nodes[name]
        assert f"inet {address} " in node.sh("ip -o -4 address show dev fab0").stdout
        assert node.sh("cat /sys/class/net/fab0/mtu").stdout.strip() == "9000"
        assert FABRIC_ROUTE in node.sh("ip -4 route show 10.213.21.0/24").stdout
        # host0 (management) keeps the file the node was installed with, and no
        # clustergen file names it.
        files = node.sh("grep -l host0 /etc/systemd/network/*.network").stdout.split()
        assert files == ["/etc/systemd/network/10-host0.network"], files
    head = cluster.nodes[HEAD].sh("ls /etc/systemd/network/").stdout.split()
    assert not [f for f in head if "clustergen" in f], head


def _host_network_applied_and_guarded(
    cluster: BootedCluster, ansible: Ansible, edits: SpecEdits
) -> float:
    """The converged fabric stand-ins (fab0) as the spec says; a spec edit naming an
    interface the nodes lack (fab9) is refused with the nodes' network as it was and
    SSH over the management address answering; one NIC (host0) carrying management and
    the fabric keeps both; the fabric back on fab0 leaves host0 to the node's own file."""
    _assert_fabric_as_the_spec_says(cluster)
    edits.apply(GOOD_INTERFACES, BAD_INTERFACES)
    bad = ansible.playbook("site.yml")
    assert bad.returncode != 0, bad.output[-4000:]
    assert "has no interface fab9" in bad.output, bad.output[-4000:]
    for name in FABRIC_ADDRESSES:
        address = cluster.nodes[name].address
        answer = _ssh(cluster.private_key, ADMIN, address, "true")
        assert answer.returncode == 0, (name, answer.stderr)
        listing = cluster.nodes[name].sh("ls /etc/systemd/network/").stdout
        assert "fab9" not in listing, listing
    _assert_fabric_as_the_spec_says(cluster)
    edits.apply(BAD_INTERFACES, SHARED_INTERFACES)
    _succeeded(ansible.playbook("site.yml"), "site.yml with host0 carrying both networks")
    _assert_one_nic_carries_both(cluster)
    edits.apply(SHARED_INTERFACES, GOOD_INTERFACES)
    _succeeded(ansible.playbook("site.yml"), "site.yml with the fabric on fab0 again")
    _assert_fabric_as_the_spec_says(cluster)
    for name, address in FABRIC_ADDRESSES.items():
        shown = cluster.nodes[name].sh("ip -o -4 address show dev host0").stdout
        assert f"inet {address} " not in shown, (name, shown)
    return bad.seconds


def _assert_one_nic_carries_both(cluster: BootedCluster) -> None:
    """host0 holds the management address (which the spec leaves to the node's own file)
    beside the fabric's, in clustergen's one file for it, at the fabric's MTU; the node
    still answers SSH there; fab0's file, which the render no longer names, is gone."""
    for name, address in FABRIC_ADDRESSES.items():
        node = cluster.nodes[name]
        shown = node.sh("ip -o -4 address show dev host0").stdout
        assert f"inet {address} " in shown and f"inet {node.address}/" in shown, shown
        assert node.sh("cat /sys/class/net/host0/mtu").stdout.strip() == "9000"
        assert "dev host0" in node.sh("ip -4 route show 10.213.21.0/24").stdout
        listing = node.sh("ls /etc/systemd/network/").stdout.split()
        assert "05-clustergen-host0.network" in listing, listing  # before 10-host0
        assert "60-clustergen-fab0.network" not in listing, listing
        answer = _ssh(cluster.private_key, ADMIN, node.address, "true")
        assert answer.returncode == 0, (name, answer.stderr)


def _http_get(node: BootedNode, address: str, path: str) -> subprocess.CompletedProcess[str]:
    """GET http://address/path from `node` with bash's /dev/tcp (the nodes have no curl)."""
    host, port = address.rsplit(":", 1)
    request = f"GET {path} HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n"
    script = f"exec 3<>/dev/tcp/{host}/{port} && printf '{request}' >&3 && cat <&3"
    return node.sh(f'timeout 10 bash -c "{script}"', check=False)


def _node_exporters_answer(cluster: BootedCluster, rendered: Rendered) -> None:
    """monitoring.node_exporter: every node's node_exporter answers /metrics from the head
    node on the address and port the rendered targets file lists (the node's management
    address, the spec's listen default), with the node's own metrics, and on that address
    only: nothing answers on the port at the node's loopback."""
    text = (rendered.out / "monitoring" / "prometheus-targets.yml").read_text()
    targets = {
        group["labels"]["node"]: group["targets"][0]
        for group in yaml.safe_load(text)
        if group["labels"]["exporter"] == "node_exporter"
    }
    assert set(targets) == set(cluster.nodes), targets
    for name, address in sorted(targets.items()):
        assert address == f"{rendered.addresses[name]}:9100", (name, address)
        answer = _http_get(cluster.nodes[HEAD], address, "/metrics")
        assert answer.stdout.startswith("HTTP/1.0 200"), (name, answer.stdout[:500], answer.stderr)
        assert f'nodename="{name}"' in answer.stdout, (name, answer.stdout[-2000:])
        local = _http_get(cluster.nodes[name], "127.0.0.1:9100", "/metrics")
        assert local.returncode != 0, f"{name}: node_exporter answers on loopback too"


def _main_pids(cluster: BootedCluster) -> dict[tuple[str, str], str]:
    units = [(HEAD, "slurmctld"), (HEAD, "slurmdbd")] + [(n, "slurmd") for n in GPU_NODES]
    return {
        (name, unit): cluster.nodes[name].sh(f"systemctl show -P MainPID {unit}").stdout.strip()
        for name, unit in units
    }


def _reconfigure_without_restart(
    cluster: BootedCluster, ansible: Ansible, edits: SpecEdits
) -> float:
    before = _main_pids(cluster)
    edits.apply(*MAX_TIME_CHANGE)
    result = ansible.playbook("site.yml")
    _succeeded(result, "site.yml after a MaxTime change")
    assert "RUNNING HANDLER [slurm : Reconfigure" in result.output, result.output
    # slurm.conf alone changed: the nodes whose copy differs ran the Slurm plays only.
    _assert_partial(
        result,
        "slurm",
        {
            "clustergen_state",
            "munge",
            "slurm",
            "rendered_files",
            "pinned_packages",
            "present_packages",
            "slurm_accounting",
        },
    )
    partition = _on_head(cluster, "scontrol show partition gpu")
    assert "MaxTime=2-00:00:00" in partition, partition
    assert _main_pids(cluster) == before, (
        f"a reconfigure must not restart any daemon; changes: {_changes(result)}"
    )
    return result.seconds


def _planned(edits: SpecEdits, text: str) -> dict[str, Any]:
    """`clustergen plan --format json` of the proposed spec against the tree the nodes run
    on, as the pull request's review reads it before anything is applied (a file of the
    spec's name in a folder of its own: plan compares by that name)."""
    proposed = edits.path.parent / "proposed" / edits.path.name
    proposed.parent.mkdir(parents=True, exist_ok=True)
    proposed.write_text(text)
    answer = subprocess.run(
        [sys.executable, "-m", "clustergen", "plan", str(proposed), "-o", str(edits.rendered.out),
         "--format", "json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert answer.returncode == 4, (answer.returncode, answer.stdout, answer.stderr)
    document: dict[str, Any] = json.loads(answer.stdout)
    return document


# Package installs as the output names them: "TASK [pinned_packages : Install the pinned
# versions with apt for <concern>]", then "changed: [<node>]".
_INSTALL_TASK = re.compile(
    r"^TASK \[pinned_packages : Install the pinned versions with apt for (\w+)\]"
)


def _installed_by_run(result: PlaybookRun) -> dict[str, set[str]]:
    """Concern -> the nodes where the run installed a package of it."""
    installed: dict[str, set[str]] = {}
    concern = None
    for line in result.output.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            found = _INSTALL_TASK.match(line)
            concern = found[1] if found else None
        elif concern is not None and line.startswith("changed: ["):
            installed.setdefault(concern, set()).add(line.removeprefix("changed: [").split("]")[0])
    return installed


def _restart_where_needed(cluster: BootedCluster, ansible: Ansible, edits: SpecEdits) -> float:
    """New GPU boards and a newer NCCL in one pull request: plan names a restart of
    slurmctld and both slurmds and an install of libnccl2 on both GPU nodes, with the
    versions; site.yml then restarts exactly those daemons and installs exactly that
    package on exactly those nodes, no more and no less."""
    before = _main_pids(cluster)
    pin = edits.rendered.pins[0]["libnccl2"]
    nccl = (NCCL_LINE, f'{NCCL_LINE}  packages: {{libnccl2: "{newer_version(pin)}"}}\n')
    plan = _planned(edits, _edited(_edited(edits.text, *GPU_MODEL_CHANGE), *nccl))
    steps = plan["steps"]
    assert not plan["destructive"], plan
    restarts = {(s["service"], n) for s in steps if s["action"] == "restart" for n in s["nodes"]}
    installs = {s["service"]: set(s["nodes"]) for s in steps if s["action"] == "install"}
    assert installs == {"nccl": set(GPU_NODES)}, steps
    (install,) = [s for s in steps if s["action"] == "install"]
    assert f"libnccl2 {pin} -> {newer_version(pin)}" in install["reasons"], install
    edits.apply(*GPU_MODEL_CHANGE)
    edits.apply(*nccl)
    result = ansible.playbook("site.yml")
    _succeeded(result, "site.yml after new GPU boards and a newer NCCL")
    # slurmd reads gres.conf only when it starts; and on 22.05 `scontrol reconfigure`
    # keeps a node's old GRES (tried on these nodes: sinfo kept gpu:h100:8 until
    # slurmctld restarted). slurmdbd has no reason to restart.
    after = _main_pids(cluster)
    restarted = sorted(key for key in before if after[key] != before[key])
    assert restarted == sorted([(HEAD, "slurmctld")] + [(n, "slurmd") for n in GPU_NODES]), (
        before,
        after,
    )
    # What plan said is what ran: the same daemons restarted, the same package installed
    # on the same nodes, and no other package installed anywhere.
    assert {(unit, name) for name, unit in restarted} == restarts, (restarts, restarted)
    assert _installed_by_run(result) == installs, _changes(result)
    for name in GPU_NODES:
        version = cluster.nodes[name].sh("dpkg-query -W -f '${Version}' libnccl2").stdout
        assert version == newer_version(pin), (name, version)
    _wait_for(
        f"both GPU nodes idle with {NEW_GRES}",
        lambda: all(_node_states(cluster).get(n) == ("idle", NEW_GRES) for n in GPU_NODES),
    )
    return result.seconds


class _StateRecorder:
    """sinfo every second while the roll-out runs: what an admin would watch."""

    def __init__(
        self, cluster: BootedCluster, on_sample: Callable[[list[dict[str, str]]], None]
    ) -> None:
        self.cluster = cluster
        self.on_sample = on_sample
        self.samples: list[dict[str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._record, daemon=True)

    def _record(self) -> None:
        while not self._stop.is_set():
            try:
                states = _node_states(self.cluster)
            except RuntimeError:
                states = {}
            self.samples.append({name: state for name, (state, _) in states.items()})
            self.on_sample(self.samples)
            self._stop.wait(1)

    def __enter__(self) -> _StateRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sequence(self, node: str) -> list[str]:
        """The node's states in order, repeats collapsed."""
        states: list[str] = []
        for sample in self.samples:
            state = sample.get(node)
            if state and (not states or states[-1] != state):
                states.append(state)
        return states


def _job_held_on(cluster: BootedCluster, busy: str) -> str:
    """A job that holds node `busy` until the test touches RELEASE_FILE there; running."""
    cluster.nodes[busy].sh(f"rm -f {RELEASE_FILE}")
    wait = f"for i in $(seq {JOB_SECONDS}); do [ -e {RELEASE_FILE} ] && exit 0; sleep 1; done"
    job = _on_head(
        cluster, f"sbatch --parsable --exclusive -w {busy} -o /dev/null --wrap '{wait}'"
    ).strip()
    _wait_for(f"job {job} running on {busy}", lambda: _node_states(cluster)[busy][0] == "alloc")
    return job


def _rolling_driver_upgrade(cluster: BootedCluster, ansible: Ansible, edits: SpecEdits) -> float:
    """The spec moves to a newer driver; site.yml drains, upgrades, reboots and resumes
    one GPU node at a time while a job runs on the other, and the job completes."""
    edits.apply(*DRIVER_UPGRADE)
    boots = {name: cluster.nodes[name].boots for name in GPU_NODES}
    busy, first = GPU_NODES[1], GPU_NODES[0]
    job = _job_held_on(cluster, busy)

    released: list[int] = []

    def release_when_first_is_back(samples: list[dict[str, str]]) -> None:
        states = [sample.get(first, "") for sample in samples]
        drained = [i for i, state in enumerate(states) if state.startswith("dr")]
        if not released and drained and states[-1] == "idle":
            cluster.nodes[busy].sh(f"touch {RELEASE_FILE}")
            released.append(len(samples))

    with _StateRecorder(cluster, release_when_first_is_back) as recorder:
        result = ansible.playbook("site.yml")
    _succeeded(result, "site.yml with the newer driver")
    assert released, f"{first} never came back idle while the job ran: {recorder.samples}"
    assert result.output.count(f"PLAY [{ROLLOUT_PLAY}]") == len(GPU_NODES), result.output
    for name in GPU_NODES:
        sequence = recorder.sequence(name)
        drained = [i for i, state in enumerate(sequence) if state.startswith("dr")]
        assert drained and "idle" in sequence[drained[-1] :], f"{name}: {sequence}"
        assert cluster.nodes[name].boots == boots[name] + 1, f"{name} was not rebooted"
        smi = (
            cluster.nodes[name]
            .sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader")
            .stdout.split()
        )
        assert smi == [NEWER_DRIVER] * GPUS_PER_NODE, f"{name}: {smi}"
    # One node at a time: never both GPU nodes out of service in one sample.
    both_out = [
        sample
        for sample in recorder.samples
        if all(sample.get(n, "").startswith("dr") for n in GPU_NODES)
    ]
    assert not both_out, both_out
    # The node that was upgraded first went out while the job still ran on the other.
    first_out = next(
        i for i, sample in enumerate(recorder.samples) if sample.get(first, "").startswith("dr")
    )
    assert recorder.samples[first_out].get(busy) == "alloc", (
        f"{first}: {recorder.sequence(first)}; {busy}: {recorder.sequence(busy)}"
    )
    _wait_for(f"sacct to record job {job}", lambda: _sacct_state(cluster, job) != "")
    assert _sacct_state(cluster, job) == f"COMPLETED|{busy}"
    states = _node_states(cluster)
    assert {n: states[n][0] for n in GPU_NODES} == dict.fromkeys(GPU_NODES, "idle"), states
    return result.seconds
