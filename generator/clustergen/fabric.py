"""The fabric as drawn: how much of its nodes' bandwidth each switch carries up the tree.

Every cable runs at the fabric's one link rate (network.fabric.rate), so a switch's
blocking factor is its ports facing down (its nodes' HCA ports and its child switches'
uplinks) over its cables up: a leaf of 32 HCA ports and 1 uplink is 32:1, and traffic
leaving it gets 1/32 of what its HCAs could send. The cable counts are the ones
cables.csv lists (ResolvedCluster.switch_ports).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from clustergen.resolve import ResolvedCluster


@dataclass(frozen=True)
class Blocking:
    index: int  # in network.fabric.switches
    name: str
    hca_ports: int  # its nodes' HCA ports
    down_ports: int  # hca_ports and its child switches' uplinks
    up_cables: int  # to its parent

    @property
    def factor(self) -> float:
        return self.down_ports / self.up_cables


def ratio(factor: float) -> str:
    """32.0 -> '32:1'; 2.6875 -> '2.69:1'."""
    return f"{round(factor, 2):g}:1"


def blocking(cluster: ResolvedCluster) -> tuple[Blocking, ...]:
    """Every switch with a parent, in spec order; a top switch carries nothing up."""
    rows = []
    for switch in cluster.switch_ports:
        if switch.up:
            hca_ports = sum(n for _, n in switch.hcas)
            down = hca_ports + sum(n for _, n in switch.down)
            rows.append(
                Blocking(switch.index, switch.name, hca_ports, down, sum(n for _, n in switch.up))
            )
    return tuple(rows)


def tiers(cluster: ResolvedCluster) -> dict[str, int]:
    """Each switch's tier: 0 for a leaf, else one above its highest child (1 a spine, 2 a
    core). A child that closes a cycle (an error of its own) is not counted."""
    children = {row.name: [child for child, _ in row.down] for row in cluster.switch_ports}
    return _upward(children, lambda name, below: 1 + max(below) if below else 0)


def nodes_below(cluster: ResolvedCluster, names: Collection[str]) -> dict[str, frozenset[str]]:
    """The nodes cabled below each of `names`: a leaf's own, a spine's leaves' nodes."""
    children = {row.name: [child for child, _ in row.down] for row in cluster.switch_ports}
    own = {row.name: frozenset(node for node, _ in row.hcas) for row in cluster.switch_ports}

    def union(name: str, below: list[frozenset[str]]) -> frozenset[str]:
        return own.get(name, frozenset()).union(*below) if below else own.get(name, frozenset())

    wanted = set(names)
    # Only the switches below the wanted ones are walked.
    reach: dict[str, list[str]] = {}
    stack = [n for n in wanted if n in children]
    while stack:
        name = stack.pop()
        if name not in reach:
            reach[name] = children.get(name, [])
            stack.extend(c for c in reach[name] if c in children)
    found = _upward(reach, union)
    return {name: found.get(name, frozenset()) for name in names}


def _upward(children: dict[str, list[str]], combine: Any) -> dict[str, Any]:
    """combine(switch, [value of each child]) for every switch, children first, without
    recursion; a child on the path being walked (a cycle) is left out."""
    done: dict[str, Any] = {}
    on_path: set[str] = set()
    for root in children:
        if root in done:
            continue
        stack = [(root, iter(children.get(root, ())))]
        on_path.add(root)
        while stack:
            name, walk = stack[-1]
            child = next(walk, None)
            if child is None:
                stack.pop()
                on_path.discard(name)
                below = [done[c] for c in children.get(name, ()) if c in done and c != name]
                done[name] = combine(name, below)
            elif child not in done and child not in on_path and child in children:
                on_path.add(child)
                stack.append((child, iter(children.get(child, ()))))
    return done


