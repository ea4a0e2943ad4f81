"""The Slurm topology of a rail-optimised fabric, handed to the real slurmctld (issue 23).

The 8-node reference spec with its fabric written as the `rails` pattern (two units of
four nodes, 8 rails, two spines over every leaf, two cores over both spines) renders a
topology.conf in which each unit's rail leaves are one switch and each tier one switch
above them (docs/slurm.md "Topology"). Debian 12's slurmctld 22.05 must start on it
with no error and `scontrol show topology` must show exactly those switches, at their
levels, with each unit's nodes on its leaf.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_rail_fabric import RAILS, _rail_spec

from clustergen.model.common import expand_hostlist

from support.realslurm.testbed import SlurmTestbed, require_real_slurm

pytestmark = pytest.mark.daemons


def test_slurmctld_takes_the_tree_of_a_rail_optimised_fabric(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    spec = tmp_path / "rails.yaml"
    pattern = {**RAILS, "cores": "core[1-2]", "core_uplinks": 2}
    spec.write_text(yaml.safe_dump(_rail_spec(pattern), sort_keys=False), encoding="utf-8")
    result = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    topology = (tmp_path / "out" / "slurm" / "topology.conf").read_text(encoding="utf-8")
    assert "SwitchName=su1-leaf Nodes=gpu[01-04]" in topology, topology
    with SlurmTestbed(tmp_path / "out", tmp_path / "bed") as bed:
        report = bed.start_controller()
    print(report.summary())
    print(report.raw["scontrol show topology"])
    assert report.config_problems() == []
    shown = {name: (s.level, s.nodes, s.switches) for name, s in report.switches.items()}
    assert shown == {
        "su1-leaf": (0, expand_hostlist("gpu[01-04]"), ()),
        "su2-leaf": (0, expand_hostlist("gpu[05-08]"), ()),
        "spine": (1, expand_hostlist("gpu[01-08]"), ("su1-leaf", "su2-leaf")),
        "core": (2, expand_hostlist("gpu[01-08]"), ("spine",)),
    }, report.raw["scontrol show topology"]
