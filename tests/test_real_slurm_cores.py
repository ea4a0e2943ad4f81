"""gres.conf Cores= from a topology table, handed to the real `slurmd -G`.

slurmd checks Cores= against the CPUs of the machine it runs on (testbed.md), so
the reference specs' 112-core HGX table cannot be checked here. This test gives
the edge spec's GPU profile this machine's own core count (os.sched_getaffinity)
as one socket, and a topology table that spreads its GPUs over those cores,
then requires slurmd -G to read the rendered gres.conf with no error or warning.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from support.paths import REFERENCE_SPECS
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
