"""The rdma role with DOCA-OFED (software.rdma stack doca-ofed) on a chroot node
(tests/support/ansible_testbed.py): apt installs `doca-ofed` at the spec's DOCA release from
a stand-in repository that also offers a later build of another release, holds it, and a
second run changes nothing. No DOCA repository is reachable here: the stand-in package is
empty, and what is proven is the pin's form (`<release>-*`) against real apt and dpkg."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clustergen.cli import main

from support.ansible_testbed import (
    Ansible,
    base_system,
    chroot_inventory,
    make_nodes,
    missing_prerequisites,
    stand_in_repository,
)
from support.ci import skip_or_fail
from support.paths import EXAMPLES

pytestmark = pytest.mark.daemons

SPEC = EXAMPLES / "vera-rubin-nvl72-spectrumx.yaml"
NODE = "vr001"
# The package repositories (the testbed's, in place of the spec's) and the rdma role, on
# the nodes with fabric HCAs, from the rendered tree's roles and inventory as site.yml
# runs them.
PLAYBOOK = """\
- name: Package repositories
  hosts: rdma
  become: true
  gather_facts: false
  roles:
    - role: repositories

- name: RDMA stack
  hosts: rdma
  become: true
  gather_facts: false
  roles:
    - role: rdma
"""


def test_doca_ofed_installs_at_its_release_and_holds(tmp_path: Path) -> None:
    missing = missing_prerequisites()
    if missing:
        skip_or_fail(f"the Ansible testbed needs {', '.join(missing)}")
    out = tmp_path / "out"
    assert main(["render", str(SPEC), "-o", str(out)]) == 0
    lock = yaml.safe_load((out / "versions.lock").read_text(encoding="utf-8"))
    pins = lock["groups"]["rdma"]["packages"]
    assert pins == {"doca-ofed": "3.2.1-*"}
    (out / "rdma-only.yml").write_text(PLAYBOOK, encoding="utf-8")
    # doca-ofed 3.2.1-1, and 3.2.1.1-1: newer, and of no release the pin names.
    repository = stand_in_repository(pins, tmp_path)
    (tmp_path / "nodes").mkdir()
    [node] = make_nodes((NODE,), base_system(tmp_path), repository, tmp_path / "nodes")
    ansible = Ansible(
        out, (out / "inventory", chroot_inventory([node], tmp_path / "testbed.yml")), limit=NODE
    )

    first = ansible.playbook("rdma-only.yml")
    assert first.returncode == 0, first.output[-6000:]
    assert node.dpkg_status()["doca-ofed"] == ("3.2.1-1", "hold")
    preferences = (node.root / "etc/apt/preferences.d").glob("*doca*")
    assert any("Pin: version 3.2.1-*" in p.read_text(encoding="utf-8") for p in preferences)
    # The distribution's RDMA packages are not installed beside DOCA's.
    assert "rdma-core" not in node.dpkg_status()
    # A GPU node with DOCA-OFED loads nvidia-peermem at boot.
    peermem = node.root / "etc/modules-load.d/nvidia-peermem.conf"
    assert peermem.read_text(encoding="utf-8").splitlines()[-1] == "nvidia-peermem"

    second = ansible.playbook("rdma-only.yml")
    assert second.returncode == 0, second.output[-6000:]
    assert not any(second.changed().values()), second.output[-6000:]
