"""Slurm's topology from the fabric graph and the NVLink domains (issue 23): the tree rule
(switches that share what is below them become one Slurm switch, always a tree), blocks
for NVLink domains, topology.yaml from Slurm 25.05 when partitions need both, and the
checks on what the pinned Slurm accepts. The real daemons read these files in
test_real_slurm_topology.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from test_rail_fabric import RAILS, _rail_spec, _with_service_under_spines

from clustergen.model.common import expand_hostlist
from clustergen.outputs.slurm.derive import derive_slurm
from clustergen.render import render_families
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.slurm_topology import (
    SwitchLine,
    slurm_hostlist,
    slurm_topology,
    tree_switches,
)
from clustergen.spec.load import LoadedSpec
from clustergen.templating import environment
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES

Data = dict[str, Any]

NVL_SPEC = """
version: 1
cluster: {name: nvl, domain: nvl.example.org}
software:
  os: ubuntu-24.04
  nvidia_driver: 570.133.20
  cuda: 12.8.1
  nccl: 2.26.2
  slurm: 24.11.5
hardware:
  tray:
    rack_units: 1
    cpu: {sockets: 2, cores_per_socket: 72, threads_per_core: 1}
    memory_gib: 960
    reserved_memory_gib: 32
    gpu: {model: b200-sxm-180gb, count: 4, nvlink_domain: {trays: 4, switch_trays: 2}}
    fabric_hcas: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]
    interfaces: {management: eno1, fabric: ib0}
  cpu:
    rack_units: 1
    cpu: {sockets: 2, cores_per_socket: 32, threads_per_core: 2}
    memory_gib: 512
    reserved_memory_gib: 16
    fabric_hcas: [mlx5_0]
    interfaces: {management: eno1, fabric: ib0}
  head:
    rack_units: 1
    cpu: {sockets: 1, cores_per_socket: 16, threads_per_core: 2}
    memory_gib: 128
    interfaces: {management: eno1}
network:
  management: {cidr: 10.0.1.0/24, gateway: 10.0.1.1}
  fabric:
    type: infiniband
    rate: ndr
    cidr: 10.10.0.0/16
    switches:
      - {name: leaf1, nodes: "gb[1-4],cpu1", uplinks: 17}
      - {name: leaf2, nodes: "gb[5-8],cpu2", uplinks: 17}
      - {name: spine1, switches: "leaf[1-2]"}
nodes:
  - {names: "gb[1-8]", hardware: tray, roles: [compute], management_ip: 10.0.1.11,
     fabric_ip: 10.10.1.11}
  - {names: "cpu[1-2]", hardware: cpu, roles: [compute], management_ip: 10.0.1.31,
     fabric_ip: 10.10.1.31}
  - {names: head1, hardware: head, roles: [slurm_controller, login], management_ip: 10.0.1.2}
racks:
  - name: nvl1
    height_u: 48
    devices:
      - {u: 1, node: gb1}
      - {u: 2, node: gb2}
      - {u: 3, node: gb3}
      - {u: 4, node: gb4}
      - {u: 10, node: cpu1}
      - {u: 20, node: head1}
  - name: nvl2
    height_u: 48
    devices:
      - {u: 1, node: gb5}
      - {u: 2, node: gb6}
      - {u: 3, node: gb7}
      - {u: 4, node: gb8}
      - {u: 10, node: cpu2}
slurm:
  controllers: [head1]
  partitions:
    - {name: gpu, nodes: "gb[1-8]", default: true, max_time: "1-00:00:00"}
    - {name: cpu, nodes: "cpu[1-2]", max_time: "1-00:00:00"}
