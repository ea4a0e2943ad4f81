"""gres.conf Cores= from a topology table, handed to the real `slurmd -G`.

slurmd checks Cores= against the CPUs of the machine it runs on (testbed.md), so
the reference specs' 112-core HGX table cannot be checked here. This test gives
the edge spec's GPU profile this machine's own core count (os.sched_getaffinity)
as one socket, and a topology table that spreads its GPUs over those cores,
then requires slurmd -G to read the rendered gres.conf with no error or warning.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from support.paths import DATA, EXAMPLES, REFERENCE_SPECS
from support.realslurm.testbed import SlurmTestbed, require_real_slurm

pytestmark = pytest.mark.daemons

EDGE = next(p for p in REFERENCE_SPECS if p.stem == "edge-roce-2node")


def _spec_for_this_machine(path: Path) -> int:
    """Write the edge spec with a topology table over this machine's cores; its GPU count."""
    cores = len(os.sched_getaffinity(0))
    yaml = YAML()
    data = yaml.load(EDGE.read_text(encoding="utf-8"))
    profile = data["hardware"]["l40s-4gpu"]
    profile["cpu"] = {"sockets": 1, "cores_per_socket": cores, "threads_per_core": 1}
    gpus = profile["gpu"]["count"]
    profile["topology"] = {
        "hcas": [
            {"name": "mlx5_0", "numa_node": 0, "role": "compute"},
            {"name": "mlx5_1", "numa_node": 0, "role": "compute"},
        ],
        "gpus": [
            {"index": i, "numa_node": 0, "cores": str(i % cores), "hca": f"mlx5_{i % 2}"}
            for i in range(gpus)
        ],
    }
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump(data, handle)
    return int(gpus)


def test_slurmd_reads_gres_conf_with_cores(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    spec = tmp_path / "edge-with-topology.yaml"
    gpus = _spec_for_this_machine(spec)
    result = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    gres_conf = (tmp_path / "out" / "slurm" / "gres.conf").read_text(encoding="utf-8")
    assert gres_conf.count(" Cores=") == gpus, gres_conf
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        report = bed.slurmd_gres("lab1", gpu_count=gpus)
        assert report.ok, report.output
        assert report.gpu_count("l40s") == gpus, report.output
        assert report.output.count(" Cores=") == gpus, report.output


# --- the profiles' own CPUs, through hwloc's synthetic topology --------------------------

# The DGX A100's topology in NPS4 (8 NUMA nodes): `nvidia-smi topo -m` of a DGX A100 places
# GPUs 0-1 with mlx5_0 on NUMA node 3, GPUs 2-3 with mlx5_2 on 1, GPUs 4-5 with mlx5_6 on
# 7 and GPUs 6-7 with mlx5_8 on 5 (NVIDIA DGX A100 User Guide, "Network Ports and GPU
# affinity"); each NUMA node holds 16 of a socket's 64 cores.
_DGX_A100_NPS4 = {
    "hcas": [
        {"name": name, "numa_node": numa, "role": "compute"}
        for name, numa in (("mlx5_0", 3), ("mlx5_2", 1), ("mlx5_6", 7), ("mlx5_8", 5))
    ],
    "gpus": [
        {"index": i, "numa_node": numa, "cores": f"{numa * 16}-{numa * 16 + 15}", "hca": hca}
        for i, (numa, hca) in enumerate(
            [(3, "mlx5_0")] * 2 + [(1, "mlx5_2")] * 2 + [(7, "mlx5_6")] * 2 + [(5, "mlx5_8")] * 2
        )
    ],
}


def _spec(case: str, path: Path) -> None:
    yaml = YAML()
    if case == "dgx-a100-nps4":
        data = yaml.load((DATA / "mixed-fleet.yaml").read_text(encoding="utf-8"))
        profile = data["hardware"]["dgx-a100"]
        profile["cpu"]["numa_per_socket"] = 4
        profile["topology"] = _DGX_A100_NPS4
    else:
        data = yaml.load((EXAMPLES / f"{case}.yaml").read_text(encoding="utf-8"))
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump(data, handle)


# case: (node, hwloc's synthetic topology of its profile, GPUs, the Cores= sets gres.conf
# must give them: a socket's cores, or a NUMA node's under NPS4)
_PROFILES = {
    "superpod-rail-128node": ("gpu001", "pack:2 core:56 pu:2", 8, {"0-55", "56-111"}),
    "gb200-nvl72-4rack": ("gb001", "pack:2 core:72 pu:1", 4, {"0-71", "72-143"}),
    # Vera: 88 cores a socket, two threads a core (Spatial Multithreading).
    "vera-rubin-nvl72-spectrumx": ("vr001", "pack:2 core:88 pu:2", 4, {"0-87", "88-175"}),
    "dgx-a100-nps4": (
        "gpu05",
        "pack:2 numa:4 core:16 pu:2",
        8,
        {"16-31", "48-63", "80-95", "112-127"},
    ),
}


@pytest.mark.parametrize("case", sorted(_PROFILES))
def test_slurmd_reads_gres_conf_on_the_profiles_own_cpus(tmp_path: Path, cli, case: str) -> None:  # type: ignore[no-untyped-def]
    """`slurmd -G` of the rendered gres.conf, on the profile's sockets, NUMA nodes, cores and
    threads (HWLOC_SYNTHETIC: testbed.md), every Cores= kept with no error; on 4 cores a
    socket it refuses them ("Invalid GRES data"), so the check has teeth."""
    require_real_slurm()
    node, synthetic, gpus, wanted = _PROFILES[case]
    spec = tmp_path / f"{case}.yaml"
    _spec(case, spec)
    result = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    gres_conf = (tmp_path / "out" / "slurm" / "gres.conf").read_text(encoding="utf-8")
    rendered = {
        line.split(" Cores=")[1].split()[0]
        for line in gres_conf.splitlines()
        if line.startswith("NodeName=") and node_in(node, line) and " Cores=" in line
    }
    assert rendered == wanted, gres_conf
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed", hwloc=synthetic) as bed:
        report = bed.slurmd_gres(node, gpu_count=gpus)
        assert report.ok, report.output
        assert report.output.count(" Cores=") == gpus, report.output
        assert set(re.findall(r" Cores=(\S+)", report.output)) == wanted, report.output
    half = synthetic.replace(f"core:{synthetic.split('core:')[1].split()[0]}", "core:4")
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed-small", hwloc=half) as bed:
        report = bed.slurmd_gres(node, gpu_count=gpus)
        assert not report.ok and "Invalid GRES data for gpu" in report.output, report.output


def node_in(node: str, line: str) -> bool:
    """Whether gres.conf's NodeName= hostlist of `line` names `node`."""
    import hostlist

    names = line.split()[0].removeprefix("NodeName=")
    return node in hostlist.expand_hostlist(names)