def ports_below(cluster: ResolvedCluster) -> dict[str, dict[str, int]]:
    """Each switch's nodes below it, with their HCA ports cabled in its part of the graph:
    a leaf's own, a spine's over its leaves (on rail leaves, one port per rail below)."""
    children = {row.name: [child for child, _ in row.down] for row in cluster.switch_ports}
    own = {row.name: dict(row.hcas) for row in cluster.switch_ports}
    found: dict[str, dict[str, int]] = {}

    def below(name: str, seen: frozenset[str]) -> dict[str, int]:
        if name not in found:
            ports = dict(own.get(name, {}))
            for child in children.get(name, ()):
                if child not in seen:
                    for node, count in below(child, seen | {name}).items():
                        ports[node] = ports.get(node, 0) + count
            found[name] = ports
        return found[name]

    for name in own:
        below(name, frozenset())
    return found


def ancestors(cluster: ResolvedCluster) -> dict[str, tuple[str, ...]]:
    """Each switch with every switch above it (itself first), through all its parents."""
    parents = {row.name: [parent for parent, _ in row.up] for row in cluster.switch_ports}
    out: dict[str, tuple[str, ...]] = {}
    for name in parents:
        seen = [name]
        for above in seen:  # grows as it goes: breadth first, each switch once
            seen += [p for p in parents.get(above, ()) if p not in seen]
        out[name] = tuple(seen)
    return out


@dataclass(frozen=True)
class UplinkShare:
    """The least bandwidth a node of a job gets through the fabric's uplinks: its share
    through the switch that limits it most, summed over its leaves (one per rail)."""

    gbits: float  # the node's whole share, over all its leaves
    switch: Blocking  # the switch whose uplinks limit it most
    node: str
    node_ports: int  # the node's HCA ports under that switch
    sharing_ports: int  # the HCA ports of the job's nodes under that switch
    there_gbits: float = 0.0  # the node's share through that switch
    leaves: int = 1  # the leaves the node hangs from


Limits = tuple[dict[str, dict[str, int]], dict[str, dict[str, float]], dict[str, dict[str, int]]]


def _limits(cluster: ResolvedCluster, members: Collection[str], alone: bool) -> Limits:
    """Per switch whose uplinks carry the job's traffic (some of the job's nodes under it,
    not all): each of its job nodes' HCA ports under it, uplink cables per port, and the
    ports sharing the uplinks: the job's under the switch, or with `alone` the node's own."""
    below = ports_below(cluster)
    job = {node for ports in below.values() for node in ports if node in members}
    fractions: dict[str, dict[str, float]] = {}
    sharing: dict[str, dict[str, int]] = {}
    for switch in blocking(cluster):
        ports = {node: n for node, n in below.get(switch.name, {}).items() if node in members}
        if not ports or len(ports) == len(job):
            continue
        total = sum(ports.values())
        sharing[switch.name] = {node: n if alone else total for node, n in ports.items()}
        fractions[switch.name] = {
            node: switch.up_cables / shared for node, shared in sharing[switch.name].items()
        }
    return below, fractions, sharing


def uplink_share(
    cluster: ResolvedCluster, members: Collection[str], link_gbits: int, alone: bool
) -> UplinkShare | None:
    """The lowest uplink share of a node among `members` when a job spans them.

    A switch carries the job's traffic up when some of its nodes are under it and some
    are not. Its uplinks, to all its parents together, are shared by the job's HCA ports
    under it; with `alone`, a node has them to itself (a two-node job: one node under each
    switch). Each HCA port of a node gets at most the link rate, and at most its share
    through every switch above its leaf. None when no switch's uplinks carry the job's
    traffic.
    """
    below, fractions, sharing = _limits(cluster, members, alone)
    if not fractions:
        return None
    above = ancestors(cluster)
    rows = {row.name: row for row in blocking(cluster)}
    lowest: UplinkShare | None = None
    nodes: dict[str, list[tuple[str, int]]] = {}
    for row in cluster.switch_ports:
        for node, count in row.hcas:
            if node in members:
                nodes.setdefault(node, []).append((row.name, count))
    for node, leaves in nodes.items():
        total, worst, worst_fraction = 0.0, None, math.inf
        for leaf, count in leaves:
            limits = [(fractions[s][node], s) for s in above[leaf] if node in fractions.get(s, {})]
            fraction, switch = min(limits, default=(math.inf, None))
            total += count * link_gbits * min(1.0, fraction)
            if switch is not None and fraction < worst_fraction:
                worst, worst_fraction = switch, fraction
        if worst is None:
            continue
        if lowest is None or total < lowest.gbits:
            ports = below[worst][node]
            there = ports * link_gbits * min(1.0, worst_fraction)
            lowest = UplinkShare(
                total, rows[worst], node, ports, sharing[worst][node], there, len(leaves)
            )
    return lowest