"""


def nvl_spec(
    slurm: str = "24.11.5", fabric: bool = True, cpu_partition: bool = True, os: str | None = None
) -> Data:
    """Two NVLink domains of 4 trays (racks nvl1, nvl2), two CPU nodes, one fabric tree
    over all of them; the gpu partition lies within the domains, the cpu one does not."""
    data: Data = yaml.safe_load(NVL_SPEC)
    data["software"]["slurm"] = slurm
    if os is not None:
        data["software"]["os"] = os
    if not fabric:
        del data["network"]["fabric"]
        for group in data["nodes"]:
            group.pop("fabric_ip", None)
        for profile in data["hardware"].values():
            profile.pop("fabric_hcas", None)
            profile["interfaces"].pop("fabric", None)
    if not cpu_partition:
        data["slurm"]["partitions"] = data["slurm"]["partitions"][:1]
        data["nodes"][1]["roles"] = ["login"]
    return data


def _cluster(data: Data) -> tuple[ResolvedCluster, list[str]]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems if p.code.severity == "error"]
    return cluster, [p.code.name for p in problems]


def _problems(data: Data) -> list[str]:
    _, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    return [p.format() for p in problems if p.code.name.startswith("slurm.")]


def _files(cluster: ResolvedCluster) -> dict[str, str]:
    artifacts = render_families(cluster, environment(), ["slurm"])["slurm"]
    return {a.path: a.text for a in artifacts}


def _lines(switches: list[SwitchLine]) -> list[tuple[str, str | None, str | None]]:
    return [(s.name, s.nodes, s.switches) for s in switches]


def assert_tree(switches: list[SwitchLine], compute: set[str]) -> None:
    """Slurm's tree: unique names, one parent per switch, every Slurm node on one leaf, every
    child a switch of the file."""
    names = [s.name for s in switches]
    assert len(names) == len(set(names)), names
    parents: dict[str, str] = {}
    leaf_of: dict[str, str] = {}
    for switch in switches:
        for child in expand_hostlist(switch.switches) if switch.switches else ():
            assert child in names, (switch.name, child)
            assert child not in parents, f"{child} under {parents.get(child)} and {switch.name}"
            parents[child] = switch.name
        for node in expand_hostlist(switch.nodes) if switch.nodes else ():
            assert node not in leaf_of, f"{node} on {leaf_of.get(node)} and {switch.name}"
            leaf_of[node] = switch.name
    assert set(leaf_of) == compute


# --- the tree ---------------------------------------------------------------------------


def test_without_a_fabric_slurm_gets_no_topology() -> None:
    data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    del data["network"]["fabric"]["switches"]
    cluster, _ = _cluster(data)
    assert slurm_topology(cluster).kind is None
    files = _files(cluster)
    assert "slurm/topology.conf" not in files and "slurm/topology.yaml" not in files
    assert "TopologyPlugin" not in files["slurm/slurm.conf"]


def test_a_one_parent_tree_is_written_as_it_stands() -> None:
    data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    cluster, _ = _cluster(data)
    network = slurm_topology(cluster)
    assert network.kind == "tree"
    assert _lines(network.switches) == [
        ("ib-leaf01", "gpu[01-04]", None),
        ("ib-leaf02", "gpu[05-08]", None),
        ("ib-spine01", None, "ib-leaf[01-02]"),
    ]
    assert all(s.stands_for is None for s in network.switches)


def test_a_units_rail_leaves_are_one_slurm_switch_and_the_spines_over_them_another() -> None:
    cluster, _ = _cluster(_with_service_under_spines(_rail_spec()))
    switches = tree_switches(cluster)
    assert [(s.name, s.nodes, s.switches, s.stands_for) for s in switches] == [
        ("su1-leaf", "gpu[01-04]", None, "su1-leaf[1-8]"),
        ("su2-leaf", "gpu[05-08]", None, "su2-leaf[1-8]"),
        ("spine", None, "su1-leaf,su2-leaf", "spine[1-2]"),
    ]
    assert_tree(switches, {f"gpu{n:02d}" for n in range(1, 9)})
    text = _files(cluster)["slurm/topology.conf"]
    assert "# su1-leaf: su1-leaf[1-8]\nSwitchName=su1-leaf Nodes=gpu[01-04]\n" in text
    assert text.rstrip().endswith("SwitchName=spine Switches=su1-leaf,su2-leaf")


def test_cores_over_every_spine_are_one_top_switch() -> None:
    pattern = {**RAILS, "spines": "spine[01-04]", "cores": "core[1-2]", "core_uplinks": 4}
    cluster, _ = _cluster(_rail_spec(pattern))
    assert _lines(tree_switches(cluster))[2:] == [
        ("spine", None, "su1-leaf,su2-leaf"),
        ("core", None, "spine"),
    ]


def test_a_rail_only_unit_is_one_switch_without_a_parent() -> None:
    pattern = {key: value for key, value in RAILS.items() if key not in ("spines", "uplinks")}
    pattern["units"] = "su1"
    data = _rail_spec(pattern)
    data["network"]["fabric"]["switches"] = [pattern, {"name": "service", "nodes": "slurm-head"}]
    cluster, _ = _cluster(data)
    # The service leaf holds no Slurm compute node, so Slurm never hears of it.
    assert _lines(tree_switches(cluster)) == [("su1-leaf", "gpu[01-08]", None)]


def _irregular(spines: list[Data]) -> Data:
    """gpu[01-08] in two units of 4 on rail leaves a1,a2 / b1,b2, under the given spines."""
    data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    leaves = [
        {"name": f"{unit}{rail}", "nodes": nodes, "rail": rail}
        for unit, nodes in (("a", "gpu[01-04]"), ("b", "gpu[05-08]"))
        for rail in (1, 2)
    ]
    data["hardware"]["hgx-h100"]["fabric_hcas"] = ["mlx5_0", "mlx5_1"]
    data["network"]["fabric"]["switches"] = [
        *leaves,
        {"name": "service", "nodes": "slurm-head,mds01,oss[01-04]"},
        *spines,
    ]
    return data


def test_spines_sharing_a_unit_merge_so_each_unit_keeps_one_parent() -> None:
    # Unit a goes up to s1 and s2, unit b to s2 and s3: s2 joins them, so s1, s2 and s3
    # become one Slurm switch (a first-member name: they share no name but 's').
    data = _irregular(
        [
            {"name": "s1", "switches": "a[1-2],service"},
            {"name": "s2", "switches": "a[1-2],b[1-2],service"},
            {"name": "s3", "switches": "b[1-2],service"},
        ]
    )
    cluster, _ = _cluster(data)
    switches = tree_switches(cluster)
    assert _lines(switches) == [
        ("a", "gpu[01-04]", None),
        ("b", "gpu[05-08]", None),
        ("s", None, "a,b"),
    ]
    assert switches[2].stands_for == "s[1-3]"
    assert_tree(switches, {f"gpu{n:02d}" for n in range(1, 9)})


def test_a_leaf_under_a_spine_and_a_core_gets_the_core_alone() -> None:
    # a1 hangs from spine x and, directly, from core c above x: c takes x's Slurm switch,
    # and a's unit stays under x only.
    data = _irregular(
        [
            {"name": "x", "switches": "a[1-2],b[1-2]"},
            {"name": "c", "switches": "x,a1"},
        ]
    )
    data["network"]["fabric"]["switches"][4]["uplinks"] = 1
    cluster, _ = _cluster(data)
    switches = tree_switches(cluster)
    assert _lines(switches) == [
        ("a", "gpu[01-04]", None),
        ("b", "gpu[05-08]", None),
        ("x", None, "a,b"),
        ("c", None, "x"),
    ]
    assert_tree(switches, {f"gpu{n:02d}" for n in range(1, 9)})


def test_merged_names_that_clash_fall_back_to_the_first_member() -> None:
    # Units named leaf1/leaf2 per rail share the name 'leaf' with each other: both fall back.
    data = _irregular([{"name": "spine", "switches": "a[1-2],b[1-2]"}])
    switches = data["network"]["fabric"]["switches"]
    renames = {"a1": "leaf1-r1", "a2": "leaf2-r2", "b1": "leaf3-r1", "b2": "leaf4-r2"}
    for switch in switches:
        switch["name"] = renames.get(switch["name"], switch["name"])
    switches[-1]["switches"] = "leaf1-r1,leaf2-r2,leaf3-r1,leaf4-r2"
    cluster, _ = _cluster(data)
    assert _lines(tree_switches(cluster)) == [
        ("leaf1-r1", "gpu[01-04]", None),
        ("leaf3-r1", "gpu[05-08]", None),
        ("spine", None, "leaf1-r1,leaf3-r1"),
    ]


def test_switch_lists_never_put_a_bracket_inside_a_name() -> None:
    assert slurm_hostlist(["su1-leaf", "su2-leaf"]) == "su1-leaf,su2-leaf"
    assert slurm_hostlist(["leaf01", "leaf02", "spine"]) == "leaf[01-02],spine"


# --- blocks and the choice --------------------------------------------------------------


def test_nvlink_domains_alone_are_topology_block() -> None:
    data = nvl_spec(fabric=False, cpu_partition=False)
    data["slurm"]["topology"] = {"block_sizes": [4, 8]}
    cluster, found = _cluster(data)
    files = _files(cluster)
    assert "TopologyPlugin=topology/block" in files["slurm/slurm.conf"]
    assert "slurm/topology.yaml" not in files
    body = [line for line in files["slurm/topology.conf"].splitlines() if line[:1] not in "#"]
    assert body == [
        "BlockName=nvl1 Nodes=gb[1-4]",
        "BlockName=nvl2 Nodes=gb[5-8]",
        "BlockSizes=4,8",
    ]
    assert not [code for code in found if code.startswith("slurm.")]


def test_every_partition_in_nvlink_domains_takes_block_over_the_tree() -> None:
    cluster, found = _cluster(nvl_spec(cpu_partition=False))
    network = slurm_topology(cluster)
    assert network.kind == "block" and derive_slurm(cluster).topology == []
    assert "slurm.nvlink-domains-not-given" not in found


def test_partitions_in_and_out_of_nvlink_domains_get_topology_yaml_from_25_05() -> None:
    cluster, found = _cluster(nvl_spec(slurm="25.05.3"))
    files = _files(cluster)
    assert "slurm/topology.conf" not in files
    conf = files["slurm/slurm.conf"]
    assert "TopologyPlugin" not in conf
    assert "PartitionName=gpu Nodes=gb[1-8] " in conf and " Topology=nvlink State=UP" in conf
    assert " Topology=fabric State=UP" in conf
    topologies = yaml.safe_load(files["slurm/topology.yaml"])
    assert topologies == [
        {
            "topology": "fabric",
            "cluster_default": True,
            "tree": {
                "switches": [
                    {"switch": "leaf1", "nodes": "cpu1,gb[1-4]"},
                    {"switch": "leaf2", "nodes": "cpu2,gb[5-8]"},
                    {"switch": "spine1", "children": "leaf[1-2]"},
                ]
            },
        },
        {
            "topology": "nvlink",
            "cluster_default": False,
            "block": {
                "blocks": [
                    {"block": "nvl1", "nodes": "gb[1-4]"},
                    {"block": "nvl2", "nodes": "gb[5-8]"},
                ]
            },
        },
    ]
    assert not [code for code in found if code.startswith("slurm.")]


def test_without_a_fabric_the_other_partitions_get_a_flat_topology() -> None:
    cluster, _ = _cluster(nvl_spec(slurm="26.05.1", fabric=False))
    topologies = yaml.safe_load(_files(cluster)["slurm/topology.yaml"])
    assert topologies[0] == {"topology": "flat", "cluster_default": True, "flat": True}


def test_before_25_05_partitions_outside_the_domains_keep_the_tree_with_a_warning() -> None:
    data = nvl_spec(slurm="24.11.5")
    cluster, _ = _cluster(data)
    assert slurm_topology(cluster).kind == "tree"
    (warning,) = _problems(data)
    assert warning.endswith("[slurm.nvlink-domains-not-given]")
    assert "partition 'cpu' has nodes outside NVLink domains" in warning
    assert "Slurm gets the fabric's tree instead" in warning


def test_before_23_11_there_is_no_block_plugin() -> None:
    data = nvl_spec(slurm="22.05.8", cpu_partition=False, os="debian-12")
    cluster, _ = _cluster(data)
    assert slurm_topology(cluster).kind == "tree"
    messages = _problems(data)
    assert any("Slurm 22.05.8 has no topology/block" in m for m in messages), messages


@pytest.mark.parametrize(
    ("sizes", "slurm", "code"),
    [
        ([4, 12], "24.11.5", "slurm.block-sizes-invalid"),  # 12 is 4 x 3
        ([8, 4], "24.11.5", "slurm.block-sizes-invalid"),  # not ascending
        ([4, 8], "23.11.10", "slurm.block-sizes-unsupported"),
        ([8], "24.11.5", "slurm.block-too-small"),  # 4-tray blocks under a base of 8
    ],
)
def test_block_sizes_slurm_refuses_are_errors(sizes: list[int], slurm: str, code: str) -> None:
    data = nvl_spec(slurm=slurm, fabric=False, cpu_partition=False)
    data["slurm"]["topology"] = {"block_sizes": sizes}
    messages = _problems(data)
    assert [m for m in messages if m.endswith(f"[{code}]")], messages


def test_block_sizes_without_blocks_are_unused() -> None:
    data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    data["slurm"]["topology"] = {"block_sizes": [4]}
    data["software"]["slurm"] = "24.11.5"
    assert any(m.endswith("[slurm.block-sizes-unused]") for m in _problems(data))


def test_a_domain_smaller_than_the_first_is_refused_before_25_05_only() -> None:
    def spec(slurm: str) -> Data:
        data = nvl_spec(slurm=slurm, fabric=False, cpu_partition=False)
        data["network"]["nvlink_domains"] = [
            {"name": "big", "nodes": "gb[1-4]"},
            {"name": "small", "nodes": "gb[5-7]"},
            {"name": "one", "nodes": "gb8"},
        ]
        return data

    (error,) = [m for m in _problems(spec("24.11.5")) if "block-too-small" in m]
    assert "blocks small (3), one (1) do not" in error
    assert "network.nvlink_domains[1].nodes" in error
    exact = [m for m in _problems(spec("23.11.10")) if "block-too-small" in m]
    assert exact and "exactly the base block's 4" in exact[0]
    assert not [m for m in _problems(spec("25.05.3")) if "block-too-small" in m]


def test_a_larger_rail_fabric_stays_a_tree() -> None:
    # Four units of 2 nodes, 8 rails, 4 spines each over every leaf, 2 cores.
    pattern = copy.deepcopy(RAILS)
    pattern.update(units="su[1-4]", spines="spine[1-4]", cores="core[1-2]", core_uplinks=2)
    cluster, _ = _cluster(_rail_spec(pattern))
    switches = tree_switches(cluster)
    assert_tree(switches, {f"gpu{n:02d}" for n in range(1, 9)})
    assert [s.name for s in switches] == [
        "su1-leaf",
        "su2-leaf",
        "su3-leaf",
        "su4-leaf",
        "spine",
        "core",
    ]


def test_topology_plugin_in_slurm_options_stays_refused() -> None:
    data = nvl_spec(slurm="25.05.3")
    data["slurm"]["options"] = {"TopologyPlugin": "topology/block"}
    (refused,) = [m for m in _problems(data) if m.endswith("[slurm.option-derived]")]
    assert "network.nvlink_domains" in refused
