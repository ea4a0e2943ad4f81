"""The distribution's slurmctld (22.05 on Debian 12) on the rendered files of a 16,384-node
cluster (clustergen.dev.large_spec's compact spec: 8-GPU nodes, a leaf per 32 nodes, a
spine per 32 leaves under one core switch): it starts, and lists every node, every
partition member and every switch as the spec says. Names resolve through a generated
hosts map in the controller's mount namespace (tests/support/realslurm).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clustergen.dev import large_spec as large_spec_module
from clustergen.model.common import expand_hostlist
from clustergen.outputs.slurm.derive import derive_slurm
from clustergen.spec.load import load_spec
from clustergen.validate import validate_cluster

from support.realslurm.testbed import SlurmTestbed, require_real_slurm

pytestmark = pytest.mark.daemons

NODES = 16384


def test_slurmctld_lists_every_node_of_a_16k_cluster(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    require_real_slurm()
    spec = tmp_path / "spec.yaml"
    spec.write_text(large_spec_module.compact_spec(NODES))
    out = tmp_path / "out"
    result = cli("render", str(spec), "-o", str(out))
    assert result.code == 0, result.err
    cluster, _ = validate_cluster(load_spec(str(spec)))
    assert cluster is not None
    slurm_conf = (out / "slurm/slurm.conf").read_text()
    # one NodeName line per hardware group, not per node
    assert slurm_conf.count("\nNodeName=") == 1

    # Listing 16,384 nodes takes a while on a loaded 2-core machine.
    with SlurmTestbed(out, tmp_path / "bed", client_timeout_s=300) as bed:
        report = bed.start_controller()
    print(report.summary())
    assert report.config_problems() == []

    compute = {host.name for host in cluster.hosts if host.is_slurm_compute}
    assert len(compute) == NODES
    assert set(report.nodes) == compute
    assert set(report.sinfo) == compute
    for partition in cluster.spec.slurm.partitions:
        assert set(report.partitions[partition.name].nodes) == set(expand_hostlist(partition.nodes))
    # topology.conf: every switch with Slurm nodes below it (the service leaves hold none)
    topology = derive_slurm(cluster).topology
    assert len(topology) == NODES // 32 + NODES // 32 // 32 + 1  # leaves, spines, core
    assert set(report.switches) == {switch.name for switch in topology}
    for switch in topology:
        if switch.nodes:
            assert set(report.switches[switch.name].nodes) == set(expand_hostlist(switch.nodes))
    below_leaves = {n for s in topology if s.nodes for n in report.switches[s.name].nodes}
    assert below_leaves == compute
