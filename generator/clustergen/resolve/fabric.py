"""The fabric as drawn: how much of its nodes' bandwidth each switch carries up the tree.

Every cable runs at the fabric's one link rate (network.fabric.rate), so a switch's
blocking factor is its ports facing down (its nodes' HCA ports and its child switches'
uplinks) over its cables up: a leaf of 32 HCA ports and 1 uplink is 32:1, and traffic
leaving it gets 1/32 of what its HCAs could send. The cable counts are the ones
cables.csv lists (ResolvedCluster.switch_ports).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Collection, Mapping
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


class _Graph:
    """The switch graph as the bandwidth walks read it: each switch's parents with the
    cables to each, its uplink cables in all, its tier, and every switch children first.
    A cable to a switch of no higher tier (a cycle, an error of its own) is left out."""

    def __init__(self, cluster: ResolvedCluster) -> None:
        self.level = tiers(cluster)
        self.parents = {
            row.name: tuple(
                (parent, n)
                for parent, n in row.up
                if self.level.get(parent, 0) > self.level.get(row.name, 0)
            )
            for row in cluster.switch_ports
        }
        self.up = {row.name: sum(n for _, n in row.up) for row in cluster.switch_ports}
        self.rows = {row.name: row for row in blocking(cluster)}
        self.upward = sorted(self.up, key=lambda n: self.level.get(n, 0))  # stable: spec order
        cabled: dict[str, list[tuple[str, int]]] = {}
        for row in cluster.switch_ports:
            for node, count in row.hcas:
                cabled.setdefault(node, []).append((row.name, count))
        # each cabled node's leaves with its HCA ports on each, nodes by their first leaf
        self.cabled = {node: tuple(leaves) for node, leaves in cabled.items()}
        self.profile_rails: dict[str, frozenset[int]] | None = None  # rails_by_profile
        self.joined: bool | None = None  # rails_joined
        self.children: dict[str, list[str]] = {}
        for name, parents in self.parents.items():
            for parent, _ in parents:
                self.children.setdefault(parent, []).append(name)

    def carried(self, at_leaves: Mapping[str, float]) -> dict[str, float]:
        """What each switch takes in from below when each leaf sends `at_leaves[leaf]` up,
        spread over its parents in proportion to its cables to each (a switch passes on
        what it takes in the same way)."""
        carried = dict.fromkeys(self.upward, 0.0)
        carried.update(at_leaves)
        for name in self.upward:
            if carried[name] and self.up[name]:
                for parent, cables in self.parents[name]:
                    carried[parent] += carried[name] * cables / self.up[name]
        return carried

    def below(self, at_leaves: Mapping[str, int]) -> dict[str, int]:
        """Bits of what hangs below each switch: each leaf's bits OR'ed upward."""
        found = dict.fromkeys(self.upward, 0)
        found.update(at_leaves)
        for name in self.upward:
            if found[name]:
                for parent, _ in self.parents[name]:
                    found[parent] |= found[name]
        return found

    def least_above(self, value: Mapping[str, float]) -> dict[str, tuple[float, str]]:
        """For each switch, the least `value` of it and every switch above it, and where."""
        least: dict[str, tuple[float, str]] = {}
        for name in reversed(self.upward):
            own = (value[name], name) if name in value else (math.inf, "")
            least[name] = min([own, *(least[p] for p, _ in self.parents[name])])
        return least

    def leaves_below(self, name: str) -> set[str]:
        found, todo = set(), [name]
        while todo:
            switch = todo.pop()
            if switch not in found:
                found.add(switch)
                todo.extend(self.children.get(switch, ()))
        return found


_GRAPHS: weakref.WeakKeyDictionary[ResolvedCluster, _Graph] = weakref.WeakKeyDictionary()


def _graph(cluster: ResolvedCluster) -> _Graph:
    """The cluster's graph, built once: the walks below read it for every partition."""
    if cluster not in _GRAPHS:
        _GRAPHS[cluster] = _Graph(cluster)
    return _GRAPHS[cluster]


Group = tuple[tuple[str, int], ...]  # a node's leaves, with its HCA ports on each


def _classes(cluster: ResolvedCluster, members: Collection[str]) -> dict[Group, list[str]]:
    """`members` on the fabric grouped by their leaves and HCA ports on each: nodes of a
    group share every bandwidth alike. In order of their first leaf in the spec."""
    groups: dict[Group, list[str]] = {}
    for node, leaves in _graph(cluster).cabled.items():
        if node in members:
            groups.setdefault(leaves, []).append(node)
    return groups


def _spanned(graph: _Graph, groups: Collection[Group]) -> set[str]:
    """The switches with the nodes of some of the groups below them, but not of all: the
    ones whose uplinks carry traffic between the groups."""
    bits: dict[str, int] = {}
    for index, leaves in enumerate(groups):
        for leaf, _ in leaves:
            bits[leaf] = bits.get(leaf, 0) | 1 << index
    every = (1 << len(groups)) - 1
    return {name for name, found in graph.below(bits).items() if found and found != every}


