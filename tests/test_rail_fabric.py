"""Rail-optimised, multi-parent fabrics (issue 23): a leaf per rail per scalable unit, several
spines, cores; the compact `rails` pattern and the long form it stands for; the checks that
every HCA is cabled once and every plane joined."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from clustergen.resolve.fabric import blocking, tiers
from clustergen.spec.cable_plan import cables
from clustergen.spec.load import LoadedSpec
from clustergen.spec.long_form import expand
from clustergen.validate import validate

from support.paths import EXAMPLES
from support.specs import validated

Data = dict[str, Any]

RAILS = {
    "rails": 8,
    "units": "su[1-2]",
    "nodes": "gpu[01-08]",
    "leaf": "{unit}-leaf{rail}",
    "spines": "spine[1-2]",
    "uplinks": 2,
}
SERVICE = {"name": "service", "nodes": "slurm-head,mds01,oss[01-04]", "uplinks": 2}


def _rail_spec(pattern: Data | None = None) -> Data:
    """The 8-node reference spec on a rail-optimised fabric: 2 units of 4 nodes, 8 rails,
    every leaf up to both spines with 2 cables, the service nodes on a leaf of their own."""
    data: Data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    data["network"]["fabric"]["switches"] = [pattern or RAILS, SERVICE]
    # The service leaf goes up to the spines, too: a spine lists it beside the rail leaves.
    return data


def _long_form(data: Data) -> Data:
    out = expand(data)
    assert not out.errors and not out.problems, (out.errors, out.problems)
    result: Data = out.data
    return result


def _with_service_under_spines(data: Data) -> Data:
    data = _long_form(data)
    for switch in data["network"]["fabric"]["switches"]:
        if switch["name"].startswith("spine"):
            switch["switches"] += ",service"
    return data


def test_the_pattern_writes_a_leaf_per_unit_and_rail_and_spines_over_all_of_them() -> None:
    switches = _long_form(_rail_spec())["network"]["fabric"]["switches"]
    assert switches[:2] == [
        {"name": "su1-leaf1", "nodes": "gpu[01-04]", "rail": 1, "uplinks": 2},
        {"name": "su1-leaf2", "nodes": "gpu[01-04]", "rail": 2, "uplinks": 2},
    ]
    assert switches[8] == {"name": "su2-leaf1", "nodes": "gpu[05-08]", "rail": 1, "uplinks": 2}
    assert switches[16:18] == [
        {"name": "spine1", "switches": "su1-leaf[1-8],su2-leaf[1-8]"},
        {"name": "spine2", "switches": "su1-leaf[1-8],su2-leaf[1-8]"},
    ]
    assert switches[18] == SERVICE


def test_spines_per_rail_and_cores_make_three_tiers() -> None:
    pattern = {**RAILS, "spines": "spine[01-16]", "spines_per_rail": 2, "cores": "core[1-2]"}
    pattern["core_uplinks"] = 4
    switches = _long_form(_rail_spec(pattern))["network"]["fabric"]["switches"]
    spines = [s for s in switches if s["name"].startswith("spine")]
    assert spines[0] == {"name": "spine01", "switches": "su1-leaf1,su2-leaf1", "uplinks": 4}
    assert spines[15] == {"name": "spine16", "switches": "su1-leaf8,su2-leaf8", "uplinks": 4}
    cores = [s for s in switches if s["name"].startswith("core")]
    assert cores == [
        {"name": "core1", "switches": "spine[01-16]"},
        {"name": "core2", "switches": "spine[01-16]"},
    ]


def test_a_rail_optimised_fabric_with_two_spines_validates_without_a_network_problem() -> None:
    cluster, found = validated(_with_service_under_spines(_rail_spec()))
    # The fabric's subnet manager is not the topology's (docs/subnet-manager.md).
    topology = [code for code in found if code != "network.subnet-manager-unset"]
    assert not [code for code in topology if code.split(".")[0] in ("network", "syntax")], found
    # Each rail leaf: 4 HCAs down, 2 cables to each of 2 spines up: non-blocking.
    rows = {b.name: b for b in blocking(cluster)}
    assert (rows["su1-leaf3"].hca_ports, rows["su1-leaf3"].up_cables) == (4, 4)
    assert rows["su1-leaf3"].factor == 1.0
    level = tiers(cluster)
    assert (level["su2-leaf8"], level["service"], level["spine2"]) == (0, 0, 1)


def test_each_rail_leaf_takes_its_rails_hca_of_every_node_once() -> None:
    cluster, _ = validated(_with_service_under_spines(_rail_spec()))
    rows = list(cables(cluster.spec, cluster.by_name, cluster.switch_ports))
    to_nodes = [(c.switch, c.peer, c.peer_port) for c in rows if c.kind == "node"]
    assert ("su1-leaf3", "gpu02", "mlx5_2") in to_nodes
    gpu02 = sorted(hca for switch, node, hca in to_nodes if node == "gpu02")
    assert gpu02 == [f"mlx5_{k}" for k in range(8)]
    # Leaf-to-spine: 16 rail leaves and the service leaf, 2 cables to each of 2 spines.
    assert sum(1 for c in rows if c.kind == "uplink") == 17 * 2 * 2


def test_a_leaf_under_two_spines_is_one_plane_and_a_spine_alone_splits_it() -> None:
    data = _with_service_under_spines(_rail_spec())
    assert "network.switch-forest" not in validated(data)[1]
    split = copy.deepcopy(data)
    for switch in split["network"]["fabric"]["switches"]:
        if switch["name"] == "spine2":
            switch["switches"] = "su2-leaf[1-8]"
        if switch["name"] == "spine1":
            switch["switches"] = "su1-leaf[1-8],service"
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=split))[1]
    forest = [p.message for p in problems if p.code.name == "network.switch-forest"]
    assert len(forest) == 8, forest  # each rail's two leaves, once per rail
    assert forest[0].startswith("the leaves of rail 1 form 2 parts that no switch joins")


def test_rails_without_spines_are_planes_of_their_own() -> None:
    # A rail-only fabric (one unit): each rail is one leaf, and nothing needs joining.
    pattern = {key: value for key, value in RAILS.items() if key not in ("spines", "uplinks")}
    pattern["units"] = "su1"
    data = _rail_spec(pattern)
    data["network"]["fabric"]["switches"] = [pattern, {**SERVICE, "uplinks": 1}]
    found = validated(data)[1]
    # The service leaf is a plane of its own, apart from the rails: no forest within a rail.
    assert "network.switch-forest" not in found, found


def test_a_catalog_model_gives_the_switch_its_ports() -> None:
    # QM8700 (HDR): 40 ports; a spine of that model over 16 leaves x 2 cables and the service
    # leaf's 2 uses 34 of them. Named SN5600 on this InfiniBand fabric, no radix is known and
    # the usual HDR switch (40, assumed) stands in.
    data = _with_service_under_spines(_rail_spec())
    for switch in data["network"]["fabric"]["switches"]:
        if switch["name"] == "spine1":
            switch["model"] = "QM8700"
        if switch["name"] == "spine2":
            switch["model"] = "sn5600"
    cluster, _ = validated(data)
    rows = {row.name: row for row in cluster.switch_ports}
    assert (rows["spine1"].ports, rows["spine1"].assumed, rows["spine1"].used) == (40, False, 34)
    assert (rows["spine2"].ports, rows["spine2"].assumed) == (40, True)
    data["network"]["fabric"]["switches"][16]["model"] = "sb7800"  # EDR: no HDR ports
    data["network"]["fabric"]["switches"][16]["ports"] = 32
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    assert "network.switch-ports-exceeded" in [p.code.name for p in problems]


def test_hostlists_written_for_slurm_fold_only_the_last_number() -> None:
    # python-hostlist would write su[1-4]-leaf1, which Slurm reads otherwise (and the spec's
    # own hostlist syntax refuses): the spines over rail 1 list its leaves one by one.
    from clustergen.spec.hosts import compress

    assert compress(["su1-leaf1", "su2-leaf1", "su3-leaf1"]) == "su1-leaf1,su2-leaf1,su3-leaf1"
    assert compress(["su1-leaf1", "su1-leaf2", "su2-leaf1"]) == "su1-leaf[1-2],su2-leaf1"
    pattern = {**RAILS, "spines": "spine[01-16]", "spines_per_rail": 2}
    cluster, found = validated(_rail_spec(pattern))
    assert "syntax.hostlist" not in found
    assert cluster.switch_children[16] == ("su1-leaf1", "su2-leaf1")


def test_pods_have_their_own_spines_and_the_cores_join_spines_of_one_place() -> None:
    # 4 units of 2 nodes in 2 pods, 2 rails, 1 spine per rail per pod: spine1 (pod 1, rail
    # 1), spine2 (pod 1, rail 2), spine3 (pod 2, rail 1), spine4 (pod 2, rail 2); 4 cores
    # over the 2 places of a pod: core1-2 over rail 1's spines, core3-4 over rail 2's.
    pattern = {
        "rails": 2,
        "units": "su[1-4]",
        "nodes": "gpu[01-08]",
        "leaf": "{unit}-leaf{rail}",
        "units_per_pod": 2,
        "spines": "spine[1-4]",
        "spines_per_rail": 1,
        "cores": "core[1-4]",
    }
    switches = _long_form(_rail_spec(pattern))["network"]["fabric"]["switches"]
    named = {s["name"]: s.get("switches") for s in switches}
    assert named["spine1"] == "su1-leaf1,su2-leaf1"
    assert named["spine2"] == "su1-leaf2,su2-leaf2"
    assert named["spine4"] == "su3-leaf2,su4-leaf2"
    assert [named[f"core{k}"] for k in range(1, 5)] == [
        "spine[1,3]",
        "spine[1,3]",
        "spine[2,4]",
        "spine[2,4]",
    ]
    wrong = expand(_rail_spec({**pattern, "spines": "spine[1-3]"}))
    assert [p.message for p in wrong.problems] == [
        "3 spines are not 1 for each of 2 rails in each of 2 pods (4)"
    ]


def _messages(data: Data) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for problem in validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]:
        found.setdefault(problem.code.name, []).append(problem.message)
    return found


def test_a_single_unit_rail_fabric_is_judged_for_its_blocking_like_any_other() -> None:
    """One scalable unit: every node hangs from every rail leaf, but a transfer from one
    rail to another still goes through the spines (issue 40: a single-unit rail fabric
    blocked per leaf passed, where the tree form of the same cabling warned)."""
    blocked = _messages(_with_service_under_spines(_rail_spec({**RAILS, "units": "su1"})))
    # 8 HCA ports down, 2 cables to each of 2 spines up: 2:1, on each of the 8 rail leaves
    # (said once, the others named after it).
    rails = [m for m in blocked.get("network.leaf-oversubscribed", []) if m.startswith("rail")]
    assert len(rails) == 1 and "(and 7 more like it: " in rails[0], blocked
    assert rails[0].startswith("rail leaf blocked 2:1 (8 HCA ports down, 4 uplinks up"), rails
    assert "a transfer from one rail to another" in rails[0]
    # Cabled non-blocking (4 cables to each spine), no rail leaf is named.
    fine = _messages(
        _with_service_under_spines(_rail_spec({**RAILS, "units": "su1", "uplinks": 4}))
    )
    assert not [m for m in fine.get("network.leaf-oversubscribed", []) if m.startswith("rail")]
