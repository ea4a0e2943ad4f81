"""What the real slurmctld reported, compared with the spec: every compute node with its CPUs,
memory, GRES and features, every partition with its limits and defaults, every switch of
topology/tree. Shared by the Slurm 22.05 tests (host daemons) and the newer releases' tests
(Debian chroots)."""

from __future__ import annotations

from clustergen.catalog.gpus import profile_gpu_sets
from clustergen.model.common import expand_hostlist, parse_slurm_time
from clustergen.outputs.slurm.derive import SlurmContext
from clustergen.resolve import ResolvedCluster

from support.realslurm.parse import ControllerReport


def assert_report_matches(
    report: ControllerReport, cluster: ResolvedCluster, slurm: SlurmContext
) -> None:
    """Assert that slurmctld understood the rendered files as the spec says."""
    spec = cluster.spec
    compute = [host for host in cluster.hosts if host.is_slurm_compute]
    assert set(report.nodes) == {host.name for host in compute}
    for host in compute:
        profile = host.hardware
        node = report.nodes[host.name]
        assert node.cpus == profile.cpu.cpus, host.name
        assert node.cores_per_socket == profile.cpu.cores_per_socket
        assert node.threads_per_core == profile.cpu.threads_per_core
        assert node.real_memory_mib == profile.slurm_real_memory_mib()
        sets = profile_gpu_sets(profile)
        assert node.gres == ",".join(f"gpu:{s.gres_type}:{s.count}" for s in sets), host.name
        assert {host.hardware_name, *(s.gres_type for s in sets)} <= set(node.features)
        assert report.sinfo[host.name].cpus == profile.cpu.cpus

    assert set(report.partitions) == {p.name for p in spec.slurm.partitions}
    for partition in spec.slurm.partitions:
        seen = report.partitions[partition.name]
        assert set(seen.nodes) == set(expand_hostlist(partition.nodes))
        assert seen.default == partition.default
        if partition.max_time is not None:
            minutes = parse_slurm_time(str(partition.max_time))
            assert seen.max_time == ("UNLIMITED" if minutes is None else _slurm_duration(minutes))
        rendered_line = dict(
            next(p for p in slurm.partitions if p.names == partition.name).settings
        )
        default_minutes = parse_slurm_time(rendered_line["DefaultTime"])
        assert default_minutes is not None
        assert seen.default_time == _slurm_duration(default_minutes)
        if "DefCpuPerGPU" in rendered_line:
            assert seen.fields["JobDefaults"] == (
                f"DefCpuPerGPU={rendered_line['DefCpuPerGPU']},"
                f"DefMemPerGPU={rendered_line['DefMemPerGPU']}"
            )
        weights = rendered_line.get("TRESBillingWeights")
        assert seen.fields.get("TRESBillingWeights") == weights

    leaves = [s for s in slurm.topology if s.nodes]
    for leaf in leaves:
        assert set(report.switches[leaf.name].nodes) == set(expand_hostlist(leaf.nodes))
    assert set(report.switches) == {s.name for s in slurm.topology}


def _slurm_duration(minutes: int) -> str:
    """How scontrol prints a time limit: [days-]hours:minutes:seconds."""
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    clock = f"{hours:02d}:{mins:02d}:00"
    return f"{days}-{clock}" if days else clock
