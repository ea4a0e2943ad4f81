"""Acceptance jobs per partition: what they run and the thresholds, derived from the hardware.

Thresholds are computed here and handed to the scripts with their derivation as a
sentence the job prints, so an admin reading a FAIL sees where the number came from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from clustergen.model.nccl import AcceptanceTools, NcclSettings
from clustergen.model.network import LINK_GBITS
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import bisection, flow_share, ratio, units, uplink_share
from clustergen.resolve.nccl_settings import NcclValue, settings_for
from clustergen.spec.hosts import Host, compress


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
    # the nodes grouped by the leaves they hang from (hostlists), and the bar for a flow
    # between two of them, when all of a unit's nodes send across at once
    units: tuple[str, ...] = ()
    cross_threshold_gbits: float = 0.0
    cross_derivation: str = ""
    # slurm.keep_imported leaves the profile out of the node features: the job names the
    # nodes instead (hostlist), else "" and it is constrained to the profile's feature
    nodelist: str = ""


@dataclass(frozen=True)
class BisectionJob:
    profile: str
    senders: str  # hostlist: the first half of the units
    receivers: str  # hostlist: as many nodes of the other half, paired in order
    nodes: str  # hostlist: both
    pairs: int
    rails: tuple[Rail, ...]
    threshold_gbits: float  # the sum over every pair and rail
    derivation: str
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
    bisection_jobs: tuple[BisectionJob, ...] = ()
    # Trays of NVLink domains: the all-reduce jobs keep NCCL off multi-node NVLink, so
    # they measure the HCAs their pass mark comes from (nvlink.HCA_ONLY_EXPORTS).
    nvlink_trays: bool = False


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
        overrides = ((f"slurm.partitions[{index}].nccl", partition.nccl),)
        rail_jobs, bisection_jobs = _fabric_jobs(cluster, hosts, rails, overrides, tools)
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
                rail_jobs,
                tools,
                bisection_jobs,
                any(h.hardware.gpu and h.hardware.gpu.nvlink_domain for h in hosts),
            )
        )
    return jobs


Rails = dict[str, tuple[tuple[str, int], ...]]


def _fabric_jobs(
    cluster: ResolvedCluster,
    hosts: list[Host],
    rails: Rails,
    overrides: tuple[tuple[str, NcclSettings | None], ...],
    tools: AcceptanceTools,
) -> tuple[tuple[RailJob, ...], tuple[BisectionJob, ...]]:
    """Per hardware profile of at least two nodes with rails: the rail job, and the
    bisection job when its nodes hang from more than one set of leaves."""
    rail_jobs, bisection_jobs = [], []
    for name, hcas in rails.items():
        names = [h.name for h in hosts if h.hardware_name == name]
        if not hcas or len(names) < 2:
            continue
        args, sources = _perftest_args(settings_for(cluster, name, overrides))
        groups = units(cluster, set(names))
        rail = _rail_job(cluster, name, names, hcas, groups, tools)
        rail_jobs.append(replace(rail, perftest_args=args, perftest_sources=sources))
        if len(groups) > 1:
            job = _bisection_job(cluster, name, groups, hcas, tools)
            bisection_jobs.append(replace(job, perftest_args=args, perftest_sources=sources))
    return tuple(rail_jobs), tuple(bisection_jobs)


def _link(cluster: ResolvedCluster) -> tuple[int, str]:
    fabric = cluster.spec.network.fabric
    assert fabric is not None  # the acceptance jobs need one
    link = LINK_GBITS[fabric.rate]
    return link, f"{link} Gb/s ({fabric.type} {fabric.rate})"


def _rail_job(
    cluster: ResolvedCluster,
    name: str,
    names: list[str],
    hcas: tuple[tuple[str, int], ...],
    groups: tuple[tuple[str, ...], ...],
    tools: AcceptanceTools,
) -> RailJob:
    """Every rail of every node, to a node on its leaves and to one under other leaves. A
    flow across leaves shares its leaves' uplinks with the flows of the unit's other nodes,
    which send at the same time."""
    link, rate = _link(cluster)
    fraction = tools.rail_fraction
    threshold = link * fraction
    cross, why = threshold, ""
    if len(groups) > 1:
        share = flow_share(cluster, set(names))
        cross = threshold * (share.share if share is not None else 1.0)
        if share is None or share.share >= 1:
            why = f"the same, {_fmt(cross)} Gb/s per rail: each flow has a whole uplink"
        else:
            up = share.switch.up_cables
            cables = f"{up} uplinks carry" if up > 1 else "1 uplink carries"
            flows = f"{round(share.flows, 2):g}"
            why = (
                f"{share.switch.name}'s {cables} {flows} flows at once: {link} Gb/s x {up}/"
                f"{flows} x rail_fraction {fraction} = {_fmt(cross)} Gb/s per rail"
            )
    return RailJob(
        name,
        len(names),
        tuple(Rail(hca, port) for hca, port in hcas),
        threshold,
        f"{rate} x rail_fraction {fraction} = {_fmt(threshold)} Gb/s per rail",
        (),
        (),
        tuple(compress(group) if len(group) > 1 else group[0] for group in groups),
        cross,
        why,
        compress(names) if cluster.spec.slurm.keep_imported else "",
    )


TIER_NAMES = ("leaves", "leaves and spines", "leaves, spines and cores")


def _bisection_job(
    cluster: ResolvedCluster,
    name: str,
    groups: tuple[tuple[str, ...], ...],
    hcas: tuple[tuple[str, int], ...],
    tools: AcceptanceTools,
) -> BisectionJob:
    """The first half of the units (by nodes) sends to the other half, node k to node k,
    every rail at once: the pass mark is the least of their rails and the least cut of the
    fabric between them."""
    link, rate = _link(cluster)
    # The split between units nearest half the nodes, with a unit on each side (units of
    # 4 and 6 nodes: 4 against 6, never all 10 against none).
    total = sum(len(group) for group in groups)
    sizes = [sum(len(group) for group in groups[:k]) for k in range(1, len(groups))]
    split = 1 + min(range(len(sizes)), key=lambda k: abs(2 * sizes[k] - total))
    first = [node for group in groups[:split] for node in group]
    second = [node for group in groups[split:] for node in group]
    pairs = min(len(first), len(second))
    senders, receivers = first[:pairs], second[:pairs]
    cut = bisection(cluster, set(senders), set(receivers))
    nic = pairs * len(hcas) * link
    side = ("senders'", "receivers'")[cut.side]
    if cut.tier < 0:
        where = f"the {side} {cut.cables} HCA ports"
    else:
        cables = f"{cut.cables} cables" if cut.cables != 1 else "1 cable"
        tiers = TIER_NAMES[cut.tier] if cut.tier < len(TIER_NAMES) else f"tiers 0-{cut.tier}"
        where = f"the {cables} out of the {side} {tiers} ({compress(cut.switches)})"
    bound = min(nic, cut.cables * link)
    why = f"{pairs} pairs x {len(hcas)} rails x {rate} = {nic} Gb/s"
    why += (
        f", but {where} x {link} Gb/s = {cut.cables * link} Gb/s"
        if bound < nic
        else f", within {where} x {link} Gb/s = {cut.cables * link} Gb/s"
    )
    threshold = bound * tools.rail_fraction
    return BisectionJob(
        name,
        compress(senders) if pairs > 1 else senders[0],
        compress(receivers) if pairs > 1 else receivers[0],
        compress(senders + receivers),
        pairs,
        tuple(Rail(hca, port) for hca, port in hcas),
        threshold,
        f"{why}; x rail_fraction {tools.rail_fraction} = {_fmt(threshold)} Gb/s in all",
        (),
        (),
    )


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
        sharing = f"{round(share.sharing_ports, 2):g}"
        shared = (
            f"all for one node when the pair spans switches: {_fmt(bound)} Gb/s"
            if alone
            else f"shared by the partition's {sharing} HCA ports under it: "
            f"{share.node} ({share.node_ports} ports) gets {_fmt(bound)} Gb/s"
        )
        if share.leaves > 1:  # a rail-optimised fabric: the node's share over each rail
            shared = (
                f"shared by {sharing} HCA ports{' (alone)' if alone else ''}: "
                f"{share.node} ({share.node_ports} port{'s' if share.node_ports > 1 else ''}) "
                f"gets {_fmt(share.there_gbits)} Gb/s there, {_fmt(bound)} Gb/s over its "
                f"{share.leaves} leaves"
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
