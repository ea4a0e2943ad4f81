"""Networks and per-interface addresses (issue 23; docs/networks.md): the rail and storage
address arithmetic, its checks present and absent, LNet on two storage interfaces with
storage NIDs, and the interface addresses in hosts.yml as Ansible reads them.

tests/data/networks.yaml is the 8-node reference spec with 8 rails (rail_prefix 19), a
storage fabric with two storage HCAs on the GPU nodes and the Lustre servers
(rail_prefix 17), and a front-end interface on the head node, which mounts Lustre over
its fabric interface.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from ruamel.yaml import YAML

from clustergen.model.network import Fabric
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import InterfaceAddress
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import DATA, EXAMPLES

NETWORKS = DATA / "networks.yaml"
Data = dict[str, Any]


def _data(path: Path = NETWORKS) -> Data:
    loaded: Data = YAML(typ="safe").load(path.read_text())
    return loaded


def _validate(data: Data) -> tuple[ResolvedCluster | None, list[str]]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    return cluster, [f"{p.message} [{p.code}]" for p in problems if p.severity == "error"]


def _cluster(data: Data) -> ResolvedCluster:
    cluster, errors = _validate(data)
    assert cluster is not None, errors
    return cluster


def _errors(data: Data) -> list[str]:
    return _validate(data)[1]


def _fabric(cidr: str, rail_prefix: int | None) -> Fabric:
    return Fabric(type="infiniband", rate="ndr", cidr=cidr, rail_prefix=rail_prefix)


# --- the arithmetic --------------------------------------------------------------------


def _big_group(data: Data, first: str = "10.10.1.1") -> Data:
    """The GPU group grown to 128 nodes, gpu[001-128], from fabric_ip `first`."""
    data = copy.deepcopy(data)
    data["nodes"][0].update(names="gpu[001-128]", fabric_ip=first, storage_ip="10.30.1.1")
    data["network"]["fabric"]["switches"] = []
    data["slurm"]["partitions"] = [
        {"name": "gpu-training", "nodes": "gpu[001-128]", "default": True, "max_time": "UNLIMITED"}
    ]
    data["racks"] = []
    data["facility"] = {"unracked": "gpu[001-128],slurm-head,mds01,oss[01-04]"}
    return data


def test_rail_8_of_the_last_node_of_a_128_node_group() -> None:
    cluster = _cluster(_big_group(_data()))
    last = cluster.by_name["gpu128"]
    assert last.fabric_ip == "10.10.1.128"
    rails = last.rail_addresses(cluster.spec.network.fabric)
    # rail r = fabric_ip + (r - 1) x 2^(32 - 19): rail 8 is 7 x 8192 = 7 x 32 x 256 above.
    assert rails[7] == InterfaceAddress("ib7", "10.10.225.128", 19)
    assert [str(a) for a in rails] == [f"10.10.{1 + 32 * r}.128/19" for r in range(8)]
    assert [a.netdev for a in rails] == [f"ib{r}" for r in range(8)]
    storage = last.storage_addresses(cluster.spec.network.storage)
    assert [str(a) for a in storage] == ["10.30.1.128/17", "10.30.129.128/17"]
    assert last.lnet_address("o2ib0") == "10.30.1.128"


def test_rail_addresses_cross_octet_boundaries_and_stop_at_the_end_of_ipv4() -> None:
    host = _cluster(_data()).by_name["gpu01"]
    # A /30 per rail: 4 addresses each, so rail 8 is 28 above rail 1.
    tight = host.rail_addresses(_fabric("10.10.0.0/16", 30))
    assert [a.address for a in tight] == [f"10.10.1.{11 + 4 * r}" for r in range(8)]
    # Rails of /24 from .11 of 10.10.1.0: rail 8 is 7 x 256 above, across the third octet.
    assert host.rail_addresses(_fabric("10.10.0.0/16", 24))[7].address == "10.10.8.11"
    # rail_prefix 1: two rails fit the whole space; the third would be past 255.255.255.255
    # and has no address (the checks refuse the spec: network.rail-subnets-past-cidr).
    assert len(host.rail_addresses(_fabric("0.0.0.0/0", 1))) == 2
    assert host.rail_addresses(_fabric("10.10.0.0/16", None)) == ()
    assert host.rail_addresses(None) == ()


def test_without_the_new_keys_no_host_has_interface_addresses() -> None:
    cluster = _cluster(_data(EXAMPLES / "ml-training-8node.yaml"))
    network = cluster.spec.network
    for host in cluster.hosts:
        assert host.rail_addresses(network.fabric) == ()
        assert host.storage_addresses(network.storage) == ()
        assert host.frontend_address(network.frontend) is None
        assert host.lnet_address("o2ib0") == host.lnet_address("tcp0") == host.fabric_ip


# --- the checks ------------------------------------------------------------------------


def test_the_networks_spec_is_valid_and_the_reference_gets_no_new_problem() -> None:
    assert _errors(_data()) == []
    assert _errors(_data(EXAMPLES / "ml-training-8node.yaml")) == []
    assert _errors(_data(EXAMPLES / "edge-roce-2node.yaml")) == []


def test_a_group_past_its_rail_subnet_is_reported_once_with_its_count() -> None:
    data = _big_group(_data(), first="10.10.31.200")  # 128 nodes from .31.200 leave /19
    errors = _errors(data)
    assert errors == [
        "128 nodes from 10.10.31.200 run past rail 1's subnet 10.10.0.0/19 of the fabric "
        "network (the last would be 10.10.32.71; the last host address is 10.10.31.254) "
        "[nodes.address-range-past-network]"
    ]


@pytest.mark.parametrize(
    ("prefix", "fits"),
    [(19, True), (18, False), (30, True), (16, False), (15, False)],
    ids=lambda v: str(v),
)
def test_rail_subnets_fit_the_cidr_at_the_boundary(prefix: int, fits: bool) -> None:
    """8 rails of /19 fill 10.10.0.0/16 exactly; /18 needs twice the room."""
    data = _data()
    data["network"]["fabric"]["rail_prefix"] = prefix
    errors = [e for e in _errors(data) if "rail-subnets-past-cidr" in e]
    assert (errors == []) == fits, errors
    if not fits:
        assert errors[0].startswith(f"8 subnets of /{prefix} (one per rail) do not fit in ")
        holds = f"holds {2 ** (prefix - 16)}:" if prefix >= 16 else "smaller than one"
        assert holds in errors[0]


def test_rail_interfaces_must_match_the_compute_hcas_only_with_rail_prefix() -> None:
    data = _data()
    data["hardware"]["hgx-h100"]["interfaces"]["rails"] = ["ib0", "ib1"]
    assert [e for e in _errors(data) if "[network.rail-interfaces]" in e] == [
        "2 rail interfaces for the profile's 8 compute HCAs: with network.fabric.rail_prefix "
        "each compute HCA's netdev is listed here, in rail order, and gets its rail's address "
        "[network.rail-interfaces]"
    ]
    del data["network"]["fabric"]["rail_prefix"]
    assert _errors(data) == []


def test_rail_interfaces_count_the_topology_tables_compute_hcas() -> None:
    data = _data()
    profile = data["hardware"]["hgx-h100"]
    hcas = [
        {"name": f"mlx5_{i}", "numa_node": i // 5, "role": "compute" if i < 8 else "storage"}
        for i in range(10)
    ]
    gpus = [
        {"index": i, "numa_node": i // 4, "cores": f"{i * 16}-{i * 16 + 15}", "hca": f"mlx5_{i}"}
        for i in range(8)
    ]
    profile["topology"] = {"hcas": hcas, "gpus": gpus}
    assert _errors(data) == []  # 8 compute HCAs of 10, 8 rails
    profile["interfaces"]["rails"] = [f"ib{i}" for i in range(10)]
    assert any("10 rail interfaces for the profile's 8 compute HCAs" in e for e in _errors(data))


def test_a_rail_address_used_twice_is_reported_once_per_group() -> None:
    """The head node's fabric_ip in gpu02's range: one report, not one per rail."""
    data = _data()
    data["nodes"][1]["fabric_ip"] = "10.10.1.12"
    assert _errors(data) == [
        "10.10.1.12 (slurm-head's fabric_ip) is already used as gpu02's fabric_ip "
        "[nodes.address-reused]"
    ]


def test_lustre_servers_without_storage_ip_get_one_problem() -> None:
    data = _data()
    del data["nodes"][2]["storage_ip"]
    assert _errors(data) == [
        "hardware 'lustre-server' has storage interfaces (ib0, ib1) on network.storage, but "
        "the group gives no storage_ip (the first node's address) "
        "[nodes.interfaces-without-address]"
    ]


# --- what is rendered ------------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {path: a.text for path, a in render_all(_cluster(_data())).items()}


def _lnet(rendered: dict[str, str], profile: str) -> Any:
    return yaml.safe_load(rendered[f"lustre/lnet/{profile}.conf"])


def test_lnet_is_multi_rail_over_the_two_storage_interfaces(rendered: dict[str, str]) -> None:
    def nis(profile: str) -> list[dict[int, str]]:
        (net,) = _lnet(rendered, profile)["net"]
        assert net["net type"] == "o2ib0"
        return [ni["interfaces"] for ni in net["local NI(s)"]]

    assert nis("hgx-h100") == [{0: "ib8"}, {0: "ib9"}]
    assert nis("lustre-server") == [{0: "ib0"}, {0: "ib1"}]
    # The head node has no storage HCA: LNet stays on its fabric interface.
    assert nis("head-server") == [{0: "ib0"}]


def test_nids_are_the_storage_addresses(rendered: dict[str, str]) -> None:
    mount = rendered["lustre/client/mnt-lustre.mount"]
    assert "What=10.30.0.5@o2ib0:/training\n" in mount
    ost0 = rendered["lustre/format/training-ost0000.sh"]
    assert "'--mgsnode=10.30.0.5@o2ib0'" in ost0
    # oss01 and oss02 (the failover) from storage_ip 10.30.0.6.
    assert "'--servicenode=10.30.0.6@o2ib0' '--servicenode=10.30.0.7@o2ib0'" in ost0
    assert "10.10." not in "".join(t for p, t in rendered.items() if p.startswith("lustre/"))


def test_host_vars_carry_each_interface_address(rendered: dict[str, str]) -> None:
    hosts = {
        path.removeprefix("inventory/host_vars/").removesuffix(".yml"): yaml.safe_load(text)
        for path, text in rendered.items()
        if path.startswith("inventory/host_vars/")
    }
    gpu08 = hosts["gpu08"]
    assert gpu08["rail_ips"][0] == {"netdev": "ib0", "address": "10.10.1.18/19"}
    assert gpu08["rail_ips"][7] == {"netdev": "ib7", "address": "10.10.225.18/19"}
    assert gpu08["storage_ips"] == [
        {"netdev": "ib8", "address": "10.30.1.18/17"},
        {"netdev": "ib9", "address": "10.30.129.18/17"},
    ]
    assert "frontend_ip" not in gpu08
    # Beside them (files/hosts/), the node's own rendered files: its host network files.
    head_files = yaml.safe_load(rendered["files/hosts/slurm-head.yml"])
    assert {entry["family"] for entry in head_files} == {"host_network"}
    assert hosts["slurm-head"] == {
        "ansible_host": "10.0.1.2",
        "clustergen_address": "10.0.1.2",
        "frontend_ip": {"netdev": "eno2", "address": "172.16.0.10/24"},
    }
    assert hosts["oss04"]["storage_ips"] == [
        {"netdev": "ib0", "address": "10.30.0.9/17"},
        {"netdev": "ib1", "address": "10.30.128.9/17"},
    ]
    assert "rail_ips" not in hosts["oss04"]


def test_the_reference_inventory_has_no_interface_addresses() -> None:
    files = render_all(_cluster(_data(EXAMPLES / "ml-training-8node.yaml")))
    inventory = [a.text for path, a in files.items() if path.startswith("inventory/")]
    assert len(inventory) > 14  # hosts.yml, the group_vars and a host_vars file per node
    for key in ("rail_ips", "storage_ips", "frontend_ip"):
        assert not [text for text in inventory if key in text]


def test_ansible_reads_the_interface_addresses(rendered: dict[str, str], tmp_path: Path) -> None:
    inventory_tool = tool("ansible-inventory")
    if inventory_tool is None:
        skip_or_fail("needs ansible-inventory")
    for path, text in rendered.items():
        if path.startswith("inventory/hosts.yml") or path.startswith("inventory/host_vars/"):
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
    out = subprocess.run(
        [inventory_tool, "-i", str(tmp_path / "inventory"), "--host", "gpu01"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    variables = json.loads(out)
    assert [r["address"] for r in variables["rail_ips"]][-1] == "10.10.225.11/19"
    assert variables["storage_ips"][1] == {"netdev": "ib9", "address": "10.30.129.11/17"}


def _every_address(cluster: ResolvedCluster) -> list[str]:
    """Every interface address of every node, and the gateways."""
    network = cluster.spec.network
    found = [
        g for n in (network.management, network.bmc, network.frontend) if n and (g := n.gateway)
    ]
    for host in cluster.hosts:
        found += [a for a in (host.management_ip, host.bmc_ip) if a]
        rails = host.rail_addresses(network.fabric)
        found += [a.address for a in rails] or ([host.fabric_ip] if host.fabric_ip else [])
        found += [a.address for a in host.storage_addresses(network.storage)]
        frontend = host.frontend_address(network.frontend)
        found += [frontend.address] if frontend else []
    return found


@pytest.mark.parametrize(
    ("group", "key", "address"),
    [
        (1, "fabric_ip", "10.10.1.12"),  # gpu02's rail 1
        (1, "fabric_ip", "10.10.33.12"),  # gpu02's rail 2
        (1, "fabric_ip", "10.10.225.18"),  # gpu08's rail 8
        (1, "fabric_ip", "10.10.31.254"),  # free, the last host of rail 1's subnet
        (2, "storage_ip", "10.30.129.11"),  # gpu01's second storage interface
        (2, "storage_ip", "10.30.1.11"),  # gpu01's first
        (2, "storage_ip", "10.30.0.100"),  # free
        (1, "frontend_ip", "172.16.0.1"),  # the front-end gateway
    ],
)
def test_a_valid_spec_uses_no_interface_address_twice(group: int, key: str, address: str) -> None:
    """The duplicate check reads only each node's first address per network; rails and
    storage interfaces 2.. follow from the range and subnet checks (checks/addresses.py,
    _no_reuse). Whatever address is moved onto another's, the spec is refused or every
    address of every interface is still distinct."""
    data = _data()
    before = data["nodes"][group].get(key)
    taken = [a for a in _every_address(_cluster(data)) if a != before]
    data["nodes"][group][key] = address
    cluster, errors = _validate(data)
    if cluster is None:
        assert errors
    else:
        assert address not in taken
        everything = _every_address(cluster)
        assert len(everything) == len(set(everything))


def test_lnet_over_the_management_ethernet_without_a_fabric() -> None:
    """A cluster without a fabric runs LNet over plain TCP on the management network: each
    node's NID is its management_ip@tcp0 on its management interface (issue 41: real sites
    that `import slurm` and audit meet). o2ib needs a fabric: no NID then, said."""
    data = _data(EXAMPLES / "ml-training-8node.yaml")
    del data["network"]["fabric"]
    for profile in data["hardware"].values():
        profile["interfaces"].pop("fabric", None)
    for group in data["nodes"]:
        group.pop("fabric_ip", None)
    data["storage"]["lustre"]["lnet"] = "tcp0"
    files = {path: a.text for path, a in render_all(_cluster(copy.deepcopy(data))).items()}
    assert "What=10.0.1.5@tcp0:/training" in files["lustre/client/mnt-lustre.mount"]
    lnet = yaml.safe_load(files["lustre/lnet/hgx-h100.conf"])
    assert lnet["net"] == [{"net type": "tcp0", "local NI(s)": [{"interfaces": {0: "eno1"}}]}], lnet
    data["storage"]["lustre"]["lnet"] = "o2ib0"
    assert any("has no fabric_ip for its NID on o2ib0" in e for e in _errors(data))
