"""site.yml on booted Debian nodes over SSH with become, as a site runs it.

Three nodes of tests/data/booted-3node.yaml (head: slurmctld and slurmdbd; gpu1, gpu2:
8 fake GPUs each) are booted with systemd-nspawn on a bridge the test creates
(tests/support/booted.py). Ansible reaches them only over SSH as the admin user, with
become; nothing of the rendered inventory is overridden but how to connect.
"""

from __future__ import annotations

import ipaddress
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from clustergen.cli import main

from support.ansible_testbed import Ansible, PlaybookRun, run
from support.booted import (
    BootedCluster,
    NodePlan,
    booted_cluster,
    local_repository,
    missing_prerequisites,
    node_base,
    refuse_outside,
)
from support.ci import skip_or_fail, tool
from support.paths import DATA

pytestmark = pytest.mark.daemons

SPEC = DATA / "booted-3node.yaml"
REBOOTED = "gpu2"
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
    pins: dict[str, str]


def _render(tmp_path: Path) -> Rendered:
    out = tmp_path / "out"
    assert main(["render", str(SPEC), "-o", str(out)]) == 0
    listing = json.loads(
        run([str(tool("ansible-inventory")), "-i", str(out / "inventory"), "--list"]).stdout
    )
    hostvars = listing["_meta"]["hostvars"]
    addresses = {host: str(hostvars[host]["ansible_host"]) for host in sorted(hostvars)}
    spec = yaml.safe_load(SPEC.read_text())
    management = spec["network"]["management"]
    # Each node's fake GPUs: its hardware profile's count (group hw_<profile>).
    gpus = {
        host: profile["gpu"]["count"]
        for name, profile in spec["hardware"].items()
        if "gpu" in profile
        for host in listing.get(f"hw_{name}", {}).get("hosts", [])
    }
    lock = yaml.safe_load((out / "versions.lock").read_text())
    pins = {n: v for group in lock["groups"].values() for n, v in group["packages"].items()}
    return Rendered(
        out,
        addresses,
        gpus,
        ipaddress.IPv4Network(management["cidr"]),
        ipaddress.IPv4Address(management["gateway"]),
        pins,
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _render(tmp_path_factory.mktemp("render"))


@pytest.fixture(scope="module")
def cluster(
    rendered: Rendered, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BootedCluster]:
    _require()
    work = tmp_path_factory.mktemp("booted")
    started = time.monotonic()
    base = node_base(work)
    repo = local_repository(rendered.pins, base, work)
    build_seconds = time.monotonic() - started
    # Checked before any node exists: the test talks to no address it did not create.
    refuse_outside(rendered.addresses, rendered.subnet)
    plans = [
        NodePlan(host, address, rendered.gpus.get(host, 0))
        for host, address in rendered.addresses.items()
    ]
    with booted_cluster(plans, rendered.subnet, rendered.gateway, base, repo, work) as booted:
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


def test_nodes_answer_over_ssh_with_become(
    rendered: Rendered, cluster: BootedCluster, ansible: Ansible
) -> None:
    """The smoke test: every node answers Ansible as admin, become gives root, and the
    GPU nodes see their fake devices."""
    assert set(cluster.nodes) == set(rendered.addresses)
    ping = ansible.adhoc("all", "-m", "ansible.builtin.ping", "--become")
    _succeeded(ping, "ansible -m ping --become")
    for host in rendered.addresses:
        assert f"{host} | SUCCESS" in ping.output, ping.output
    whoami = ansible.adhoc("all", "-m", "ansible.builtin.command", "-a", "whoami", "--become")
    _succeeded(whoami, "become whoami")
    plain = ansible.adhoc("all", "-m", "ansible.builtin.command", "-a", "whoami")
    _succeeded(plain, "whoami")
    for host in rendered.addresses:
        assert f"{host} | CHANGED | rc=0 >>\nroot" in whoami.output, whoami.output
        assert f"{host} | CHANGED | rc=0 >>\nadmin" in plain.output, plain.output
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
    print(
        f"\nbooted nodes ({len(cluster.nodes)}, {os.cpu_count()} cores): build "
        f"{cluster.timings['build']:.1f}s, boot {cluster.timings['boot']:.1f}s, "
        f"ping --become {ping.seconds:.1f}s, reboot {reboot.seconds:.1f}s"
    )
