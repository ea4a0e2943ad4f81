"""Acceptance jobs per partition: what they run and the thresholds, derived from the hardware.

Thresholds are computed here and handed to the scripts with their derivation as a
sentence the job prints, so an admin reading a FAIL sees where the number came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from clustergen.model.nccl import AcceptanceTools
from clustergen.model.network import LINK_GBITS
from clustergen.outputs.nccl.derive import compute_hcas, settings_for
from clustergen.resolve import Cluster


@dataclass(frozen=True)
class Rail:
    hca: str
    port: int


@dataclass(frozen=True)
class RailJob:
    profile: str  # node feature the job is constrained to
    rails: tuple[Rail, ...]
    threshold_gbits: float
    derivation: str


@dataclass(frozen=True)
class PartitionJobs:
    partition: str
    nodes: int
    gpus_per_node: int
    busbw_threshold_gbytes: float
    busbw_derivation: str
    exports: tuple[tuple[str, str], ...]  # the partition's NCCL overrides for its jobs
    rail_jobs: tuple[RailJob, ...]
    tools: AcceptanceTools


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def derive_acceptance(cluster: Cluster) -> list[PartitionJobs]:
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
        rails = {name: compute_hcas(spec.hardware[name]) for name in profiles}
        slowest = min(profiles, key=lambda name: len(rails[name]))
        hcas = len(rails[slowest])
        if hcas == 0:
            continue
        node_gbits = hcas * link
        threshold = node_gbits / 8 * tools.busbw_fraction
        busbw = (
            f"{hcas} compute HCAs ({slowest}) x {link} Gb/s ({fabric.type} {fabric.rate}) = "
            f"{node_gbits} Gb/s = {_fmt(node_gbits / 8)} GB/s per node; x busbw_fraction "
            f"{tools.busbw_fraction} = {_fmt(threshold)} GB/s"
        )
        rail_threshold = link * tools.rail_fraction
        rail_jobs = tuple(
            RailJob(
                name,
                tuple(Rail(hca, port) for hca, port in rails[name]),
                rail_threshold,
                f"{link} Gb/s ({fabric.type} {fabric.rate}) x rail_fraction "
                f"{tools.rail_fraction} = {_fmt(rail_threshold)} Gb/s per rail",
            )
            for name in profiles
            if rails[name] and len([h for h in hosts if h.hardware_name == name]) >= 2
        )
        gpu_counts = {h.hardware.gpu.count for h in hosts if h.hardware.gpu is not None}
        own = settings_for(cluster, slowest, ((f"slurm.partitions[{index}].nccl", partition.nccl),))
        exports = tuple(
            (s.name, s.value) for s in own if s.source.startswith(f"slurm.partitions[{index}]")
        )
        jobs.append(
            PartitionJobs(
                partition.name,
                len(hosts),
                min(gpu_counts),
                threshold,
                busbw,
                exports,
                rail_jobs,
                tools,
            )
        )
    return jobs