@dataclass(frozen=True)
class UplinkShare:
    """The least bandwidth a node of a job gets through the fabric's uplinks: its share
    through the switch that limits it most, summed over its leaves (one per rail)."""

    gbits: float  # the node's whole share, over all its leaves
    switch: Blocking  # the switch whose uplinks limit it most
    node: str
    node_ports: int  # the node's HCA ports under that switch
    sharing_ports: float  # the job's HCA ports whose traffic reaches that switch
    there_gbits: float = 0.0  # the node's share through that switch
    leaves: int = 1  # the leaves the node hangs from


def uplink_share(
    cluster: ResolvedCluster, members: Collection[str], link_gbits: int, alone: bool
) -> UplinkShare | None:
    """The lowest uplink share of a node among `members` when a job spans them.

    A switch carries the job's traffic up when some of its nodes are under it and some
    are not. Its uplinks, to all its parents together, are shared by the job's HCA ports
    whose traffic reaches it: a leaf's own, and on a spine each leaf's in proportion to
    its cables to that spine among all its uplinks (a leaf under 4 spines sends each a
    quarter). With `alone` a node has them to itself (a two-node job: one node under each
    switch), counted as all its HCA ports below the switch. Each HCA port gets at most the
    link rate and at most its share through every switch above its leaf. None when no
    switch's uplinks carry the job's traffic.
    """
    graph = _graph(cluster)
    groups = _classes(cluster, members)
    spanned = _spanned(graph, groups)
    if not spanned:
        return None
    if alone:
        return _alone_share(graph, groups, spanned, link_gbits)
    shared: dict[str, float] = {}
    for leaves, nodes in groups.items():
        for leaf, count in leaves:
            shared[leaf] = shared.get(leaf, 0) + count * len(nodes)
    sharing = graph.carried(shared)
    least = graph.least_above({s: graph.up[s] / sharing[s] for s in spanned if sharing[s]})
    lowest: UplinkShare | None = None
    for leaves, nodes in groups.items():
        total = sum(count * link_gbits * min(1.0, least[leaf][0]) for leaf, count in leaves)
        fraction, worst = min(least[leaf] for leaf, _ in leaves)
        if worst and (lowest is None or total < lowest.gbits):
            under = graph.leaves_below(worst)
            ports = sum(n for leaf, n in leaves if leaf in under)
            there = ports * link_gbits * min(1.0, fraction)
            row = graph.rows[worst]
            lowest = UplinkShare(total, row, nodes[0], ports, sharing[worst], there, len(leaves))
    return lowest


def _alone_share(
    graph: _Graph, groups: dict[Group, list[str]], spanned: set[str], link_gbits: int
) -> UplinkShare | None:
    """uplink_share for a node alone under each switch: a switch limits a node only when
    it has fewer uplinks than the node's HCA ports below it."""
    most = max((sum(n for _, n in leaves) for leaves in groups), default=0)
    narrow = [s for s in spanned if graph.up[s] < most]
    below = {s: graph.leaves_below(s) for s in narrow}
    lowest: UplinkShare | None = None
    for leaves, nodes in groups.items():
        ports = {s: sum(n for leaf, n in leaves if leaf in below[s]) for s in narrow}
        total, least, worst = 0.0, math.inf, ""
        for leaf, count in leaves:
            limits = [(graph.up[s] / ports[s], s) for s in narrow if leaf in below[s]]
            fraction, switch = min(limits, default=(math.inf, ""))
            total += count * link_gbits * min(1.0, fraction)
            if fraction < least:
                least, worst = fraction, switch
        if not worst:
            worst = next((leaf for leaf, _ in leaves if leaf in spanned), "")
            least = graph.up[worst] / sum(n for leaf, n in leaves if leaf == worst) if worst else 0
        if worst and (lowest is None or total < lowest.gbits):
            mine = ports.get(worst) or sum(n for leaf, n in leaves if leaf == worst)
            there = mine * link_gbits * min(1.0, least)
            row = graph.rows[worst]
            lowest = UplinkShare(total, row, nodes[0], mine, mine, there, len(leaves))
    return lowest


def units(cluster: ResolvedCluster, members: Collection[str]) -> tuple[tuple[str, ...], ...]:
    """`members` (in spec order) grouped by the set of leaves they hang from: the scalable
    units of a rail-optimised fabric, a leaf's nodes on a tree. Nodes on no leaf are a
    group of their own."""
    cabled = _graph(cluster).cabled
    groups: dict[tuple[str, ...], list[str]] = {}
    for host in cluster.hosts:
        if host.name in members:
            leaves = tuple(leaf for leaf, _ in cabled.get(host.name, ()))
            groups.setdefault(leaves, []).append(host.name)
    return tuple(tuple(names) for names in groups.values())


@dataclass(frozen=True)
class FlowShare:
    share: float  # of the link rate, at most 1
    switch: Blocking
    flows: float  # the flows whose traffic reaches the switch


