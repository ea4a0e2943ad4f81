"""The fabric as drawn (clustergen.resolve.fabric): each leaf's blocking factor from its cables, the
oversubscription warning against each partition's max_blocking, and the uplink share that
bounds a job across leaves.
"""

from __future__ import annotations

from typing import Any

from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import blocking, uplink_share
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate, validate_cluster

from support.specs import example_data

Data = dict[str, Any]


def _cluster(data: Data) -> ResolvedCluster:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, problems
    return cluster


def _oversubscribed(data: Data) -> list[str]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return [
        f"{'.'.join(map(str, p.path))}: {p.message}"
        for p in problems
        if p.code.name == "network.leaf-oversubscribed"
    ]


def test_blocking_factor_comes_from_the_cables() -> None:
    # ib-leaf01: gpu01-04, 8 HCAs each; ib-leaf02: gpu05-08 (32), slurm-head (1), mds01 and
    # oss01-04 (2 each): 43. One uplink each, as cables.csv lists them; the spine has none.
    cluster = _cluster(example_data())
    assert [(b.name, b.hca_ports, b.up_cables, b.factor) for b in blocking(cluster)] == [
        ("ib-leaf01", 32, 1, 32.0),
        ("ib-leaf02", 43, 1, 43.0),
    ]
    rows = [r for r in cluster.switch_ports if r.name == "ib-leaf01"]
    assert sum(n for _, n in rows[0].hcas) == 32


def test_gpu_partition_across_leaves_warns_once_per_leaf_by_default() -> None:
    assert _oversubscribed(example_data()) == [
        f"network.fabric.switches.{index}: leaf blocked {ports}:1 ({ports} HCA ports down, "
        "1 uplink up, all at 200 Gb/s), above the 1:1 (non-blocking) that GPU partition "
        "'gpu-training' gets by default (slurm.partitions[0].max_blocking); a job across "
        f"leaves gets 1/{ports} of its HCAs' bandwidth: add uplinks, or set max_blocking to "
        "the ratio the design accepts"
        for index, ports in ((0, 32), (1, 43))
    ]


def test_declared_max_blocking_is_the_target() -> None:
    data = example_data()
    data["slurm"]["partitions"][0]["max_blocking"] = 40
    # debug (gpu01-02) sits on ib-leaf01 alone: its jobs never cross the uplink.
    assert [line.split(":")[0] for line in _oversubscribed(data)] == ["network.fabric.switches.1"]
    assert "above the max_blocking 40:1 of partition 'gpu-training'" in _oversubscribed(data)[0]
    data["slurm"]["partitions"][0]["max_blocking"] = 43
    assert _oversubscribed(data) == []


def test_a_partition_on_one_leaf_is_not_warned() -> None:
    data = example_data()
    data["slurm"]["partitions"][0]["nodes"] = "gpu[05-08]"
    data["slurm"]["partitions"][1]["nodes"] = "gpu[01-04]"
    assert _oversubscribed(data) == []


def test_a_partition_without_gpus_is_checked_only_when_it_declares_a_target() -> None:
    data = example_data()
    # Make the GPU profile a CPU one: no default target any more.
    del data["hardware"]["hgx-h100"]["gpu"]
    data["software"].pop("fabric_manager", None)
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    assert "network.leaf-oversubscribed" not in {p.code.name for p in problems}
    data["slurm"]["partitions"][0]["max_blocking"] = 8
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    assert [p.path for p in problems if p.code.name == "network.leaf-oversubscribed"] == [
        ("network", "fabric", "switches", 0),
        ("network", "fabric", "switches", 1),
    ]


def test_uplink_share_of_a_job_across_leaves() -> None:
    cluster = _cluster(example_data())
    members = set(cluster.partition_nodes[0])  # gpu01-08 under both leaves
    shared = uplink_share(cluster, members, 200, alone=False)
    assert shared is not None
    # 200 Gb/s shared by the 32 HCA ports of gpu01-04: 8 of them are 50 Gb/s.
    assert (shared.switch.name, shared.gbits, shared.sharing_ports) == ("ib-leaf01", 50.0, 32)
    alone = uplink_share(cluster, members, 200, alone=True)
    assert alone is not None and alone.gbits == 200.0
    # debug's gpu01-02 share ib-leaf01 and nothing else: no uplink carries their job.
    assert uplink_share(cluster, set(cluster.partition_nodes[1]), 200, alone=False) is None