def leaves_of(cluster: ResolvedCluster) -> dict[str, tuple[str, ...]]:
    """Each cabled node's leaves, in spec order (one per rail on a rail-optimised fabric)."""
    out: dict[str, list[str]] = {}
    for row in cluster.switch_ports:
        for node, _ in row.hcas:
            out.setdefault(node, []).append(row.name)
    return {node: tuple(names) for node, names in out.items()}


def units(cluster: ResolvedCluster, members: Collection[str]) -> tuple[tuple[str, ...], ...]:
    """`members` (in spec order) grouped by the set of leaves they hang from: the scalable
    units of a rail-optimised fabric, a leaf's nodes on a tree. Nodes on no leaf are a
    group of their own."""
    leaves = leaves_of(cluster)
    groups: dict[tuple[str, ...], list[str]] = {}
    for host in cluster.hosts:
        if host.name in members:
            groups.setdefault(leaves.get(host.name, ()), []).append(host.name)
    return tuple(tuple(names) for names in groups.values())


@dataclass(frozen=True)
class FlowShare:
    share: float  # of the link rate, at most 1
    switch: Blocking
    nodes: int  # the job's nodes under the switch, one flow each


def flow_share(cluster: ResolvedCluster, members: Collection[str]) -> FlowShare | None:
    """When every node of `members` sends one flow at once to a node under other leaves:
    the least share of the link rate a flow gets, uplink cables over the job's nodes under
    the switch they leave by, and that switch. None when no switch carries such flows."""
    below = ports_below(cluster)
    job = {node for ports in below.values() for node in ports if node in members}
    lowest: FlowShare | None = None
    for switch in blocking(cluster):
        nodes = sum(1 for node in below.get(switch.name, {}) if node in members)
        if nodes and nodes < len(job):
            share = min(1.0, switch.up_cables / nodes)
            if lowest is None or share < lowest.share:
                lowest = FlowShare(share, switch, nodes)
    return lowest


@dataclass(frozen=True)
class Cut:
    """The fewest cables between one side of a job and the rest of the fabric."""

    cables: int  # cables (or HCA ports, at tier -1) crossing it
    side: int  # 0 the senders', 1 the receivers'
    tier: int  # -1: the nodes' own HCA ports; else the side's switches up to this tier
    switches: tuple[str, ...]  # the side's switches up to `tier`, spec order


def bisection(
    cluster: ResolvedCluster, senders: Collection[str], receivers: Collection[str]
) -> Cut:
    """The least cut between two sets of nodes, over the tiers of the fabric as drawn.

    A side's switches are those with nodes of that side below them and none of the other.
    For each tier t (and t = -1, the nodes alone) the side's switches up to tier t hold
    every node of the side, and all traffic to the other side leaves them by a cable to a
    switch outside them (or by a node's HCA cabled outside them): every such set is a cut,
    and the least of them, on either side, bounds what one side can send to the other.
    On a fat tree it is the bisection bandwidth (in cables; x the link rate)."""
    below = ports_below(cluster)
    level = tiers(cluster)
    cuts = []
    for side, (own, other) in enumerate(((senders, receivers), (receivers, senders))):
        mine = {
            name
            for name, ports in below.items()
            if any(n in own for n in ports) and not any(n in other for n in ports)
        }
        for tier in range(-1, max(level.values(), default=0) + 1):
            inside = {name for name in mine if level.get(name, 0) <= tier}
            cables = 0
            for row in cluster.switch_ports:
                if row.name not in inside:
                    cables += sum(n for node, n in row.hcas if node in own)
                else:
                    cables += sum(n for parent, n in row.up if parent not in inside)
            names = tuple(row.name for row in cluster.switch_ports if row.name in inside)
            cuts.append(Cut(cables, side, tier, names))
    return min(cuts, key=lambda cut: cut.cables)
