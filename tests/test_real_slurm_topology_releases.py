"""The Slurm topologies clustergen renders from NVLink domains, handed to the releases that
read them (issue 23): topology/block in topology.conf to trixie's slurmctld 24.11, and
topology.yaml (a tree and a block topology, each partition naming its own) to sid's
26.05, both in the chroots of tests/support/realslurm/chroot.py. The rail fabric's tree
goes to both as well. Rendered files only: nothing is edited between render and daemon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_rail_fabric import RAILS, _rail_spec
from test_real_slurm_releases import RELEASES, ChrootFor, chroot_for
from test_slurm_topology import nvl_spec

from support.realslurm.chroot import run_controller

pytestmark = pytest.mark.daemons

__all__ = ["chroot_for"]  # the session fixture, used by name

BLOCKS = [
    "BlockName=nvl1 BlockIndex=0 Nodes=gb[1-4] BlockSize=4",
    "BlockName=nvl2 BlockIndex=1 Nodes=gb[5-8] BlockSize=4",
    "AggregatedBlock=nvl[1-2] BlockIndex=2 Nodes=gb[1-8] BlockSize=8",
]


def _render(data: dict[str, Any], tmp_path: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    return tmp_path / "out" / "slurm"


def test_24_11_takes_the_nvlink_domains_as_blocks(
    tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    data = nvl_spec(slurm=RELEASES["24.11"], fabric=False, cpu_partition=False)
    data["slurm"]["topology"] = {"block_sizes": [4, 8]}
    conf = _render(data, tmp_path, cli)
    assert (conf / "topology.conf").read_text().count("BlockName=") == 2
    assert "TopologyPlugin=topology/block" in (conf / "slurm.conf").read_text()
    report = run_controller(chroot_for("24.11"), conf, tmp_path / "check")
    print(report.summary())
    assert report.config_problems() == []
    assert report.raw["scontrol show topology"].splitlines() == BLOCKS


def test_26_05_takes_topology_yaml_with_a_topology_per_partition(
    tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    data = nvl_spec(slurm=RELEASES["26.05"])
    data["slurm"]["topology"] = {"block_sizes": [4, 8]}
    conf = _render(data, tmp_path, cli)
    assert not (conf / "topology.conf").exists()
    assert "TopologyPlugin" not in (conf / "slurm.conf").read_text()
    report = run_controller(chroot_for("26.05"), conf, tmp_path / "check", ["fabric", "nvlink"])
    print(report.summary())
    # The block topology names the trays only, and slurmctld says so once; the CPU nodes'
    # partition runs in the fabric topology (docs/slurm.md, "Which topology Slurm gets").
    (outside,) = report.config_problems()
    assert outside.endswith("warning: Blocks lack access to 2 nodes: cpu[1-2]"), outside
    assert report.partitions["gpu"].fields["Topology"] == "nvlink"
    assert report.partitions["cpu"].fields["Topology"] == "fabric"
    tree = [
        "SwitchName=leaf1 Level=0 LinkSpeed=0 Nodes=cpu1,gb[1-4]",
        "SwitchName=leaf2 Level=0 LinkSpeed=0 Nodes=cpu2,gb[5-8]",
        "SwitchName=spine1 Level=1 LinkSpeed=0 Nodes=cpu[1-2],gb[1-8] Switches=leaf[1-2]",
    ]
    assert sorted(report.raw["scontrol show topology fabric"].splitlines()) == sorted(tree)
    assert report.raw["scontrol show topology nvlink"].splitlines() == BLOCKS


@pytest.mark.parametrize("series", sorted(RELEASES))
def test_release_takes_the_tree_of_a_rail_optimised_fabric(
    series: str, tmp_path: Path, chroot_for: ChrootFor, cli
) -> None:  # type: ignore[no-untyped-def]
    data = _rail_spec({**RAILS, "cores": "core[1-2]", "core_uplinks": 2})
    data["software"]["slurm"] = RELEASES[series]
    conf = _render(data, tmp_path, cli)
    report = run_controller(chroot_for(series), conf, tmp_path / "check")
    print(report.summary())
    assert report.config_problems() == []
    shown = {name: (s.level, s.switches) for name, s in report.switches.items()}
    assert shown == {
        "su1-leaf": (0, ()),
        "su2-leaf": (0, ()),
        "spine": (1, ("su1-leaf", "su2-leaf")),
        "core": (2, ("spine",)),
    }
    assert report.switches["su2-leaf"].nodes == tuple(f"gpu{n:02d}" for n in range(5, 9))
