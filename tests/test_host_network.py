"""Host network configuration (outputs/host_network, docs/networks.md): each OS's own
format for a multi-rail RoCE node and an InfiniBand node, the management interface left
alone unless the spec asks, nothing for a spec without those networks, and the RoCE QoS
from the same traffic class NCCL and the acceptance jobs get."""

from __future__ import annotations

import argparse
import configparser
import fnmatch
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from clustergen.base.artifacts import Artifact
from clustergen.outputs import host_network
from clustergen.outputs.acceptance.derive import PERFTEST_OPTIONS
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.nccl_settings import settings_for
from clustergen.spec.load import parse_spec
from clustergen.templating import environment
from clustergen.validate import validate_cluster

from support.ci import require
from support.paths import EXAMPLES, REPO

TRAINING = (EXAMPLES / "ml-training-8node.yaml").read_text()  # InfiniBand, one ib0


def _edited(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# The RoCE reference spec with both of its NICs as rails, a /25 each: lab1 is .11 on
# ens1f0np0 and .139 on ens1f1np1 (the reference spec itself stays as it is).
EDGE = _edited(
    _edited(
        (EXAMPLES / "edge-roce-2node.yaml").read_text(),
        "interfaces: {management: eno1, fabric: ens1f0np0}",
        "interfaces: {management: eno1, fabric: ens1f0np0, rails: [ens1f0np0, ens1f1np1]}",
    ),
    "    cidr: 192.168.60.0/24\n",
    "    cidr: 192.168.60.0/24\n    rail_prefix: 25\n",
)


def _cluster(text: str) -> ResolvedCluster:
    cluster, problems = validate_cluster(parse_spec(text, "t.yaml", "t.yaml"))
    assert cluster is not None, [p.format() for p in problems if p.severity == "error"]
    return cluster


def _files(text: str) -> dict[str, Artifact]:
    artifacts = host_network.render(_cluster(text), environment())
    return {a.path: a for a in artifacts}


def _on(os_name: str, text: str = EDGE) -> str:
    return _edited(text, "os: ubuntu-24.04", f"os: {os_name}")


def _keyfile(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser


def test_multi_rail_roce_in_each_os_format_routes_each_rail_out_of_its_nic() -> None:
    # Debian: one systemd-networkd file per rail NIC, each with its own table and rule.
    networkd = _files(_on("debian-12"))
    rail2 = networkd["host_network/lab1/60-clustergen-ens1f1np1.network"]
    assert rail2.install is not None
    assert rail2.install.dest == "/etc/systemd/network/60-clustergen-ens1f1np1.network"
    assert rail2.install.hosts == ("lab1",)
    for line in (
        "Name=ens1f1np1",
        "MTUBytes=9000",
        "Address=192.168.60.139/25",
        "Destination=192.168.60.128/25",
        "PreferredSource=192.168.60.139",
        "From=192.168.60.139/32",
        "Table=102",
    ):
        assert f"\n{line}\n" in rail2.text, (line, rail2.text)
    # Ubuntu: one netplan file per node with both rails.
    plan = yaml.safe_load(_files(EDGE)["host_network/lab2/60-clustergen.yaml"].text)
    rails = plan["network"]["ethernets"]
    assert list(rails) == ["ens1f0np0", "ens1f1np1"]
    assert rails["ens1f0np0"]["addresses"] == ["192.168.60.12/25"]
    assert rails["ens1f1np1"]["mtu"] == 9000
    assert rails["ens1f1np1"]["routing-policy"] == [
        {"from": "192.168.60.140/32", "table": 102, "priority": 102}
    ]
    assert rails["ens1f1np1"]["routes"] == [
        {"to": "192.168.60.128/25", "scope": "link", "from": "192.168.60.140", "table": 102}
    ]
    # EL: NetworkManager keyfiles, root-only as NetworkManager requires.
    keyfiles = _files(_on("rocky-9"))
    rail1 = keyfiles["host_network/lab1/clustergen-ens1f0np0.nmconnection"]
    assert rail1.install is not None and rail1.install.mode == 0o600
    profile = _keyfile(rail1.text)
    assert dict(profile["connection"]) == {
        "id": "clustergen-ens1f0np0",
        "type": "ethernet",
        "interface-name": "ens1f0np0",
        "autoconnect": "true",
    }
    assert profile["ethernet"]["mtu"] == "9000"
    assert profile["ipv4"]["address1"] == "192.168.60.11/25"
    assert profile["ipv4"]["route1"] == "192.168.60.0/25"
    assert profile["ipv4"]["route1_options"] == "table=101,src=192.168.60.11"
    assert profile["ipv4"]["routing-rule1"] == "priority 101 from 192.168.60.11/32 table 101"
    # The management interface (eno1) is in no file of any format, and the head node,
    # with no fabric interface, gets nothing.
    for files in (networkd, keyfiles, _files(EDGE)):
        assert not [p for p, a in files.items() if "eno1" in a.text or "lab-head" in p]


def test_infiniband_is_ipoib_datagram_at_4092_with_no_source_routing() -> None:
    cluster = _cluster(TRAINING)
    assert host_network.host_format(cluster) == "netplan"  # Ubuntu 22.04
    plan = yaml.safe_load(_files(TRAINING)["host_network/gpu01/60-clustergen.yaml"].text)
    assert plan["network"]["ethernets"]["ib0"]["mtu"] == 4092
    # The same node as EL writes it (its repositories are Ubuntu's, so the format is
    # asked for directly).
    (gpu01,) = [n for n in host_network.derive.node_networks(cluster) if n.node == "gpu01"]
    found = host_network._node_files(cluster, environment(), gpu01, "networkmanager")
    files = {a.path: a for a in found}
    profile = _keyfile(files["host_network/gpu01/clustergen-ib0.nmconnection"].text)
    assert profile["connection"]["type"] == "infiniband"
    assert dict(profile["infiniband"]) == {"mtu": "4092", "transport-mode": "datagram"}
    assert "routing-rule1" not in profile["ipv4"]
    expected = files["host_network/gpu01/host-network.expected"].text.splitlines()
    assert expected[-2:] == ["format networkmanager", "ib0 10.10.1.11/16 4092 -"]
    # No QoS on InfiniBand: no traffic class to make lossless.
    assert not [p for p in _files(TRAINING) if "roce-qos" in p]


def test_the_management_interface_only_when_asked_and_nothing_when_switched_off() -> None:
    managed = _edited(
        EDGE,
        "  management: {cidr: 192.168.50.0/24, gateway: 192.168.50.1}\n",
        "  management: {cidr: 192.168.50.0/24, gateway: 192.168.50.1, mtu: 1500}\n"
        "  hosts: {management: true}\n",
    )
    plan = yaml.safe_load(_files(managed)["host_network/lab-head/60-clustergen.yaml"].text)
    assert plan["network"]["ethernets"] == {
        "eno1": {
            "addresses": ["192.168.50.2/24"],
            "mtu": 1500,
            "dhcp4": False,
            "dhcp6": False,
            "link-local": [],
            "routes": [{"to": "default", "via": "192.168.50.1"}],
        }
    }
    off = _edited(
        EDGE,
        "  management: {cidr: 192.168.50.0/24, gateway: 192.168.50.1}\n",
        "  management: {cidr: 192.168.50.0/24, gateway: 192.168.50.1}\n"
        "  hosts: {configure: false}\n",
    )
    # Interfaces untouched; the RoCE QoS (network.fabric.roce) still rendered.
    assert sorted(_files(off)) == [
        "host_network/clustergen-roce-qos.service",
        "host_network/roce-qos/l40s-4gpu.sh",
    ]


def test_a_spec_without_fabric_storage_or_front_end_renders_nothing() -> None:
    spec = yaml.safe_load(EDGE)
    del spec["network"]["fabric"]
    for group in spec["nodes"]:
        group.pop("fabric_ip", None)
    spec["hardware"]["l40s-4gpu"]["interfaces"] = {"management": "eno1"}
    spec["hardware"]["l40s-4gpu"].pop("fabric_hcas")
    cluster = _cluster(yaml.safe_dump(spec))
    assert host_network.render(cluster, environment()) == []
    assert "host_network" not in {g.name for g in cluster.groups}


# A one-NIC RoCE node: eno1 carries the management network and the fabric.
ONE_NIC = _edited(
    _edited(
        (EXAMPLES / "edge-roce-2node.yaml").read_text(),
        "    fabric_hcas: [mlx5_0, mlx5_1]\n    interfaces: {management: eno1, fabric: ens1f0np0}",
        "    fabric_hcas: [mlx5_0]\n    interfaces: {management: eno1, fabric: eno1}",
    ),
    "    roce: {gid_index: 3, traffic_class: 106}\n",
    "    roce: {gid_index: 3, traffic_class: 106}\n"
    "    routes: [{to: 10.99.0.0/16, via: 192.168.60.1}]\n",
)
ONE_NIC_ADDRESSES = ["192.168.50.11/24", "192.168.60.11/24"]


def test_one_nic_for_management_and_fabric_keeps_both_addresses_in_each_format() -> None:
    """A netdev matches one file: the management address (which the spec leaves to the
    distribution, network.hosts.management false) goes in the file beside the fabric's,
    with the default route, holding up boot, at the fabric's jumbo MTU; with management's
    MTU set, that one."""
    networkd = _files(_on("debian-12", ONE_NIC))
    assert [p for p in networkd if p.startswith("host_network/lab1/")] == [
        "host_network/lab1/05-clustergen-eno1.network",
        "host_network/lab1/host-network.expected",
    ]
    text = networkd["host_network/lab1/05-clustergen-eno1.network"].text
    assert "\nAddress=192.168.50.11/24\nAddress=192.168.60.11/24\nGateway=192.168.50.1\n" in text
    assert "MTUBytes=9000" in text and "RequiredForOnline" not in text, text
    assert "[Route]\nDestination=10.99.0.0/16\nGateway=192.168.60.1\n" in text
    assert (text.count("[Match]"), text.count("[Network]")) == (1, 1), text
    plan = yaml.safe_load(_files(ONE_NIC)["host_network/lab1/60-clustergen.yaml"].text)
    assert plan["network"]["ethernets"] == {
        "eno1": {
            "addresses": ONE_NIC_ADDRESSES,
            "mtu": 9000,
            "dhcp4": False,
            "dhcp6": False,
            "link-local": [],
            "routes": [
                {"to": "default", "via": "192.168.50.1"},
                {"to": "10.99.0.0/16", "via": "192.168.60.1"},
            ],
        }
    }
    keyfiles = _files(_on("rocky-9", ONE_NIC))
    profile = _keyfile(keyfiles["host_network/lab1/clustergen-eno1.nmconnection"].text)
    assert [profile["ipv4"][k] for k in ("address1", "address2", "gateway")] == [
        *ONE_NIC_ADDRESSES,
        "192.168.50.1",
    ]
    assert profile["ipv4"]["route1"] == "10.99.0.0/16,192.168.60.1"
    expected = networkd["host_network/lab1/host-network.expected"].text.splitlines()
    assert expected[-2:] == [f"eno1 {a} 9000 -" for a in ONE_NIC_ADDRESSES]
    # The head node, whose eno1 carries management alone, is still left as it is.
    assert not [p for p in networkd if "lab-head" in p]
    # Management's MTU given: the link takes it.
    set_mtu = _edited(
        ONE_NIC,
        "  management: {cidr: 192.168.50.0/24, gateway: 192.168.50.1}\n",
        "  management: {cidr: 192.168.50.0/24, gateway: 192.168.50.1, mtu: 1500}\n",
    )
    plan = yaml.safe_load(_files(set_mtu)["host_network/lab2/60-clustergen.yaml"].text)
    assert plan["network"]["ethernets"]["eno1"]["mtu"] == 1500


def test_a_route_goes_on_the_rail_whose_subnet_holds_its_next_hop() -> None:
    routed = _edited(
        _on("debian-12"),
        "    roce: {gid_index: 3, traffic_class: 106}\n",
        "    roce: {gid_index: 3, traffic_class: 106}\n"
        "    routes: [{to: 10.99.0.0/16, via: 192.168.60.129}]\n",
    )
    files = _files(routed)
    assert "Gateway" not in files["host_network/lab1/60-clustergen-ens1f0np0.network"].text
    rail2 = files["host_network/lab1/60-clustergen-ens1f1np1.network"].text
    assert "[Route]\nDestination=10.99.0.0/16\nGateway=192.168.60.129\nTable=102\n" in rail2


# mlnx_qos --help (NVIDIA mlnx-tools): "-i INTF, --interface=INTF Interface name";
# "--trust=TRUST set priority trust state to pcp or dscp"; "-f LIST, --pfc=LIST Set
# priority flow control for each priority. LIST is comma separated value for each
# priority starting from 0 to 7". cma_roce_tos (NVIDIA): "-d <ib_device> -t <tos>".
def _mlnx_qos(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mlnx_qos", exit_on_error=False)
    parser.add_argument("-i", "--interface", required=True)
    parser.add_argument("--trust", choices=["pcp", "dscp"])
    parser.add_argument("-f", "--pfc")
    args = parser.parse_args(argv)
    values = args.pfc.split(",")
    assert len(values) == 8 and set(values) <= {"0", "1"}, args.pfc
    return args


def _qos_commands(text: str) -> dict[str, list[list[str]]]:
    commands: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] in ("mlnx_qos", "cma_roce_tos", "echo"):
            commands.setdefault(words[0], []).append(words[1:])
    return commands


@pytest.mark.parametrize(("traffic_class", "dscp", "priority"), [(106, 26, 3), (138, 34, 4)])
def test_roce_qos_makes_nccls_traffic_class_lossless(
    traffic_class: int, dscp: int, priority: int
) -> None:
    """TC 106 (NVIDIA's RoCE default, NCCL_IB_TC) is DSCP 26 and priority 3; a class set
    in nccl.env instead reaches the NIC, NCCL and ib_write_bw alike (one source)."""
    text = _edited(EDGE, "nccl:\n", f"nccl:\n  env: {{NCCL_IB_TC: '{traffic_class}'}}\n")
    cluster = _cluster(text)
    (qos,) = host_network.derive.roce_qos(cluster)
    assert (qos.traffic_class, qos.dscp, qos.priority) == (traffic_class, dscp, priority)
    script = {a.path: a for a in host_network.render(cluster, environment())}
    commands = _qos_commands(script["host_network/roce-qos/l40s-4gpu.sh"].text)
    parsed = [_mlnx_qos(argv) for argv in commands["mlnx_qos"]]
    assert [(a.interface, a.trust) for a in parsed] == [
        ("ens1f0np0", "dscp"),
        ("ens1f1np1", "dscp"),
    ]
    assert {a.pfc.split(",").index("1") for a in parsed} == {priority}
    assert commands["cma_roce_tos"] == [
        ["-d", "mlx5_0", "-t", str(traffic_class)],
        ["-d", "mlx5_1", "-t", str(traffic_class)],
    ]
    assert f"/sys/class/net/ens1f1np1/ecn/roce_np/enable/{priority}" in str(commands["echo"])
    # The same class in NCCL's settings, which the acceptance jobs' ib_write_bw reads.
    by_name = {s.name: s.value for s in settings_for(cluster, "l40s-4gpu")}
    assert by_name["NCCL_IB_TC"] == str(traffic_class)
    assert dict(PERFTEST_OPTIONS)["NCCL_IB_TC"] == "--tclass="


# Stand-ins for what the helper runs on a node, each recording its arguments; `ip` is
# the machine's own (the loopback interface is the netdev checked).
_RECORDING = '#!/bin/sh\necho "$(basename "$0") $*" >> "$HELPER_LOG"\n'


def _helper(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    text = (REPO / "roles/host_network/files/clustergen-host-network").read_text(encoding="utf-8")
    for old, new in (
        ("/etc/clustergen/host-network.expected", tmp_path / "etc/host-network.expected"),
        ("/var/lib/clustergen/host-network", tmp_path / "state"),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, str(new))
    helper = tmp_path / "clustergen-host-network"
    helper.write_text(text, encoding="utf-8")
    helper.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("systemctl", "systemd-run", "networkctl", "sleep"):
        (bin_dir / name).write_text(_RECORDING, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env["HELPER_LOG"] = str(tmp_path / "log")
    return helper, env


def test_a_first_install_that_does_not_come_up_is_rolled_back_to_the_nodes_own_files(
    tmp_path: Path,
) -> None:
    """The helper applies the new files, finds an address missing, and puts the node back:
    the files it installed go (there were none before), the links it touched are
    reconfigured in the node's format, read before the expected file went, and it says
    so and exits 1."""
    require("ip")
    helper, env = _helper(tmp_path)
    (tmp_path / "etc").mkdir()
    expected = tmp_path / "etc/host-network.expected"
    network = tmp_path / "etc/60-clustergen-lo.network"
    files = [str(expected), str(network)]
    arm = subprocess.run([helper, "arm", "120", *files], env=env, capture_output=True, text=True)
    assert arm.returncode == 0, arm.stderr
    expected.write_text("format networkd\nlo 127.0.0.1/8 65536 -\nlo 10.255.0.9/32 65536 -\n")
    network.write_text("[Match]\nName=lo\n")
    done = subprocess.run([helper, "apply"], env=env, capture_output=True, text=True)
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [
        "lo: no 10.255.0.9/32",
        "clustergen-host-network: the new configuration did not come up; rolled back",
    ]
    assert not expected.exists() and not network.exists()
    log = (tmp_path / "log").read_text(encoding="utf-8").splitlines()
    calls = [line for line in log if line.startswith("networkctl")]
    assert calls == ["networkctl reload", "networkctl reconfigure lo"] * 2, log
    timer = "--unit=clustergen-host-network-rollback --on-active=120"
    assert f"systemd-run --quiet {timer} {helper} rollback" in log, log
    # Applied again with nothing to put back: nothing happens.
    again = subprocess.run([helper, "rollback"], env=env, capture_output=True, text=True)
    assert again.returncode == 0
    assert again.stderr == "clustergen-host-network: nothing to roll back\n"


def test_the_role_knows_every_interface_file_the_family_names() -> None:
    """roles/host_network removes a file of clustergen's that a node's render no longer
    names, by host_network_owned's patterns: every interface file of every format
    matches one, and nothing else the family installs does."""
    owned = yaml.safe_load((REPO / "roles/host_network/vars/main.yml").read_text())
    patterns = [(o["path"], o["pattern"]) for o in owned["host_network_owned"]]

    def matches(dest: str) -> bool:
        folder, _, name = dest.rpartition("/")
        return any(folder == path and fnmatch.fnmatch(name, p) for path, p in patterns)

    dests = {
        a.install.dest
        for text in (_on("debian-12"), EDGE, _on("rocky-9"), _on("debian-12", ONE_NIC))
        for a in _files(text).values()
        if a.install is not None
    }
    interface_files = {d for d in dests if "roce-qos" not in d and not d.endswith(".expected")}
    assert len(interface_files) == 6  # 05- for eno1, which carries management, sorted(dests)
    assert {d for d in dests if matches(d)} == interface_files, sorted(dests)


# The 128-node example with an NFS mount over its storage fabric: each GPU node's ib8 is in
# 10.200.0.0/17 and ib9 in 10.200.128.0/17 (storage interfaces 1 and 2).
SUPERPOD = (EXAMPLES / "superpod-rail-128node.yaml").read_text()


def _with_mount(mount: str) -> str:
    nfs = f"\nstorage:\n  nfs:\n    - {mount}\n  lustre:\n"
    return _edited(SUPERPOD, "\nstorage:\n  lustre:\n", nfs)


def _netplan_optional(files: dict[str, Artifact], node: str) -> dict[str, bool]:
    """netdev -> whether the node's netplan file marks it optional (no hold on boot)."""
    ethernets = yaml.safe_load(files[f"host_network/{node}/60-clustergen.yaml"].text)
    return {
        netdev: bool(entry.get("optional", False))
        for netdev, entry in ethernets["network"]["ethernets"].items()
    }


RAILS = {f"ib{k}" for k in range(8)}


@pytest.mark.parametrize(
    ("mount", "held"),
    [
        # The server's address is in ib8's subnet: ib8 holds up boot, nothing else does.
        ("{server: 10.200.0.2, export: /srv/data, path: /data, roles: [compute], transport: rdma}",
         {"ib8"}),
        # The same over TCP: the same link carries it.
        ("{server: 10.200.130.9, export: /srv/data, path: /data, roles: [compute]}", {"ib9"}),
        # A filer known by its DNS name, over RDMA: the storage links, either may carry it.
        ("{server: filer.example.org, export: /d, path: /data, roles: [compute], transport: rdma}",
         {"ib8", "ib9"}),
        # Not required: it may come late, as nofail does; nothing holds up boot for it.
        ("{server: 10.200.0.2, export: /d, path: /data, roles: [compute], transport: rdma, "
         "required: false}", set()),
        # A node of the spec: its name is its management address (/etc/hosts), whose link
        # holds up boot already; and a DNS name over TCP goes where the resolver says.
        ("{server: slurm-head, export: /srv/home, path: /home, roles: [compute]}", set()),
        ("{server: filer.example.org, export: /d, path: /data, roles: [compute]}", set()),
    ],
)  # fmt: skip
def test_a_required_mount_s_link_holds_up_boot(mount: str, held: set[str]) -> None:
    """A required NFS mount starts after network-online.target; the link it goes over then
    holds that target up, or the mount can start before its link is up and fail."""
    files = _files(_with_mount(mount))
    optional = _netplan_optional(files, "gpu001")
    assert {netdev for netdev, is_optional in optional.items() if not is_optional} == held
    assert set(optional) == RAILS | {"ib8", "ib9"}, optional
    # A node that does not mount it is left as it was: the head's storage links.
    head = _netplan_optional(files, "slurm-head")
    assert head["ib0"] and head["ib1"], head
    text = files["host_network/gpu001/60-clustergen.yaml"].text
    for netdev in held:
        assert f"    {netdev}:  # network.storage\n" in text
        assert "holds up boot (network-online): the required NFS mount(s) /data go over it" in text


def test_networkd_drops_required_for_online_no_on_a_required_mount_s_link(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(host_network, "host_format", lambda cluster: "networkd")
    mount = "{server: 10.200.0.2, export: /d, path: /data, roles: [compute], transport: rdma}"
    files = _files(_with_mount(mount))
    held = files["host_network/gpu001/60-clustergen-ib8.network"].text
    other = files["host_network/gpu001/60-clustergen-ib9.network"].text
    assert "RequiredForOnline=no" not in held
    assert "the required NFS mount(s) /data" in held
    assert "\nRequiredForOnline=no\n" in other
