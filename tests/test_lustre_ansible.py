"""The Lustre roles on chroot nodes (tests/support/ansible_testbed.py): the MGS/MDS,
one OSS and a client (the login node) run site.yml with stand-in packages and stub
tools, with the confirmation variable set so the guarded format scripts run.

Stubs in each node's /usr/local/bin: `hostname` says the node's name; `blkid`
reports the label the `mkfs.lustre` stub wrote for a device, and nothing before;
`wipefs` finds nothing; `mkfs.lustre` records its argv. The devices are block
device nodes made in the chroot. The first run formats each target on its primary
node exactly once; the second run reports changed=0 and formats nothing.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
import yaml

from clustergen.cli import main

from support.ansible_testbed import (
    Ansible,
    Node,
    base_system,
    chroot_inventory,
    encrypt_vault,
    make_nodes,
    missing_prerequisites,
    stand_in_repository,
)
from support.ci import skip_or_fail
from support.paths import EXAMPLES

pytestmark = pytest.mark.daemons

SPEC = EXAMPLES / "ml-training-8node.yaml"
NODES = ("mds01", "oss01", "slurm-head")
STUB_LOG = "var/log/lustre-stubs.log"

STUBS = {
    "hostname": '#!/bin/sh\necho "{node}"\n',
    "wipefs": "#!/bin/sh\nexit 0\n",
    "blkid": """#!/bin/sh
echo "blkid $*" >>/var/log/lustre-stubs.log
for last; do :; done
label=/var/lib/lustre-stubs/$(echo "$last" | tr / _)
[ -f "$label" ] || exit 2
echo "LABEL=$(cat "$label")"
echo TYPE=ext4
""",
    "mkfs.lustre": """#!/bin/sh
echo "mkfs.lustre $*" >>/var/log/lustre-stubs.log
fsname= kind= index=
for arg; do
    case "$arg" in
        --fsname=*) fsname=${arg#--fsname=} ;;
        --mgs) kind=MGS ;;
        --mdt) kind=MDT ;;
        --ost) kind=OST ;;
        --index=*) index=${arg#--index=} ;;
    esac
    last=$arg
done
mkdir -p /var/lib/lustre-stubs
label=MGS
if [ "$kind" != MGS ]; then label=$(printf '%s-%s%04x' "$fsname" "$kind" "$index"); fi
echo "$label" >"/var/lib/lustre-stubs/$(echo "$last" | tr / _)"
""",
}


def _devices(out: Path) -> dict[str, list[str]]:
    """Each node's target devices, from the rendered format scripts."""
    spec = yaml.safe_load(SPEC.read_text())["storage"]["lustre"]
    found: dict[str, list[str]] = {}
    for target in (spec["mgs"], *spec["mdts"], *spec["osts"]):
        found.setdefault(target["node"], []).append(target["device"])
    return found


def _prepare(node: Node, devices: list[str]) -> None:
    local = node.root / "usr/local/bin"
    local.mkdir(parents=True, exist_ok=True)
    for name, text in STUBS.items():
        (local / name).write_text(text.replace("{node}", node.name))
        (local / name).chmod(0o755)
    for device in devices:
        path = node.root / device.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 200))


