"""firewalld on EL: the slurm role opens, on each node, the ports the rendered files give
the Slurm processes that run there, read by Ansible from those files.

The port list is computed by the role's own tasks (tasks/settings.yml and
vars/main.yml) over a rendered Rocky 9 tree, run by ansible-playbook on this machine
for every Slurm host of its inventory; then the whole site.yml of that tree passes
--syntax-check.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from clustergen.cli import main

from support.ansible_testbed import READ_SLURM_SETTINGS
from support.ci import require, tool
from support.os_matrix import on_os
from support.paths import EXAMPLES

# Ports moved off Slurm's defaults, so the test can tell the rendered files from a default.
SLURMCTLD_PORT = "6917"
SLURMD_PORT = "6918"
DBD_PORT = "6920"
SRUN_PORTS = "60001-60100"

PORTS_PLAYBOOK = (
    """\
- name: Print each Slurm node's firewall ports
  hosts: slurm
  connection: local
  gather_facts: false
  tasks:
"""
    + READ_SLURM_SETTINGS
    + """\
    - name: Print the ports
      ansible.builtin.debug:
        var: slurm_firewall_ports
    - name: Print the rich rules
      ansible.builtin.debug:
        var: slurm_firewall_rich_rules
"""
)


def _el_tree(tmp_path: Path, firewall_sources: bool = True) -> Path:
    spec: dict[str, Any] = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    spec["slurm"]["isolation"] = {"firewall_sources": firewall_sources}
    tmp_path.mkdir(exist_ok=True)
    on_os(spec["software"], "rocky-9")
    spec["slurm"]["accounting"]["port"] = int(DBD_PORT)
    spec["slurm"]["options"].update(
        # Slurm reads keys in any case, and slurm.options keeps the case it is given.
        SlurmctldPort=int(SLURMCTLD_PORT),
        slurmdport=int(SLURMD_PORT),
        SrunPortRange=SRUN_PORTS,
    )
    path = tmp_path / "el.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = tmp_path / "out"
    assert main(["render", str(path), "-o", str(out)]) == 0
    return out


def _ansible_env() -> dict[str, str]:
    playbook = tool("ansible-playbook")
    assert playbook is not None
    return {
        **os.environ,
        "PATH": f"{Path(playbook).parent}:{os.environ.get('PATH', '')}",
        "ANSIBLE_STDOUT_CALLBACK": "json",
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "NO_COLOR": "1",
    }


def test_each_el_node_opens_the_ports_of_its_slurm_processes(tmp_path: Path) -> None:
    require("ansible-playbook")
    out = _el_tree(tmp_path)
    slurm_conf = (out / "slurm/slurm.conf").read_text()
    assert f"SlurmctldPort={SLURMCTLD_PORT}\n" in slurm_conf
    assert f"SrunPortRange={SRUN_PORTS}\n" in slurm_conf
    (out / "ports.yml").write_text(PORTS_PLAYBOOK)
    proc = subprocess.run(
        [str(tool("ansible-playbook")), "ports.yml"],
        cwd=out,
        env=_ansible_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    result = json.loads(proc.stdout)
    printed = result["plays"][0]["tasks"][-2]["hosts"]
    ports = {host: printed[host]["slurm_firewall_ports"] for host in printed}
    srun_only = [SRUN_PORTS]
    # slurm-head: controller, slurmdbd and login; gpu01-08: compute. The Lustre servers
    # run no Slurm and are not in the play.
    assert ports == {
        "slurm-head": [SLURMCTLD_PORT, DBD_PORT, *srun_only],
        **{f"gpu{n:02d}": [SLURMD_PORT, SRUN_PORTS] for n in range(1, 9)},
    }


def _rich_rules(out: Path) -> dict[str, list[str]]:
    (out / "ports.yml").write_text(PORTS_PLAYBOOK)
    proc = subprocess.run(
        [str(tool("ansible-playbook")), "ports.yml", "--limit", "slurm-head,gpu01"],
        cwd=out,
        env=_ansible_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    printed = json.loads(proc.stdout)["plays"][0]["tasks"][-1]["hosts"]
    return {host: printed[host]["slurm_firewall_rich_rules"] for host in printed}


def test_slurm_ports_are_open_only_to_the_clusters_networks(tmp_path: Path) -> None:
    """slurm.isolation.firewall_sources (default): each port of a node is open to the
    management and fabric networks of the spec only, by firewalld rich rules; the plain
    port rule (open to any source) is closed. Off: no rich rule, the ports open to all."""
    require("ansible-playbook")
    out = _el_tree(tmp_path / "limited")
    networks = ("10.0.1.0/24", "10.10.0.0/16")  # the example's management and fabric
    all_vars = yaml.safe_load((out / "inventory/group_vars/all.yml").read_text())
    assert all_vars["clustergen_slurm_firewall_sources"] == list(networks)

    def rule(network: str, port: str) -> str:
        return (
            f'rule family="ipv4" source address="{network}" port port="{port}" '
            'protocol="tcp" accept'
        )

    assert _rich_rules(out) == {
        "slurm-head": [
            rule(n, p) for n in networks for p in (SLURMCTLD_PORT, DBD_PORT, SRUN_PORTS)
        ],
        "gpu01": [rule(n, p) for n in networks for p in (SLURMD_PORT, SRUN_PORTS)],
    }
    firewall = yaml.safe_load((out / "roles/slurm/tasks/firewall.yml").read_text())
    plain = next(t for t in firewall if "port" in t.get("ansible.posix.firewalld", {}))
    assert plain["ansible.posix.firewalld"]["state"] == (
        "{{ 'disabled' if slurm_firewall_sources else 'enabled' }}"
    )
    open_to_all = _el_tree(tmp_path / "open", firewall_sources=False)
    all_vars = yaml.safe_load((open_to_all / "inventory/group_vars/all.yml").read_text())
    assert all_vars["clustergen_slurm_firewall_sources"] == []
    assert _rich_rules(open_to_all) == {"slurm-head": [], "gpu01": []}


def test_el_site_yml_passes_syntax_check(tmp_path: Path) -> None:
    require("ansible-playbook")
    out = _el_tree(tmp_path)
    proc = subprocess.run(
        [str(tool("ansible-playbook")), "site.yml", "--syntax-check"],
        cwd=out,
        env={**_ansible_env(), "ANSIBLE_STDOUT_CALLBACK": "default"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    firewall = yaml.safe_load((out / "roles/slurm/tasks/firewall.yml").read_text())
    opened = next(task for task in firewall if "ansible.posix.firewalld" in task)
    assert opened["ansible.posix.firewalld"]["permanent"] is True
    assert opened["ansible.posix.firewalld"]["immediate"] is True
    # Only EL runs it: Debian and Ubuntu keep their firewall as the site has it.
    main_tasks = yaml.safe_load((out / "roles/slurm/tasks/main.yml").read_text())
    include = next(
        t for t in main_tasks if t.get("ansible.builtin.include_tasks") == "firewall.yml"
    )
    assert include["when"] == "clustergen_package_family == 'dnf'"
