"""What Slurm is given of the network (clustergen.resolve.slurm_topology): the NVLink domains as
topology/block when the pinned Slurm can take them, and block sizes it accepts.

The rules are SchedMD's source: src/plugins/topology/block/block_record.c reads BlockSizes
from 24.05 on, each size a power-of-two multiple of the first, at most 2**15 base blocks,
and refuses before 25.05 a block with fewer nodes than the base block (23.11: any other
count than the first block's).
"""

from __future__ import annotations

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.resolve import ResolvedCluster, is_tray
from clustergen.resolve.slurm_topology import (
    BLOCK_FROM,
    BLOCK_SIZES_FROM,
    BLOCKS_OF_ANY_SIZE_FROM,
    MAX_BLOCK_LEVEL,
    SERVED_TOPOLOGY_YAML_FROM,
    BlockLine,
    partitions_within,
    slurm_topology,
)

SIZES_PATH = ("slurm", "topology", "block_sizes")


def check(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    release = parse_version(spec.software.slurm)[:2]
    network = slurm_topology(cluster)
    problems: list[Problem] = []
    # A tray in no domain is an error of its own (checks/nvlink.py), and the reason it
    # would give here.
    if network.blocks_not_given is not None and not _trays_left_out(cluster):
        problems.append(
            Problem(
                codes.SLURM_NVLINK_DOMAINS_NOT_GIVEN,
                _not_given_at(cluster, release),
                f"the NVLink domains are not given to Slurm: {network.blocks_not_given}; "
                + (
                    "Slurm gets the fabric's tree instead"
                    if network.kind == "tree"
                    else "Slurm gets no topology"
                )
                + ", and a job may span NVLink domains",
            )
        )
    sizes = network.block_sizes
    if sizes:
        problems += _sizes(sizes)
        if release < BLOCK_SIZES_FROM:
            problems.append(
                Problem(
                    codes.SLURM_BLOCK_SIZES_UNSUPPORTED,
                    SIZES_PATH,
                    f"Slurm {spec.software.slurm} does not read BlockSizes (topology/block "
                    "takes it from Slurm 24.05; slurmctld stops at the unknown key): remove "
                    "slurm.topology.block_sizes or pin Slurm 24.05 or later",
                )
            )
        elif network.kind not in ("block", "yaml"):
            problems.append(
                Problem(
                    codes.SLURM_BLOCK_SIZES_UNUSED,
                    SIZES_PATH,
                    "slurm.topology.block_sizes is set, but Slurm is given no topology/block "
                    "(no NVLink domain with Slurm compute nodes, or the domains are not given)",
                )
            )
    if network.kind in ("block", "yaml") and release < BLOCKS_OF_ANY_SIZE_FROM:
        problems += _block_counts(cluster, network.blocks, sizes, release)
    if network.kind == "yaml" and spec.slurm.configless:
        problems += _configless_yaml(spec.software.slurm)
    return problems


def _configless_yaml(slurm: str) -> list[Problem]:
    """slurmctld serves topology.yaml to configless slurmd from 25.05.2 only."""
    if parse_version(slurm) >= SERVED_TOPOLOGY_YAML_FROM:
        return []
    return [
        Problem(
            codes.SLURM_CONFIGLESS_TOPOLOGY_YAML,
            ("slurm", "configless"),
            f"Slurm {slurm} gets topology.yaml, which its slurmctld does not serve to "
            "configless slurmd (it does from 25.05.2): pin Slurm 25.05.2 or later, or turn "
            "slurm.configless off",
        )
    ]


def _not_given_at(cluster: ResolvedCluster, release: VersionTuple) -> SpecPath:
    """The pinned Slurm when it is too old; else the first partition outside the domains."""
    if release < BLOCK_FROM:
        return ("software", "slurm")
    within = partitions_within(cluster)
    for index, inside in enumerate(within.values()):
        if not inside:
            return ("slurm", "partitions", index, "nodes")
    return ("slurm", "partitions")


def _trays_left_out(cluster: ResolvedCluster) -> bool:
    in_domains = {node for domain in cluster.nvlink_domains for node in domain.nodes}
    return any(h.profiled and is_tray(h) and h.name not in in_domains for h in cluster.hosts)


def _domain_path(cluster: ResolvedCluster, name: str) -> SpecPath:
    """A listed domain's nodes, or the rack a default domain is named after."""
    for domain in cluster.nvlink_domains:
        if domain.name == name and domain.index is not None:
            return ("network", "nvlink_domains", domain.index, "nodes")
    for index, rack in enumerate(cluster.spec.racks):
        if rack.name == name:
            return ("racks", index, "devices")
    return ("network", "nvlink_domains")


def _sizes(sizes: tuple[int, ...]) -> list[Problem]:
    base = sizes[0]
    previous = 0
    for size in sizes:
        ratio = size // base
        if size <= previous or size % base or ratio & (ratio - 1) or ratio > 2**MAX_BLOCK_LEVEL:
            return [
                Problem(
                    codes.SLURM_BLOCK_SIZES_INVALID,
                    SIZES_PATH,
                    f"block size {size} in [{', '.join(map(str, sizes))}]: after the base "
                    f"block's {base} nodes, each size must be larger than the one before and "
                    f"{base} times a power of two, at most {base} x {2**MAX_BLOCK_LEVEL} "
                    "(topology.conf(5) BlockSizes)",
                )
            ]
        previous = size
    return []


def _block_counts(
    cluster: ResolvedCluster, blocks: list[BlockLine], sizes: tuple[int, ...], release: VersionTuple
) -> list[Problem]:
    slurm = cluster.spec.software.slurm
    base = sizes[0] if sizes else blocks[0].count
    exact = release < BLOCK_SIZES_FROM  # 23.11: every block has the base block's nodes
    short = [b for b in blocks if (b.count != base if exact else b.count < base)]
    if not short:
        return []
    listed = ", ".join(f"{b.name} ({b.count})" for b in short[:5])
    more = f" and {len(short) - 5} more" if len(short) > 5 else ""
    source = (
        "slurm.topology.block_sizes' first size" if sizes else f"the first block, {blocks[0].name}"
    )
    rule = "exactly" if exact else "at least"
    return [
        Problem(
            codes.SLURM_BLOCK_TOO_SMALL,
            _domain_path(cluster, short[0].name),
            f"Slurm {slurm} needs every block to have {rule} the base block's {base} Slurm "
            f"nodes ({source}), and blocks {listed}{more} do not: slurmctld would stop; "
            "pin Slurm 25.05 or later, which takes smaller blocks"
            + ("" if sizes or exact else ", or list a smaller domain first"),
        )
    ]