def flow_share(cluster: ResolvedCluster, members: Collection[str]) -> FlowShare | None:
    """When every node of `members` sends one flow at once to a node under other leaves:
    the least share of the link rate a flow gets, uplink cables over the flows that reach
    a switch the job spans (spread over a leaf's parents as its cables are), and that
    switch. None when no switch carries such flows."""
    graph = _graph(cluster)
    groups = _classes(cluster, members)
    spanned = _spanned(graph, list(groups))
    flows: dict[str, float] = {}
    for leaves, nodes in groups.items():
        for leaf, _ in leaves:
            flows[leaf] = flows.get(leaf, 0) + len(nodes)
    carried = graph.carried(flows)
    lowest: FlowShare | None = None
    order = {name: index for index, name in enumerate(graph.up)}
    for name in sorted(spanned, key=order.__getitem__):
        if name in graph.rows:
            share = min(1.0, graph.up[name] / carried[name])
            if lowest is None or share < lowest.share:
                lowest = FlowShare(share, graph.rows[name], carried[name])
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
    graph = _graph(cluster)
    sides = (set(senders), set(receivers))
    own_ports: list[dict[str, int]] = []
    for nodes in sides:
        ports = dict.fromkeys(graph.up, 0)
        for node in nodes:
            for leaf, count in graph.cabled.get(node, ()):
                ports[leaf] += count
        own_ports.append(ports)
    bits = {
        name: (1 if own_ports[0][name] else 0) | (2 if own_ports[1][name] else 0)
        for name in own_ports[0]
    }
    below = graph.below(bits)
    cuts = []
    for side in (0, 1):
        mine = {name for name, found in below.items() if found == 1 << side}
        for tier in range(-1, max(graph.level.values(), default=0) + 1):
            inside = {name for name in mine if graph.level.get(name, 0) <= tier}
            cables = sum(n for name, n in own_ports[side].items() if name not in inside)
            for name in inside:
                cables += sum(n for parent, n in graph.parents[name] if parent not in inside)
            names = tuple(name for name in own_ports[side] if name in inside)
            cuts.append(Cut(cables, side, tier, names))
    return min(cuts, key=lambda cut: cut.cables)


def rails_by_profile(cluster: ResolvedCluster) -> dict[str, frozenset[int]]:
    """The rails of the leaves each hardware profile's nodes hang from (rail leaves only)."""
    graph = _graph(cluster)
    if graph.profile_rails is None:
        rail = {row.name: row.rail for row in cluster.switch_ports}
        found: dict[str, set[int]] = {}
        for host in cluster.hosts:
            rails = found.setdefault(host.hardware_name, set())
            for leaf, _ in graph.cabled.get(host.name, ()):
                if (number := rail.get(leaf)) is not None:
                    rails.add(number)
        graph.profile_rails = {name: frozenset(rails) for name, rails in found.items()}
    return graph.profile_rails


@dataclass(frozen=True)
class SwitchPlane:
    """One connected set of the fabric's switches: its rails (of its rail leaves) and the
    nodes cabled to it. A rail-optimised fabric whose rails no switch joins has a plane per
    rail; every other fabric one."""

    rails: frozenset[int]
    switches: frozenset[str]
    nodes: frozenset[str]


_PLANES: weakref.WeakKeyDictionary[ResolvedCluster, tuple[SwitchPlane, ...]] = (
    weakref.WeakKeyDictionary()
)


def planes(cluster: ResolvedCluster) -> tuple[SwitchPlane, ...]:
    """The fabric's planes that have nodes cabled to them, in the order of their first
    switch in the spec; found once for the checks that read them."""
    if cluster not in _PLANES:
        _PLANES[cluster] = _planes(cluster)
    return _PLANES[cluster]


def _planes(cluster: ResolvedCluster) -> tuple[SwitchPlane, ...]:
    parent = {row.name: row.name for row in cluster.switch_ports}
    for row in cluster.switch_ports:
        for above, _ in row.up:
            if above in parent:
                parent[_root(parent, row.name)] = _root(parent, above)
    found: dict[str, tuple[set[int], set[str], set[str]]] = {}
    for row in cluster.switch_ports:
        rails, switches, nodes = found.setdefault(_root(parent, row.name), (set(), set(), set()))
        switches.add(row.name)
        nodes.update(node for node, _ in row.hcas)
        if row.rail is not None:
            rails.add(row.rail)
    return tuple(
        SwitchPlane(frozenset(rails), frozenset(switches), frozenset(nodes))
        for rails, switches, nodes in found.values()
        if nodes
    )


def _root(parent: dict[str, str], name: str) -> str:
    while parent[name] != name:
        parent[name] = parent[parent[name]]
        name = parent[name]
    return name


def rails_joined(cluster: ResolvedCluster) -> bool:
    """Whether some switch joins the leaves of two rails: one plane (connected switches)
    holds leaves of more than one rail, so traffic can cross from rail to rail."""
    graph = _graph(cluster)
    if graph.joined is None:
        graph.joined = _joined(cluster)
    return graph.joined


def _joined(cluster: ResolvedCluster) -> bool:
    return any(len(plane.rails) > 1 for plane in planes(cluster))
