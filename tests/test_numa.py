"""NUMA nodes per socket (cpu.numa_per_socket: AMD NPS2/NPS4, Intel SNC): the topology
table counts them, and gres.conf gives each GPU the cores of its NUMA node. slurmd -G reads
the result on the profile's own CPUs in tests/test_real_slurm_cores.py."""

from __future__ import annotations

import copy
from typing import Any

from ruamel.yaml import YAML
from test_real_slurm_cores import _DGX_A100_NPS4

from clustergen.render import render_all

from support.paths import DATA
from support.specs import Data, validated

MIXED: Data = YAML(typ="safe").load((DATA / "mixed-fleet.yaml").read_text())


def _nps4(**cpu: Any) -> Data:
    data = copy.deepcopy(MIXED)
    profile = data["hardware"]["dgx-a100"]
    profile["cpu"].update({"numa_per_socket": 4, **cpu})
    profile["topology"] = copy.deepcopy(_DGX_A100_NPS4)
    return data


def _codes(data: Data) -> list[str]:
    from clustergen.spec.load import LoadedSpec
    from clustergen.validate import validate_cluster

    _, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    return [f"{p.code} {p.message}" for p in problems if p.code.severity == "error"]


def test_a_dgx_a100_in_nps4_is_written_as_it_is() -> None:
    """NUMA nodes 0-7 on two sockets; each GPU's Cores= is its NUMA node's 16 cores, not
    its socket's 64."""
    cluster, _ = validated(_nps4())
    gres = render_all(cluster)["slurm/gres.conf"].text
    lines = [line for line in gres.splitlines() if line.startswith("NodeName=gpu[05-08]")]
    assert [line.split(" File=")[1] for line in lines] == [
        "/dev/nvidia0 Cores=48-63",
        "/dev/nvidia1 Cores=48-63",
        "/dev/nvidia2 Cores=16-31",
        "/dev/nvidia3 Cores=16-31",
        "/dev/nvidia4 Cores=112-127",
        "/dev/nvidia5 Cores=112-127",
        "/dev/nvidia6 Cores=80-95",
        "/dev/nvidia7 Cores=80-95",
    ]


def test_a_numa_node_past_the_sockets_nodes_is_refused_and_says_how_to_split() -> None:
    data = copy.deepcopy(MIXED)
    profile = data["hardware"]["dgx-a100"]
    profile["topology"] = copy.deepcopy(_DGX_A100_NPS4)  # NUMA nodes up to 7, no NPS said
    errors = [e for e in _codes(data) if e.startswith("hardware.topology-numa")]
    assert errors and all("set cpu.numa_per_socket" in e for e in errors), errors
    data = _nps4()
    data["hardware"]["dgx-a100"]["topology"]["gpus"][0]["numa_node"] = 8
    assert _codes(data) == [
        "hardware.topology-numa NUMA node 8 is outside the profile's 2 socket(s) of 4 NUMA "
        "nodes each (0-7)"
    ]


def test_numa_nodes_that_do_not_divide_a_sockets_cores_are_refused() -> None:
    errors = _codes(_nps4(numa_per_socket=3))
    assert errors[0] == (
        "hardware.numa-uneven 3 NUMA nodes per socket do not divide its 64 cores: NPS and "
        "SNC split a socket's cores evenly"
    )