def test_lustre_roles_format_once_and_then_change_nothing(tmp_path: Path) -> None:
    missing = missing_prerequisites()
    if missing:
        skip_or_fail(f"the Ansible testbed needs {', '.join(missing)}")
    out = tmp_path / "out"
    assert main(["render", str(SPEC), "-o", str(out)]) == 0
    lock = yaml.safe_load((out / "versions.lock").read_text())
    every_pin = {n: v for group in lock["groups"].values() for n, v in group["packages"].items()}
    base = base_system(tmp_path)
    # munge and chrony are the distribution's, not pinned: the Slurm play on slurm-head
    # installs munge, and every node gets chrony (time_sync).
    repository = stand_in_repository(
        {**every_pin, "munge": "0.5.15-2", "chrony": "4.3-2+deb12u1"}, tmp_path
    )
    (tmp_path / "nodes").mkdir()
    node_list = make_nodes(NODES, base, repository, tmp_path / "nodes")
    nodes = {node.name: node for node in node_list}
    devices = _devices(out)
    for node in node_list:
        _prepare(node, devices.get(node.name, []))
    munge_key = base64.b64encode(bytes(range(256)) * 4).decode()
    vault, password = encrypt_vault(
        {"vault_slurmdbd_storage_pass": "testbed", "vault_munge_key": munge_key}, tmp_path
    )
    ansible = Ansible(
        out,
        (out / "inventory", chroot_inventory(node_list, tmp_path / "testbed.yml")),
        limit=",".join(NODES),
        extra_args=(
            "-e", f"@{vault}", "--vault-password-file", str(password),
            "-e", "lustre_server_format=true",
        ),
    )  # fmt: skip

    first = ansible.playbook("site.yml")
    assert first.returncode == 0, first.output[-6000:]
    mds_log = (nodes["mds01"].root / STUB_LOG).read_text().splitlines()
    oss_log = (nodes["oss01"].root / STUB_LOG).read_text().splitlines()
    mkfs = [line for line in mds_log + oss_log if line.startswith("mkfs.lustre")]
    assert mkfs == [
        "mkfs.lustre --mgs --backfstype=ldiskfs /dev/disk/by-id/nvme-lustre-mgs",
        "mkfs.lustre --fsname=training --mdt --index=0 --mgsnode=10.10.0.5@o2ib0 "
        "--backfstype=ldiskfs /dev/disk/by-id/nvme-lustre-mdt0",
        "mkfs.lustre --fsname=training --ost --index=0 --mgsnode=10.10.0.5@o2ib0 "
        "--backfstype=ldiskfs /dev/disk/by-id/dm-name-ost0",
        "mkfs.lustre --fsname=training --ost --index=1 --mgsnode=10.10.0.5@o2ib0 "
        "--backfstype=ldiskfs /dev/disk/by-id/dm-name-ost1",
    ]
    for node, name in (("mds01", "lustre-format-mgs"), ("oss01", "lustre-format-training-ost0001")):
        script = nodes[node].root / "usr/local/sbin" / name
        assert stat.S_IMODE(script.stat().st_mode) == 0o755
    # A target's script and mount unit go to its service nodes only, not to every OSS.
    oss = nodes["oss01"].root
    assert sorted(p.name for p in (oss / "usr/local/sbin").glob("lustre-format-*")) == [
        "lustre-format-training-ost0000",
        "lustre-format-training-ost0001",
    ]
    assert sorted(p.name for p in (oss / "etc/systemd/system").glob("lustre-training-*")) == [
        "lustre-training-ost0000.mount",
        "lustre-training-ost0001.mount",
    ]
    client = nodes["slurm-head"].root
    assert (client / "etc/systemd/system/mnt-lustre.mount").exists()
    assert (client / "etc/lnet.conf").read_text() == (
        out / "lustre/lnet/head-server.conf"
    ).read_text()
    assert not (client / "usr/local/sbin/lustre-format-mgs").exists()

    second = ansible.playbook("site.yml")
    assert second.returncode == 0, second.output[-6000:]
    assert not any(second.changed().values()), f"{second.changed()}\n{second.output[-6000:]}"
    # Without the format switch (which converges every node) each node is current: a
    # server's converge check looks only at its own targets' script and mount unit.
    checked = ansible.playbook("site.yml", "-e", "lustre_server_format=false")
    assert checked.returncode == 0, checked.output[-6000:]
    for node in NODES:
        assert f"ok: [{node}] => (item=current)" in checked.output, checked.output[-6000:]
    logs = [(nodes[n].root / STUB_LOG).read_text() for n in ("mds01", "oss01")]
    assert sum(log.count("mkfs.lustre") for log in logs) == 4, "the second run formatted again"
