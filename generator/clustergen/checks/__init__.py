"""Cross-field checks, one module per concern.

Each check is `check(cluster) -> list[Problem]` and is listed in CHECKS with the
top-level sections it reads. A check runs when every section it needs is valid,
so one shape error in `racks` does not hide a driver too old for its CUDA. It
reads the resolved cluster (resolve.ResolvedCluster), built over the valid sections only:
what it reads of an absent section fails loudly, and what it computes (the host
table, expanded hostlists, pins) is kept for the other checks and the render.
Checks that read `cluster.hosts` need `nodes` and `hardware`. Checks are pure and
never raise on valid sections.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from clustergen.base.cores import two_cores
from clustergen.base.errors import Problem
from clustergen.checks import (
    addresses,
    ansible,
    facility,
    hardware,
    host_network,
    lustre,
    monitoring,
    nccl,
    nfs,
    nvlink,
    packages,
    platform,
    rack_scale,
    rdma,
    references,
    slurm,
    slurm_network,
    slurm_options,
    software,
    topology,
    trusted_paths,
)
from clustergen.resolve import ResolvedCluster


@dataclass(frozen=True)
class Check:
    run: Callable[[ResolvedCluster], list[Problem]]
    needs: frozenset[str]
    # A walk of the whole fabric that leaves nothing the render reads: on a large fabric
    # it runs in a second process beside the other checks (run_checks).
    apart: bool = False


def _check(run: Callable[[ResolvedCluster], list[Problem]], *needs: str) -> Check:
    return Check(run, frozenset(needs))


def _apart(run: Callable[[ResolvedCluster], list[Problem]], *needs: str) -> Check:
    return Check(run, frozenset(needs), apart=True)


CHECKS: tuple[Check, ...] = (
    _check(references.node_groups, "cluster", "hardware", "nodes"),
    _check(references.racks, "racks", "hardware", "nodes"),
    _check(references.storage, "storage", "cluster", "hardware", "nodes"),
    _check(lustre.indices, "storage"),
    _check(lustre.servers, "storage", "hardware", "nodes"),
    _check(lustre.lnet, "storage", "hardware"),
    _check(lustre.lnet_subnets, "storage", "network", "hardware", "nodes"),
    _check(lustre.mount, "storage"),
    _check(lustre.layouts, "storage"),
    _check(lustre.tuning, "storage"),
    _check(lustre.packages, "storage", "software", "hardware", "nodes"),
    _check(monitoring.node_exporter, "monitoring", "software"),
    _check(monitoring.dcgm_exporter, "monitoring", "software"),
    _check(monitoring.slurm, "monitoring", "software", "slurm"),
    _check(ansible.pull, "ansible", "software"),
    _check(ansible.pull_source, "ansible"),
    _check(nfs.mount_points, "storage"),
    _check(trusted_paths.mounts, "storage"),
    _check(trusted_paths.exports, "storage", "nodes", "hardware"),
    _check(nfs.selection, "storage", "cluster", "hardware", "nodes"),
    _check(nfs.keyed_options, "storage"),
    _check(nfs.rdma, "storage", "hardware", "nodes"),
    _check(addresses.check, "network", "hardware", "nodes"),
    _check(host_network.routes, "network"),
    _check(host_network.shared_links, "network", "hardware"),
    _check(host_network.link_layers, "network", "hardware"),
    _check(host_network.roce_addresses, "network", "hardware"),
    _check(hardware.check, "hardware", "nodes"),
    _check(software.versions, "software"),
    _check(software.repositories, "software"),
    _check(platform.check, "software"),
    _check(software.gpus, "software", "hardware"),
    _check(software.repository_architectures, "software", "hardware", "nodes"),
    _check(software.nvidia_repository_listed, "software", "hardware", "nodes"),
    _check(slurm.nodes, "slurm", "cluster", "hardware", "nodes"),
    _check(slurm_options.check, "slurm", "software"),
    _check(slurm.options, "slurm", "software"),
    _check(trusted_paths.paths, "slurm", "software", "hardware"),
    _check(slurm.folders, "slurm"),
    _check(slurm.state_save, "slurm", "storage", "hardware", "nodes"),
    _apart(topology.check, "network", "hardware", "nodes"),
    _check(topology.storage_switches, "network"),
    _apart(topology.oversubscription, "network", "hardware", "nodes", "slurm"),
    _check(nvlink.check, "network", "racks", "hardware", "nodes"),
    _check(nvlink.partitions, "network", "racks", "hardware", "nodes", "slurm"),
    _check(slurm_network.check, "network", "racks", "hardware", "nodes", "slurm", "software"),
    _check(packages.pins, "software"),
    _check(packages.zfs, "software", "storage"),
    _check(packages.groups, "cluster", "hardware"),
    _check(rdma.stack, "software", "hardware", "network"),
    _check(rdma.roce_host_qos, "software", "network"),
    _check(rdma.spectrum_x, "network"),
    _check(rdma.subnet_manager, "software", "hardware", "network", "nodes"),
    _check(nccl.settings, "nccl", "hardware", "network", "nodes", "slurm"),
    _check(nccl.topology, "nccl", "hardware", "nodes"),
    _check(nccl.sharp, "network"),
    _check(nccl.test_tools, "software", "slurm", "hardware"),
    _check(nccl.nvlink_domain, "nccl", "hardware", "nodes", "slurm"),
    _check(nccl.mnnvl_release, "software", "hardware", "nodes", "slurm"),
    _check(facility.psus, "hardware"),
    _check(facility.placement, "racks", "hardware", "nodes"),
    _check(facility.racked, "racks", "facility", "hardware", "nodes"),
    _check(facility.power, "racks", "hardware", "nodes"),
    _check(facility.switch_trays, "racks", "hardware", "nodes"),
    _check(facility.site, "racks", "facility", "hardware", "nodes"),
    _check(rack_scale.shelves, "racks", "hardware", "nodes"),
    _check(rack_scale.air, "racks", "hardware", "nodes"),
    _check(rack_scale.cdus, "racks", "facility", "hardware", "nodes"),
    _check(facility.ports, "network", "hardware", "nodes"),
)


# Runs `first` here and `second` in a second process, and returns both results; None
# when no second process could be started (commands.parallel.in_two).
InTwo = Callable[
    [Callable[[], list[list[Problem]]], Callable[[], list[list[Problem]]], str],
    tuple[list[list[Problem]], list[list[Problem]]] | None,
]


# From this many fabric switches the walks apart take longer than starting a second
# process for them (importing its modules and forking: about 0.1 s). Measured with
# `clustergen validate` on the benchmark specs: at 16,384 nodes the rail form's 10,250
# switches save 0.6 s of 2.2, the tree form's 538 would cost 0.08 s.
APART_SWITCHES = 4096


def _apart_pays(cluster: ResolvedCluster) -> bool:
    return two_cores() and len(cluster.switch_ports) >= APART_SWITCHES


def run_checks(
    cluster: ResolvedCluster, valid: Collection[str], in_two: InTwo | None = None
) -> list[Problem]:
    """Every check whose sections are all in `valid` (the spec's other sections are
    absent), their problems in CHECKS's order. With `in_two` (all sections valid) and a
    fabric of APART_SWITCHES switches or more on two cores, the checks marked apart run
    in a second process while this one runs the others: what those compute is kept here
    for the render, and what the walks apart compute the render does not read."""
    runnable = [check for check in CHECKS if check.needs <= set(valid)]
    both = None
    if in_two is not None and _apart_pays(cluster) and any(check.apart for check in runnable):
        both = in_two(
            lambda: [check.run(cluster) for check in runnable if not check.apart],
            lambda: [check.run(cluster) for check in runnable if check.apart],
            "running the fabric's checks",
        )
    if both is None:
        found = [check.run(cluster) for check in runnable]
    else:
        here, there = iter(both[0]), iter(both[1])
        found = [next(there) if check.apart else next(here) for check in runnable]
    return [problem for problems in found for problem in problems]
