"""NCCL settings from the fabric as drawn (issue 23): the HCA list in rail order, NCCL_CROSS_NIC
on rails that no switch joins, NCCL_COLLNET_ENABLE where the switches run SHARP for NCCL; and
the checks that hold network.fabric.sharp and the NVLink settings to where they apply."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from clustergen.render import render_all
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
# The profile's compute HCAs in a topology table, rail 1 first, not in name order.
HCAS = ["mlx5_3", "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_7", "mlx5_4", "mlx5_5", "mlx5_6"]


def _spec(pattern: Data | None = None, joined: bool = True) -> Data:
    """The 8-node reference spec on 8 rails of 2 units; with `joined`, the service leaf
    hangs under the spines too."""
    data: Data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    data["network"]["fabric"]["switches"] = [pattern or RAILS, SERVICE]
    out = expand(data)
    assert not out.errors and not out.problems, (out.errors, out.problems)
    data = out.data
    for switch in data["network"]["fabric"]["switches"]:
        if joined and switch["name"].startswith("spine"):
            switch["switches"] += ",service"
    return data


def _rail_only() -> Data:
    """Each rail its own plane: 2 spines per rail over that rail's leaves, no core."""
    pattern = {**RAILS, "spines": "spine[01-16]", "spines_per_rail": 2}
    return _spec(pattern, joined=False)


def _conf(data: Data, profile: str = "hgx-h100") -> str:
    cluster, _ = validated(data)
    return render_all(cluster)[f"nccl/{profile}/nccl.conf"].text


def test_the_hca_list_is_in_rail_order_as_the_cables_are() -> None:
    data = _spec()
    profile = data["hardware"]["hgx-h100"]
    profile["fabric_hcas"] = HCAS
    cluster, _ = validated(data)
    conf = render_all(cluster)["nccl/hgx-h100/nccl.conf"].text
    line = next(line for line in conf.splitlines() if line.startswith("NCCL_IB_HCA="))
    listed = [item.split(":")[0] for item in line.removeprefix("NCCL_IB_HCA==").split(",")]
    assert listed == HCAS
    # Rail k's leaf takes the k-th HCA of the list, on every node.
    rows = list(cables(cluster.spec, cluster.by_name, cluster.switch_ports))
    for rail in range(1, 9):
        leaf = (c for c in rows if c.switch.endswith(f"-leaf{rail}") and c.kind == "node")
        taken = {c.peer_port for c in leaf}
        assert taken == {listed[rail - 1]}, (rail, taken)


def test_rails_no_switch_joins_keep_nccl_on_one_rail() -> None:
    conf = _conf(_rail_only())
    assert (
        "# from network.fabric.switches[].rail: these nodes hang from 8 rails and no switch "
        "joins two, so NCCL keeps each ring and tree on one rail\nNCCL_CROSS_NIC=0\n" in conf
    )
    # Spines over the leaves of every rail join the rails: NCCL's default (2) stays.
    assert "NCCL_CROSS_NIC" not in _conf(_spec())


def test_a_fabric_of_one_plane_or_none_sets_no_cross_nic() -> None:
    reference: Data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    assert "NCCL_CROSS_NIC" not in _conf(reference)
    without = copy.deepcopy(reference)
    del without["network"]["fabric"]
    without.pop("storage", None)  # Lustre needs the fabric
    for group in without["nodes"]:
        group.pop("fabric_ip", None)
    conf = _conf(without)
    assert "NCCL_CROSS_NIC" not in conf and "NCCL_IB_HCA" not in conf


def _with_models(data: Data, model: str) -> Data:
    for switch in data["network"]["fabric"]["switches"]:
        switch["model"] = model
    data["network"]["fabric"]["sharp"] = True
    return data


def test_sharp_switches_turn_collnet_on_and_the_spec_may_turn_it_off() -> None:
    data = _with_models(_spec(), "qm8700")
    conf = _conf(data)
    assert "# from network.fabric.sharp: SHARP in the switches\nNCCL_COLLNET_ENABLE=1\n" in conf
    data["nccl"]["env"]["NCCL_COLLNET_ENABLE"] = 0
    assert conf.count("NCCL_COLLNET_ENABLE") == 1
    assert _conf(data).endswith("# from nccl.env.NCCL_COLLNET_ENABLE\nNCCL_COLLNET_ENABLE=0\n")
    assert "NCCL_COLLNET_ENABLE" not in _conf(_spec())


def _sharp_problems(data: Data) -> list[str]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return [p.message for p in problems if p.code.name == "nccl.sharp-unsupported"]


def test_sharp_needs_infiniband_rails_and_switches_that_offer_it_to_nccl() -> None:
    assert _sharp_problems(_with_models(_spec(), "qm9700")) == []
    unknown = _with_models(_spec(), "qm9700")
    for switch in unknown["network"]["fabric"]["switches"][:5]:
        switch["model"] = "acme-ib"
    (message,) = _sharp_problems(unknown)
    assert "5 of 19 switches are not a catalog model" in message
    assert "(su1-leaf1, su1-leaf2, su1-leaf3, ...)" in message
    tree: Data = yaml.safe_load((EXAMPLES / "ml-training-8node.yaml").read_text())
    (message,) = _sharp_problems(_with_models(tree, "qm8700"))
    assert message.endswith("no leaf carries a rail (the plugin needs each leaf on one HCA rail)")
    roce: Data = yaml.safe_load((EXAMPLES / "edge-roce-2node.yaml").read_text())
    found = _sharp_problems(_with_models(roce, "sn5600"))
    assert any("SHARP for NCCL runs on InfiniBand, and this fabric is roce" in m for m in found)
    assert any("not a catalog model whose SHARP NCCL's plugin can use" in m for m in found)
