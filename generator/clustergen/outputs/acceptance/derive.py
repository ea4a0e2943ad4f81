"""Acceptance jobs per partition: what they run and the thresholds, derived from the hardware.

Thresholds are computed here and handed to the scripts with their derivation as a
sentence the job prints, so an admin reading a FAIL sees where the number came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustergen.fabric import ratio, uplink_share
from clustergen.model.nccl import AcceptanceTools
from clustergen.model.network import LINK_GBITS
from clustergen.outputs.nccl.derive import NcclValue, settings_for
from clustergen.resolve import ResolvedCluster


@dataclass(frozen=True)
class Rail:
    hca: str
    port: int


@dataclass(frozen=True)
class RailJob:
    profile: str  # node feature the job is constrained to
    nodes: int  # the partition's nodes of the profile: the job tests every one
    rails: tuple[Rail, ...]
    threshold_gbits: float
    derivation: str
    # ib_write_bw's GID index (-x) and GRH traffic class (--tclass), from the NCCL
    # settings of these nodes, with the settings' sources
    perftest_args: tuple[str, ...]
    perftest_sources: tuple[str, ...]


# NCCL variable -> the perftest option that sets the same thing on ib_write_bw's QPs
# (perftest README: "-x, --gid-index=<index>", "--tclass=<value> Set the Traffic Class in
# GRH"). NCCL_IB_GID_INDEX -1 is NCCL's own GID choice; ib_write_bw then picks its own.
PERFTEST_OPTIONS = (("NCCL_IB_GID_INDEX", "--gid-index="), ("NCCL_IB_TC", "--tclass="))


def _perftest_args(settings: tuple[NcclValue, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    by_name = {s.name: s for s in settings}
    args, sources = [], []
    for name, option in PERFTEST_OPTIONS:
        setting = by_name.get(name)
        if setting is None or (name == "NCCL_IB_GID_INDEX" and setting.value.strip() == "-1"):
            continue
        args.append(option + setting.value.strip())
        sources.append(f"{name} from {setting.source}")
    return tuple(args), tuple(sources)


@dataclass(frozen=True)
class AllReduceJob:
    script: str  # file name under acceptance/<partition>/
    nodes: int
    busbw_threshold_gbytes: float
    busbw_derivation: str


@dataclass(frozen=True)
class PartitionJobs:
    partition: str
    nodes: int
    gpus_per_node: int
    allreduce: tuple[AllReduceJob, ...]  # the whole partition, then two nodes
    exports: tuple[tuple[str, str], ...]  # the partition's NCCL overrides for its jobs
    rail_jobs: tuple[RailJob, ...]
    tools: AcceptanceTools


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def derive_acceptance(cluster: ResolvedCluster) -> list[PartitionJobs]:
    """One entry per partition whose nodes all have GPUs, on a spec with a fabric."""
    spec = cluster.spec
    fabric = spec.network.fabric
    if fabric is None:
        return []
    tools = spec.nccl.acceptance if spec.nccl is not None else AcceptanceTools()
    link = LINK_GBITS[fabric.rate]
    jobs = []
    for index, partition in enumerate(spec.slurm.partitions):
        members = set(cluster.partition_nodes[index])
        hosts = [h for h in cluster.hosts if h.name in members]
        if not hosts or any(h.hardware.gpu is None for h in hosts):
            continue
        profiles = list(dict.fromkeys(h.hardware_name for h in hosts))
        rails = {name: spec.hardware[name].compute_hcas() for name in profiles}
        slowest = min(profiles, key=lambda name: len(rails[name]))
        hcas = len(rails[slowest])
        if hcas == 0:
            continue
        node_gbits = hcas * link
        nic = (
            f"{hcas} compute HCAs ({slowest}) x {link} Gb/s ({fabric.type} {fabric.rate}) = "
            f"{node_gbits} Gb/s"
        )
        # The whole partition, and two nodes: a fabric problem between a pair shows alone.
        sizes = [("nccl-allreduce.sbatch", len(hosts), False)]
        if len(hosts) > 2:
            sizes.append(("nccl-allreduce-2node.sbatch", 2, True))
        allreduce = tuple(
            _allreduce(cluster, script, nodes, members, node_gbits, nic, link, alone, tools)
            for script, nodes, alone in sizes
        )
        rail_threshold = link * tools.rail_fraction
        overrides = ((f"slurm.partitions[{index}].nccl", partition.nccl),)
        rail_jobs = []
        for name in profiles:
            count = sum(1 for h in hosts if h.hardware_name == name)
            if not rails[name] or count < 2:
                continue
            args, sources = _perftest_args(settings_for(cluster, name, overrides))
            rail_jobs.append(
                RailJob(
                    name,
                    count,
                    tuple(Rail(hca, port) for hca, port in rails[name]),
                    rail_threshold,
                    f"{link} Gb/s ({fabric.type} {fabric.rate}) x rail_fraction "
                    f"{tools.rail_fraction} = {_fmt(rail_threshold)} Gb/s per rail",
                    args,
                    sources,
                )
            )
        gpu_counts = {h.hardware.gpu.count for h in hosts if h.hardware.gpu is not None}
        own = settings_for(cluster, slowest, overrides)
        exports = tuple(
            (s.name, s.value) for s in own if s.source.startswith(f"slurm.partitions[{index}]")
        )
        jobs.append(
            PartitionJobs(
                partition.name,
                len(hosts),
                min(gpu_counts),
                allreduce,
                exports,
                tuple(rail_jobs),
                tools,
            )
        )
    return jobs


def _allreduce(
    cluster: ResolvedCluster,
    script: str,
    nodes: int,
    members: set[str],
    node_gbits: int,
    nic: str,
    link: int,
    alone: bool,
    tools: AcceptanceTools,
) -> AllReduceJob:
    """Across nodes an all-reduce runs at each node's network bandwidth: the slower of its
    compute HCAs and its share of the uplinks of a switch that the job's nodes span.

    The whole partition shares each switch's uplinks among its nodes under it; a two-node
    job may get one node under each switch, alone on its uplinks."""
    share = uplink_share(cluster, members, link, alone)
    bound: float
    if share is None or share.gbits >= node_gbits:
        bound, why = node_gbits, nic
        if share is not None:
            why += f", within {share.switch.name}'s uplinks"
    else:
        bound = share.gbits
        up = share.switch.up_cables
        shared = (
            f"all for one node when the pair spans switches: {_fmt(bound)} Gb/s"
            if alone
            else f"shared by the partition's {share.sharing_ports} HCA ports under it: "
            f"{share.node} ({share.node_ports} ports) gets {_fmt(bound)} Gb/s"
        )
        why = (
            f"{nic}, but across switches {share.switch.name}'s {up} "
            f"uplink{'s' if up > 1 else ''} x {link} Gb/s = {up * link} Gb/s "
            f"({ratio(share.switch.factor)} blocking), {shared}"
        )
    threshold = bound / 8 * tools.busbw_fraction
    derivation = (
        f"{why} = {_fmt(bound / 8)} GB/s per node; x busbw_fraction {tools.busbw_fraction} = "
        f"{_fmt(threshold)} GB/s"
    )
    return AllReduceJob(script, nodes, threshold, derivation)
