"""Slurm's view of the network: the fabric graph as topology/tree's single tree, the
multi-node NVLink domains as topology/block's blocks, and which of them the pinned Slurm
is given (topology.conf, or topology.yaml from 25.05). docs/slurm.md states the rules and
their sources.

The tree rule (docs/slurm.md "Topology"): Slurm's tree needs one parent per switch
(topology.conf(5), SchedMD's Topology Guide), while a rail-optimised fabric hangs every
node from one leaf per rail and every leaf from several spines. Tier by tier from the
leaves, fabric switches that share something below them become one Slurm switch: leaves
that share a Slurm compute node (a scalable unit's rail leaves), then switches of a tier
that reach a common Slurm switch below (every spine over the same units). This is what
NVIDIA's topograph does with an InfiniBand fabric (pkg/ib/ib.go, `simplify`: switches of
one height with the same children merge) and what the Topology Guide recommends: "listing
the leaf switches with their nodes plus one top level switch". Each Slurm switch is
claimed by the one Slurm switch above it that merges all its fabric parents, so the
result is always a tree. A tree in which every switch has one parent is written as it is.

Blocks and the choice (docs/slurm.md "NVLink domains as blocks"): each NVLink domain with
Slurm compute nodes is a block (topology/block, Slurm 23.11 and later). topology/block
allocates only nodes inside a block (src/plugins/topology/block/eval_nodes_block.c builds
every allocation from the blocks' node bitmaps), so it is given to Slurm alone only when
every partition lies within NVLink domains. When some partitions do and others do not,
Slurm 25.05 and later get topology.yaml with both, each partition naming its own; earlier
releases get the tree (or no topology), and validation warns that the NVLink domains are
not given to Slurm.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from clustergen.catalog.versions import VersionTuple, parse_version
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import NUMBERED_NAME, compress

# topology/block came with Slurm 23.11 (slurm.conf(5) TopologyPlugin); BlockSizes with
# 24.05 (src/plugins/topology/block/block_record.c reads the key from 24.05 on; 23.11's
# parser does not know it); topology.yaml and a partition's Topology= with 25.05
# (topology.yaml(5), slurm.conf(5) of 25.05; src/interfaces/topology.c reads
# topology.yaml instead of topology.conf and TopologyPlugin when it exists).
BLOCK_FROM: VersionTuple = (23, 11)
BLOCK_SIZES_FROM: VersionTuple = (24, 5)
TOPOLOGY_YAML_FROM: VersionTuple = (25, 5)
# slurmctld serves topology.yaml to configless slurmd from 25.05.2 (src/common/fetch_config.c
# slurmd_config_files at slurm-25-05-2-1; absent at slurm-25-05-1-1).
SERVED_TOPOLOGY_YAML_FROM: VersionTuple = (25, 5, 2)
# A block smaller than the base block is fatal to slurmctld before 25.05 ("children count
# lower than bblock_node_cnt", 24.05-24.11), and in 23.11 every block must have the base
# block's nodes ("children count no equal bblock_node_cnt").
BLOCKS_OF_ANY_SIZE_FROM: VersionTuple = (25, 5)
# BlockSizes: each a power-of-two multiple of the first (the base block's nodes), at most
# 2**15 base blocks (block_record.c: block_level > 15 is invalid; MAX_BLOCK_LEVELS 16).
MAX_BLOCK_LEVEL = 15
# The names of the topologies in topology.yaml (topology.yaml(5): "topology" names one).
TREE_TOPOLOGY = "fabric"
BLOCK_TOPOLOGY = "nvlink"
FLAT_TOPOLOGY = "flat"

TopologyKind = Literal["tree", "block", "yaml"]


@dataclass(frozen=True)
class SwitchLine:
    name: str
    nodes: str | None
    switches: str | None
    # The fabric switches this Slurm switch stands for, when it merges several.
    stands_for: str | None = None


@dataclass
class _Group:
    """Fabric switches (by index in network.fabric.switches) that are one Slurm switch."""

    members: list[int]
    nodes: list[str]  # leaves: Slurm compute nodes, in order
    children: list[int]  # above the leaves: the groups below, by their first member
    above: int | None = None  # the group above, by its first member


class _Merge:
    """Union-find over switch indexes; a set is named by its lowest index."""

    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, index: int) -> int:
        while self.parent[index] != index:
            self.parent[index] = self.parent[self.parent[index]]
            index = self.parent[index]
        return index

    def join(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def slurm_hostlist(names: Sequence[str]) -> str:
    """compress(names) where Slurm reads it back as the same names; else each prefix's names
    compressed apart, so a bracket only ever ends a name (su1-leaf,su2-leaf, not
    su[1-2]-leaf, which Slurm's hostlist parser reads differently)."""
    folded = compress(names)
    parts = re.split(r",(?![^\[]*\])", folded)
    if all("[" not in part or part.endswith("]") for part in parts):
        return folded
    by_prefix: dict[str, list[str]] = {}
    for name in names:
        match = NUMBERED_NAME.match(name)
        by_prefix.setdefault(match[1] if match else name, []).append(name)
    return ",".join(compress(group) for group in by_prefix.values())


def _tiers(children: Sequence[Sequence[int]]) -> list[int]:
    """0 for a leaf, else one above the highest child; a child on a cycle (an error of its
    own) is not counted. One walk, without recursion."""
    tier = [-2] * len(children)  # -2 unseen, -1 being walked
    for root in range(len(children)):
        if tier[root] != -2:
            continue
        tier[root] = -1
        stack = [(root, iter(children[root]))]
        while stack:
            index, pending = stack[-1]
            child = next(pending, None)
            if child is None:
                stack.pop()
                below = [tier[c] for c in children[index] if tier[c] >= 0]
                tier[index] = 1 + max(below) if below else 0
            elif tier[child] == -2:
                tier[child] = -1
                stack.append((child, iter(children[child])))
    return tier


def _leaf_groups(cluster: ResolvedCluster, merge: _Merge) -> dict[int, _Group]:
    """Leaves that share a Slurm compute node are one group; leaves without one are none."""
    fabric = cluster.spec.network.fabric
    assert fabric is not None
    slurm_names = {host.name for host in cluster.compute}
    nodes_of: dict[int, list[str]] = {}
    leaf_of: dict[str, int] = {}
    for index, switch in enumerate(fabric.switches):
        if switch.nodes is None:
            continue
        members = [n for n in cluster.switch_nodes[index] if n in slurm_names]
        if members:
            nodes_of[index] = members
        for other in {leaf_of.setdefault(node, index) for node in members} - {index}:
            merge.join(index, other)
    groups: dict[int, _Group] = {}
    nodes: dict[int, dict[str, None]] = {}
    for index, members in nodes_of.items():
        key = merge.find(index)
        groups.setdefault(key, _Group([], [], [])).members.append(index)
        nodes.setdefault(key, {}).update(dict.fromkeys(members))
    for key, group in groups.items():
        group.nodes = list(nodes[key])
    return groups


def _top(groups: dict[int, _Group], key: int) -> int:
    while (above := groups[key].above) is not None:
        key = above
    return key


def _tier_groups(
    tier_members: list[int],
    below: Sequence[Sequence[int]],
    merge: _Merge,
    groups: dict[int, _Group],
) -> None:
    """The switches of one tier above the leaves: each takes the topmost Slurm switch over
    each of its children; switches that take the same one merge, so it gets one parent."""
    claimed: dict[int, int] = {}  # top group -> a switch of this tier that takes it
    takes: dict[int, dict[int, None]] = {}  # switch -> the top groups it takes, in order
    top_of: dict[int, int | None] = {}  # child switch -> the topmost group over it
    for index in tier_members:
        tops: dict[int, None] = {}
        for child in below[index]:
            if child not in top_of:
                key = merge.find(child)
                top_of[child] = _top(groups, key) if key in groups else None
            top = top_of[child]
            if top is not None:
                tops.setdefault(top)
        for top in tops:
            merge.join(index, claimed.setdefault(top, index))
        if tops:
            takes[index] = tops
    new: dict[int, _Group] = {}
    children: dict[int, dict[int, None]] = {}
    for index, tops in takes.items():
        key = merge.find(index)
        new.setdefault(key, _Group([], [], [])).members.append(index)
        children.setdefault(key, {}).update(tops)
    for key, group in new.items():
        group.members.sort()
        group.children = list(children[key])
        for top in group.children:
            groups[top].above = key
    groups.update(new)


def _common_name(names: list[str]) -> str | None:
    """The name the members share once the numbers that tell them apart are left out:
    su1-leaf1..su1-leaf8 -> su1-leaf, spine01..spine16 -> spine; None when nothing is
    shared."""
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    rests = [name[len(prefix) :] for name in names]
    suffix = rests[0]
    for rest in rests[1:]:
        while not rest.endswith(suffix):
            suffix = suffix[1:]
    # A number is never cut in two: drop the digits the members continue differently.
    if prefix[-1:].isdigit() and any(rest[:1].isdigit() for rest in rests):
        prefix = re.sub(r"[0-9]+$", "", prefix)
    if suffix[:1].isdigit() and any(
        rest[: len(rest) - len(suffix)][-1:].isdigit() for rest in rests
    ):
        suffix = re.sub(r"^[0-9]+", "", suffix)
    name = (prefix + suffix).strip("-_.")
    return name or None


def _names(groups: dict[int, _Group], switch_names: Sequence[str]) -> dict[int, str]:
    """A group of one switch keeps its name; a merged group takes its members' common
    name, unless that is empty, a switch's name outside it, or another group's: then its
    first member's name (docs/slurm.md)."""
    taken = set(switch_names)
    wanted: dict[int, str | None] = {}
    for key, group in groups.items():
        names = [switch_names[i] for i in group.members]
        common = _common_name(names) if len(names) > 1 else None
        if common is not None and common in taken and common not in names:
            common = None
        wanted[key] = common
    counts: dict[str, int] = {}
    for common in wanted.values():
        if common is not None:
            counts[common] = counts.get(common, 0) + 1
    return {
        key: common if common is not None and counts[common] == 1 else switch_names[key]
        for key, common in wanted.items()
    }


def tree_switches(cluster: ResolvedCluster) -> list[SwitchLine]:
    """topology/tree's switches from network.fabric.switches, in the order of their first
    fabric switch; only Slurm compute nodes, and only switches above some."""
    fabric = cluster.spec.network.fabric
    if fabric is None or not fabric.switches:
        return []
    names = [switch.name for switch in fabric.switches]
    index_of: dict[str, int] = {}
    for index, name in enumerate(names):
        index_of.setdefault(name, index)
    below = [[index_of[c] for c in kids if c in index_of] for kids in cluster.switch_children]
    tier = _tiers(below)
    merge = _Merge(len(names))
    groups = _leaf_groups(cluster, merge)
    for level in range(1, max(tier) + 1):
        _tier_groups([i for i, t in enumerate(tier) if t == level], below, merge, groups)
    slurm_names = _names(groups, names)
    lines = []
    for key in sorted(groups):
        group = groups[key]
        members = [names[i] for i in group.members]
        stands_for = slurm_hostlist(members) if len(members) > 1 else None
        if group.nodes:
            nodes = slurm_hostlist(group.nodes)
            lines.append(SwitchLine(slurm_names[key], nodes, None, stands_for))
        else:
            kids = slurm_hostlist([slurm_names[c] for c in group.children])
            lines.append(SwitchLine(slurm_names[key], None, kids, stands_for))
    return lines


@dataclass(frozen=True)
class BlockLine:
    name: str
    nodes: str
    count: int  # Slurm compute nodes in the block


@dataclass(frozen=True)
class SlurmTopology:
    """What the pinned Slurm is given; kind None: no topology (Slurm's flat default)."""

    kind: TopologyKind | None
    switches: list[SwitchLine]
    blocks: list[BlockLine]
    block_sizes: tuple[int, ...]  # slurm.topology.block_sizes; () for Slurm's default
    # topology.yaml: the topology each partition names, by partition name
    partition_topology: dict[str, str] = field(default_factory=dict)
    # the topology.yaml topology for the partitions outside the NVLink domains
    rest: str | None = None
    # why the NVLink domains are not given to Slurm (a validation warning)
    blocks_not_given: str | None = None


def block_lines(cluster: ResolvedCluster) -> list[BlockLine]:
    """Each NVLink domain with Slurm compute nodes, in the domains' order (topology/block
    aggregates neighbouring blocks in the order listed)."""
    slurm_names = {host.name for host in cluster.compute}
    lines = []
    for domain in cluster.nvlink_domains:
        members = [node for node in domain.nodes if node in slurm_names]
        if members:
            lines.append(BlockLine(domain.name, slurm_hostlist(members), len(members)))
    return lines


def partitions_within(cluster: ResolvedCluster) -> dict[str, bool]:
    """Each partition: do all its Slurm compute nodes lie in NVLink domains?"""
    slurm_names = {host.name for host in cluster.compute}
    in_blocks = {node for domain in cluster.nvlink_domains for node in domain.nodes}
    within = {}
    partitions = cluster.spec.slurm.partitions
    for partition, names in zip(partitions, cluster.partition_nodes, strict=True):
        members = [n for n in names if n in slurm_names]
        within[partition.name] = bool(members) and all(n in in_blocks for n in members)
    return within


def slurm_topology(cluster: ResolvedCluster) -> SlurmTopology:
    spec = cluster.spec
    release = parse_version(spec.software.slurm)[:2]
    switches = tree_switches(cluster)
    blocks = block_lines(cluster)
    settings = spec.slurm.topology
    sizes = tuple(settings.block_sizes) if settings else ()
    fallback: TopologyKind | None = "tree" if switches else None
    if not blocks:
        return SlurmTopology(fallback, switches, [], sizes)
    within = partitions_within(cluster)
    why = None
    if release < BLOCK_FROM:
        why = f"Slurm {spec.software.slurm} has no topology/block (Slurm 23.11 and later)"
    elif all(within.values()):
        return SlurmTopology("block", switches, blocks, sizes)
    elif not any(within.values()):
        why = (
            "no partition lies within NVLink domains, and topology/block allocates only "
            "nodes in a block"
        )
    elif release >= TOPOLOGY_YAML_FROM:
        rest = TREE_TOPOLOGY if switches else FLAT_TOPOLOGY
        chosen = {name: BLOCK_TOPOLOGY if inside else rest for name, inside in within.items()}
        return SlurmTopology("yaml", switches, blocks, sizes, chosen, rest)
    else:
        outside = [name for name, inside in within.items() if not inside]
        which = ", ".join(f"'{name}'" for name in outside)
        has = "partitions {} have" if len(outside) > 1 else "partition {} has"
        why = (
            f"{has.format(which)} nodes outside NVLink domains, which topology/block never "
            f"allocates, and Slurm {spec.software.slurm} reads one topology (topology.yaml "
            "gives each partition its own from Slurm 25.05)"
        )
    return SlurmTopology(fallback, switches, blocks, sizes, blocks_not_given=why)
