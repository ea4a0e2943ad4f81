"""The fabric as drawn: how much of its nodes' bandwidth each switch carries up the tree.

Every cable runs at the fabric's one link rate (network.fabric.rate), so a switch's
blocking factor is its ports facing down (its nodes' HCA ports and its child switches'
uplinks) over its cables up: a leaf of 32 HCA ports and 1 uplink is 32:1, and traffic
leaving it gets 1/32 of what its HCAs could send. The cable counts are the ones
cables.csv lists (ResolvedCluster.switch_ports).
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class UplinkShare:
    """The least bandwidth a node of a job gets through a switch's uplinks."""

    gbits: float
    switch: Blocking
    node: str
    node_ports: int
    sharing_ports: int  # the HCA ports of the job's nodes under the switch


def uplink_share(
    cluster: ResolvedCluster, members: Collection[str], link_gbits: int, alone: bool
) -> UplinkShare | None:
    """The lowest uplink share of a node among `members` when a job spans them.

    A switch carries the job's traffic up when some of its nodes are under it and some
    are not. Its uplinks are shared by the job's nodes under it in proportion to their
    HCA ports; with `alone`, a node has them to itself (a two-node job: one node under
    each switch). None when no switch's uplinks carry the job's traffic.
    """
    parent: dict[str, str] = {}
    for row, children in zip(cluster.switch_ports, cluster.switch_children, strict=True):
        for child in children:
            parent.setdefault(child, row.name)
    leaf_of: dict[str, str] = {}
    ports: dict[str, int] = {}
    for row in cluster.switch_ports:
        for node, count in row.hcas:
            if node in members and node not in leaf_of:
                leaf_of[node] = row.name
                ports[node] = count
    under: dict[str, list[str]] = {}
    for node, leaf in leaf_of.items():
        name: str | None = leaf
        seen: set[str] = set()
        while name is not None and name not in seen:  # a cycle is an error of its own
            seen.add(name)
            under.setdefault(name, []).append(node)
            name = parent.get(name)
    lowest: UplinkShare | None = None
    for switch in blocking(cluster):
        nodes = under.get(switch.name, [])
        if not nodes or len(nodes) == len(leaf_of):
            continue
        sharing = sum(ports[node] for node in nodes)
        for node in nodes:
            shared_by = ports[node] if alone else sharing
            gbits = switch.up_cables * link_gbits * ports[node] / shared_by
            if lowest is None or gbits < lowest.gbits:
                lowest = UplinkShare(gbits, switch, node, ports[node], shared_by)
    return lowest
