"""Acceptance jobs per multi-node NVLink domain (issue 24): an all-reduce over all the
domain's trays whose pass mark comes from NVLink, not from the HCAs, and a check that
every GPU of the domain is registered with the NVLink fabric in one clique.

Why a job of its own: across NVLink domains an all-reduce runs over the compute fabric,
and the partition's nccl-allreduce job is judged against the HCAs (4 x NDR on a GB200
tray: 200 GB/s). A domain whose NVLink fabric is broken falls back to that network and
would still pass it. Here the pass mark is the GPUs' NVLink bandwidth, several times
what any tray's HCAs carry, and NCCL is told to use multi-node NVLink or fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from clustergen.catalog.gpus import profile_gpu
from clustergen.model.nccl import AcceptanceTools
from clustergen.resolve import ResolvedCluster, ResolvedDomain
from clustergen.resolve.nccl_settings import settings_for
from clustergen.spec.hosts import compress

# NVLink bandwidth per GPU, each way (GB/s), by GPU architecture, with NVIDIA's figure.
# "Blackwell and Blackwell Ultra GPUs include 18 fifth-generation NVLink links to provide
# 1.8 TB/sec total bandwidth, 900 GB/sec in each direction" (NVIDIA Blackwell Architecture
# Technical Brief v2.1, 2025, 3.6 "Fifth-Generation NVLink and NVLink Switch": GB200 and
# GB300 NVL72, HGX B200 and B300), and NVLink and the NVLink Switch "support clusters beyond
# a single server at the same 1.8 TB/s" (the same section): a tray's GPU reaches the other
# trays of its domain at that rate. Hopper's fourth generation: 18 links, 900 GB/s in all
# (NVIDIA H100 Tensor Core GPU Architecture whitepaper; GH200 alike). nccl-tests' bus
# bandwidth is the figure to set against the hardware's peak each way ("busbw ... reflects
# how optimally the hardware is used", nccl-tests doc/PERFORMANCE.md).
# Rubin's sixth generation: "3.6 TB/s" GPU-to-GPU per GPU, both ways, on HGX Rubin NVL8 and
# across the 72 GPUs of Vera Rubin NVL72 (nvidia.com/en-us/data-center/hgx/, "GPU-to-GPU
# bandwidth"; "Inside the NVIDIA Rubin Platform", NVIDIA Technical Blog, 2026-01-05).
RUBIN_NVLINK = "NVLink 6: 3.6 TB/s per GPU both ways (NVIDIA HGX page, Rubin platform blog)"
BLACKWELL_NVLINK = "NVLink 5: 18 links, 1.8 TB/s per GPU both ways (Blackwell technical brief)"
NVLINK_GBYTES: MappingProxyType[str, tuple[int, str]] = MappingProxyType(
    {
        "hopper": (450, "NVLink 4: 18 links, 900 GB/s per GPU both ways (H100 whitepaper)"),
        "blackwell": (900, BLACKWELL_NVLINK),
        "blackwell-ultra": (900, BLACKWELL_NVLINK),
        "rubin": (1800, RUBIN_NVLINK),
    }
)

# What the all-reduce step sets after the node's and the partition's NCCL settings, so
# that a domain without working NVLink fails rather than passes slowly over the network:
# NCCL_MNNVL_ENABLE=1 "requires" multi-node NVLink and fails with "MNNVL is not supported
# on this system" where the trays' GPUs are not registered with the fabric (v2.21.5-1
# src/init.cc; docs/nccl.md); NCCL_IB_DISABLE=1 keeps the InfiniBand/RoCE transport out
# ("disables the IB/RoCE transport that is to be used by NCCL. Instead, NCCL will fall
# back to using IP sockets", NCCL env.html#nccl-ib-disable), so a rank that cannot reach
# another over NVLink goes over sockets, far below the pass mark.
MNNVL_EXPORTS: tuple[tuple[str, str, str], ...] = (
    ("NCCL_MNNVL_ENABLE", "1", "multi-node NVLink or an error (NCCL env.html)"),
    ("NCCL_IB_DISABLE", "1", "no fallback to the HCAs (NCCL env.html)"),
)


# What the partition's all-reduce jobs set on trays of NVLink domains, after the node's and
# the partition's settings: those jobs are judged against the compute HCAs, and NCCL "uses
# MNNVL for inter-node communication within the same NVLink domain if available" (NCCL
# troubleshooting guide), so trays of one domain (topology/block places a two-node job in
# one block) would meet over NVLink and pass whatever their HCAs do. 0 turns multi-node
# NVLink off (NCCL env.html#nccl-mnnvl-enable): the ranks of different trays meet over the
# HCAs, as the pass mark assumes. The NVLink jobs above test the domain itself.
HCA_ONLY_EXPORTS: tuple[tuple[str, str, str], ...] = (
    (
        "NCCL_MNNVL_ENABLE",
        "0",
        "across trays over the HCAs this job is judged against, not multi-node NVLink "
        "(NCCL env.html)",
    ),
)


@dataclass(frozen=True)
class NvlinkJob:
    domain: str
    partition: str
    trays: tuple[str, ...]
    nodelist: str  # hostlist of the trays
    gpus_per_node: int
    busbw_threshold_gbytes: float
    derivation: str
    tools: AcceptanceTools
    exports: tuple[tuple[str, str], ...]  # the partition's NCCL overrides


def _partition(cluster: ResolvedCluster, trays: tuple[str, ...]) -> int | None:
    """The first partition (in the spec's order) that holds every tray of the domain."""
    for index in range(len(cluster.spec.slurm.partitions)):
        if set(trays) <= set(cluster.partition_nodes[index]):
            return index
    return None


def _exports(cluster: ResolvedCluster, index: int, profile: str) -> tuple[tuple[str, str], ...]:
    """The partition's own NCCL overrides, as the partition's nccl-allreduce job sets them."""
    partition = cluster.spec.slurm.partitions[index]
    where = f"slurm.partitions[{index}]"
    own = settings_for(cluster, profile, ((f"{where}.nccl", partition.nccl),))
    return tuple((s.name, s.value) for s in own if s.source.startswith(where))


def _job(
    cluster: ResolvedCluster, domain: ResolvedDomain, tools: AcceptanceTools
) -> NvlinkJob | None:
    hosts = {h.name: h for h in cluster.hosts}
    trays = tuple(name for name in domain.nodes if name in hosts)
    profiles = [hosts[name].hardware for name in trays]
    if not trays or any(profile.gpu is None for profile in profiles):
        return None
    models = {profile_gpu(profile) for profile in profiles}
    bounds = [NVLINK_GBYTES.get(m.architecture.name) if m else None for m in models]
    known = [bound for bound in bounds if bound is not None]
    index = _partition(cluster, trays)
    if index is None or not known or len(known) != len(bounds):
        return None  # a model without a known NVLink rate, or trays in no one partition
    gbytes, source = min(known)
    fraction = tools.busbw_fraction
    threshold = gbytes * fraction
    derivation = (
        f"{source} = {gbytes} GB/s each way, the peak all_reduce_perf's busbw is measured "
        f"against (nccl-tests PERFORMANCE.md); x busbw_fraction {fraction} = {threshold:.1f} GB/s"
    )
    return NvlinkJob(
        domain.name,
        cluster.spec.slurm.partitions[index].name,
        trays,
        compress(trays) if len(trays) > 1 else trays[0],
        min(profile.gpu.count for profile in profiles if profile.gpu is not None),
        threshold,
        derivation,
        tools,
        _exports(cluster, index, hosts[trays[0]].hardware_name),
    )


def derive_nvlink(cluster: ResolvedCluster) -> list[NvlinkJob]:
    """One entry per NVLink domain whose trays all have GPUs of an architecture with a known
    NVLink bandwidth and lie in one partition."""
    spec = cluster.spec
    tools = spec.nccl.acceptance if spec.nccl is not None else AcceptanceTools()
    jobs = (_job(cluster, domain, tools) for domain in cluster.nvlink_domains)
    return [job for job in jobs if job is not None]
