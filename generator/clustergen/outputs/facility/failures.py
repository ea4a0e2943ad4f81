"""What is left of the cluster after one failure: the failure-domain report
(facility/failure-domains.md; docs/facility.md defines every figure).

For each kind of failure (one leaf, one spine, one core, one rail or plane, one PDU, one
feed in every rack, one rack) every case is tried, and the worst (fewest GPUs left, then
fewest nodes, then the least bisection share; the first in the spec on a tie) is named.

- **Nodes left**: the compute nodes of the largest group that still reach each other on
  every HCA they have cabled: each of a node's leaves is up, powered and in the same
  connected set of switches as the other nodes' leaves of that plane. A node that loses
  one rail of eight counts as lost: a job across all rails cannot use it at full
  bandwidth. A node whose rack loses a feed is lost when it keeps no PSU, or when the PSUs
  it keeps do not cover its max_watts (it throttles or powers off,
  hardware.feed-loss-underpowers).
- **Bisection share**: for each plane (a connected set of the intact fabric: one per rail
  where no switch joins the rails) and each layer of its switch-to-switch cables
  (leaf-spine, spine-core) the cables whose two switches are still up, over all of them;
  the share is the lowest of them. 100% is the intact fabric. On separate planes a lost
  spine cuts its own rail alone, and a job across the rails runs at its slowest rail.

It is cheap at scale: a single switch lost changes the connected sets only when it is an
articulation point (found once, Tarjan), and a group of nodes changes only by the nodes
the failure takes; the connected sets are computed again only for a failure that takes
several switches or an articulation point, once per distinct set of switches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from clustergen.catalog.gpus import profile_gpu_count
from clustergen.outputs.facility.ports import count_switches, fabric_planes
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import tiers
from clustergen.spec.physical_plan import Device, RackPlan


class Loss(NamedTuple):
    """One failure: its name, and the switches and nodes it takes. Tuples, as Left: a
    16k-node site has 12,869 cases."""

    name: str
    switches: frozenset[str]
    nodes: frozenset[str]
    underpowered: int = 0  # nodes taken because their PSUs left do not cover max_watts


class Left(NamedTuple):
    nodes: int
    gpus: int
    share: float | None  # None: the fabric has no switch-to-switch cables


@dataclass(frozen=True)
class FailureLine:
    kind: str  # 'one leaf'
    cases: int  # failures of this kind tried
    worst: str  # the worst case's name
    left: Left
    underpowered: int


@dataclass(frozen=True)
class FailureReport:
    total_nodes: int
    total_gpus: int
    intact: Left
    lines: tuple[FailureLine, ...]
    fabric: bool  # the spec has fabric switches


class _Fabric:
    """The switch graph and the nodes' leaves, as the report needs them."""

    def __init__(self, cluster: ResolvedCluster, tier: dict[str, int] | None = None) -> None:
        rows = cluster.switch_ports
        self.tier = (tiers(cluster) if tier is None else tier) if rows else {}
        self.names = tuple(row.name for row in rows)
        self.rail = {row.name: row.rail for row in rows}
        self.adjacent: dict[str, list[tuple[str, int]]] = {name: [] for name in self.names}
        adjacent, tier = self.adjacent, self.tier
        for row in rows:
            for child, count in row.down:
                if child in adjacent:
                    adjacent[row.name].append((child, count))
                    adjacent[child].append((row.name, count))
        self.neighbours = {
            name: tuple(dict.fromkeys(other for other, _ in links))
            for name, links in self.adjacent.items()
        }
        self.cut = articulation_points(self.neighbours)
        # The planes of the intact fabric (its connected sets: one per rail where no switch
        # joins the rails). Cables are counted by plane and layer (the lower switch's
        # tier): a plane carries its own rail's traffic, so the share is its least layer.
        plane = self.connected(frozenset())
        self.layer_total: dict[tuple[str, int], int] = {}
        self.cables_of: dict[str, dict[tuple[str, int], int]] = {name: {} for name in self.names}
        for row in rows:
            mine = self.cables_of[row.name]
            for child, count in row.down:
                if child not in adjacent:
                    continue
                layer = (plane[child], tier.get(child, 0))
                self.layer_total[layer] = self.layer_total.get(layer, 0) + count
                mine[layer] = mine.get(layer, 0) + count
                theirs = self.cables_of[child]
                theirs[layer] = theirs.get(layer, 0) + count
        self.plane = plane
        compute = {host.name: host for host in cluster.compute}
        leaves: dict[str, list[str]] = {}
        for row in rows:
            for node, _ in row.hcas:
                if node in compute:
                    leaves.setdefault(node, []).append(row.name)
        # One look-up a profile, not a node: 16k nodes share a handful of profiles.
        counts = {
            name: profile_gpu_count(profile) for name, profile in cluster.spec.hardware.items()
        }
        self.gpus = {name: counts.get(host.hardware_name, 0) for name, host in compute.items()}
        # Nodes that hang from the same leaves (a scalable unit) share one entry.
        self.units: dict[tuple[str, ...], list[str]] = {}
        fabric = bool(rows)
        for name in compute:
            key = tuple(leaves.get(name, ()))
            if key or not fabric:
                self.units.setdefault(key, []).append(name)
        self.unit_of = {node: key for key, nodes in self.units.items() for node in nodes}
        self.on_leaf: dict[str, list[tuple[str, ...]]] = {}
        for key in self.units:
            for leaf in set(key):
                self.on_leaf.setdefault(leaf, []).append(key)
        self.unit_totals = {
            key: (len(nodes), sum(self.gpus[node] for node in nodes))
            for key, nodes in self.units.items()
        }
        self.components = plane
        self.groups = self.group_totals(self.components, frozenset())

    def connected(self, lost: frozenset[str]) -> dict[str, str]:
        """Each switch that is up -> the first switch of its connected set (a walk of the
        switch graph without the lost switches)."""
        label: dict[str, str] = {}
        neighbours = self.neighbours
        for start in self.names:
            if start in label or start in lost:
                continue
            label[start] = start
            stack = [start]
            while stack:
                for other in neighbours[stack.pop()]:
                    if other not in label and other not in lost:
                        label[other] = start
                        stack.append(other)
        return label

    def group_totals(
        self, components: dict[str, str], lost: frozenset[str]
    ) -> dict[tuple[str, ...], list[int]]:
        """Nodes and GPUs of each group of nodes whose every leaf is up, by the connected
        sets their leaves are in."""
        groups: dict[tuple[str, ...], list[int]] = {}
        for key, (nodes, gpus) in self.unit_totals.items():
            if any(leaf in lost for leaf in key):
                continue
            group = groups.setdefault(tuple(components[leaf] for leaf in key), [0, 0])
            group[0] += nodes
            group[1] += gpus
        return groups

    def left(self, loss: Loss, cache: dict[frozenset[str], dict[str, str]]) -> Left:
        """What is left after `loss`: the largest group of nodes, and the bisection share."""
        lost = frozenset(name for name in loss.switches if name in self.adjacent)
        if not lost and len(self.groups) == 1:
            # Only nodes lost, from the one group (a rack or a PDU, nearly every case).
            [(nodes, gpus)] = self.groups.values()
            out = [node for node in loss.nodes if node in self.unit_of]
            gpu = self.gpus
            return Left(nodes - len(out), gpus - sum(gpu[node] for node in out), self.share(lost))
        if len(lost) > 1 or (lost and next(iter(lost)) in self.cut):
            if lost not in cache:
                cache[lost] = self.connected(lost)
            components = cache[lost]
            groups = self.group_totals(components, lost)
            gone: set[tuple[str, ...]] = {key for key in self.units if not lost.isdisjoint(key)}
        else:
            # One switch that splits nothing: its nodes go, the connected sets stay.
            components = self.components
            groups = {key: list(totals) for key, totals in self.groups.items()}
            gone = {key for leaf in lost for key in self.on_leaf.get(leaf, ())}
            for key in gone:
                nodes, gpus = self.unit_totals[key]
                group = groups[tuple(components[leaf] for leaf in key)]
                group[0] -= nodes
                group[1] -= gpus
        taken: dict[tuple[str, ...], list[int]] = {}
        for node in loss.nodes:
            unit = self.unit_of.get(node)
            if unit is not None and unit not in gone:
                totals = taken.setdefault(unit, [0, 0])
                totals[0] += 1
                totals[1] += self.gpus[node]
        for key, (nodes, gpus) in taken.items():
            group = groups[tuple(components[leaf] for leaf in key)]
            group[0] -= nodes
            group[1] -= gpus
        best = max(groups.values(), key=lambda totals: (totals[1], totals[0]), default=[0, 0])
        return Left(best[0], best[1], self.share(lost))

    def share(self, lost: frozenset[str]) -> float | None:
        """The lowest share of switch-to-switch cables still up, over each plane's layers."""
        if not self.layer_total:
            return None
        if not lost:
            return 1.0
        cut: dict[tuple[str, int], int] = {}
        for name in lost:
            for layer, count in self.cables_of[name].items():
                cut[layer] = cut.get(layer, 0) + count
        if len(lost) > 1:
            # A cable between two lost switches was counted at both ends.
            for name in lost:
                for other, count in self.adjacent[name]:
                    if other in lost and other < name:
                        tier = min(self.tier.get(name, 0), self.tier.get(other, 0))
                        cut[(self.plane[name], tier)] -= count
        return min((total - cut.get(layer, 0)) / total for layer, total in self.layer_total.items())


def articulation_points(adjacent: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """The switches whose loss splits their connected set (Tarjan, without recursion)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    points: set[str] = set()
    for start in adjacent:
        if start in order:
            continue
        order[start] = low[start] = len(order)
        children = 0
        stack = [(start, "", iter(adjacent[start]))]
        while stack:
            name, parent, rest = stack[-1]
            step = next(rest, None)
            if step is None:
                stack.pop()
                if stack:
                    above = stack[-1][0]
                    low[above] = min(low[above], low[name])
                    if above != start and low[name] >= order[above]:
                        points.add(above)
                continue
            other = step
            if other not in order:
                order[other] = low[other] = len(order)
                if name == start:
                    children += 1
                stack.append((other, name, iter(adjacent[other])))
            elif other != parent:
                low[name] = min(low[name], order[other])
        if children > 1:
            points.add(start)
    return frozenset(points)


KINDS = ("one leaf", "one spine", "one core")


def failure_report(cluster: ResolvedCluster, tier: dict[str, int] | None = None) -> FailureReport:
    """Each kind of failure's worst case; `tier`: fabric.tiers(cluster), when the caller
    has it."""
    fabric = _Fabric(cluster, tier)
    cache: dict[frozenset[str], dict[str, str]] = {}
    kinds: list[tuple[str, list[Loss]]] = []
    for level, kind in enumerate(KINDS):
        names = [name for name in fabric.names if fabric.tier.get(name, 0) == level]
        kinds.append((kind, [Loss(name, frozenset({name}), frozenset()) for name in names]))
    kinds.append(("one rail or plane", _plane_losses(cluster, fabric)))
    plans = cluster.rack_plans
    seen: dict[tuple[object, ...], tuple[bool, bool]] = {}
    # What each rack loses with each of its feeds: one PDU's loss, and a part of a site
    # feed's.
    feed_losses = {
        (rack.index, feed): _feed_loss(cluster, rack, (feed,), seen)
        for rack in plans
        for feed in rack.feeds
    }
    pdus = [
        feed_losses[(rack.index, load.pdu.feed)]._replace(
            name=f"{load.pdu.name} (rack {rack.rack.name})"
        )
        for rack in plans
        for load in rack.loads
    ]
    kinds.append(("one PDU", pdus))
    kinds.append(("one feed in every rack", _site_feed_losses(plans, feed_losses)))
    kinds.append(("one rack", [_rack_loss(fabric, rack) for rack in plans]))
    lines = []
    for kind, losses in kinds:
        if not losses:
            continue
        results = [(fabric.left(loss, cache), loss) for loss in losses]
        left, loss = min(results, key=lambda item: _badness(item[0]))
        lines.append(FailureLine(kind, len(losses), loss.name, left, loss.underpowered))
    return FailureReport(
        total_nodes=len(fabric.gpus),
        total_gpus=sum(fabric.gpus.values()),
        intact=fabric.left(Loss("", frozenset(), frozenset()), cache),
        lines=tuple(lines),
        fabric=bool(fabric.names),
    )


def _badness(left: Left) -> tuple[int, int, float]:
    return (left.gpus, left.nodes, 1.0 if left.share is None else left.share)


def _plane_losses(cluster: ResolvedCluster, fabric: _Fabric) -> list[Loss]:
    """A rail: its leaves and every switch above them that serves that rail alone (the
    port map's sections, ports.fabric_planes). Without rails, a plane: a connected set of
    switches, whole."""
    planes = fabric_planes(cluster.switch_ports, fabric.tier)
    rails = any(rail is not None for rail in fabric.rail.values())
    return [
        Loss(
            f"{plane.label} ({count_switches(plane.switches, fabric.tier)})",
            frozenset(plane.switches),
            frozenset(),
        )
        for plane in planes
        if not rails or plane.rail is not None
    ]


def _down_on(cluster: ResolvedCluster, device: Device, lost: Sequence[str]) -> tuple[bool, bool]:
    """Whether a device goes down when its rack loses the feeds `lost`, and whether for want
    of power (it keeps PSUs, too few to cover its max_watts)."""
    kept = sum(1 for psu in device.psus if psu.feed not in lost)
    if kept == 0:
        return True, False
    if not device.node:
        return False, False
    power = cluster.spec.hardware[device.hardware].power
    if (
        power is not None
        and power.psu_watts is not None
        and kept * power.psu_watts < power.max_watts
    ):
        return True, True
    return False, False


def _feed_loss(
    cluster: ResolvedCluster,
    rack: RackPlan,
    lost: tuple[str, ...],
    seen: dict[tuple[object, ...], tuple[bool, bool]],
) -> Loss:
    """What the rack loses with the feeds `lost`, unnamed."""
    switches: set[str] = set()
    nodes: set[str] = set()
    underpowered = 0
    for device in rack.devices:
        # Devices of one kind share their PSUs (physical_plan._psus): one answer a kind.
        key = (id(device.psus), device.node, device.hardware, lost)
        if key not in seen:
            seen[key] = _down_on(cluster, device, lost)
        down, short = seen[key]
        if down:
            (nodes if device.node else switches).add(device.name)
            underpowered += short
    return Loss("", frozenset(switches), frozenset(nodes), underpowered)


def _site_feed_losses(
    plans: Sequence[RackPlan], feed_losses: dict[tuple[int, str], Loss]
) -> list[Loss]:
    """Each feed lost under every rack that has it: the racks' losses of that feed."""
    losses = []
    for feed in sorted({feed for rack in plans for feed in rack.feeds}):
        parts = [feed_losses[(rack.index, feed)] for rack in plans if feed in rack.feeds]
        losses.append(
            Loss(
                f"feed {feed} in every rack",
                frozenset().union(*(part.switches for part in parts)),
                frozenset().union(*(part.nodes for part in parts)),
                sum(part.underpowered for part in parts),
            )
        )
    return losses


def _rack_loss(fabric: _Fabric, rack: RackPlan) -> Loss:
    names = {device.name for device in rack.devices}
    switches = frozenset(name for name in names if name in fabric.adjacent)
    nodes = frozenset(device.name for device in rack.devices if device.node)
    return Loss(f"rack {rack.rack.name}", switches, nodes)


FAILURE_HEADER = ("failure", "cases", "worst case", "nodes left", "GPUs left", "bisection", "note")


def share_text(share: float | None, fabric: bool) -> str:
    if share is None:
        return "no switch links" if fabric else "no fabric"
    return f"{share:.0%}"


def _of(part: int, whole: int) -> str:
    return f"{part} of {whole} ({part / whole:.0%})" if whole else f"{part} of 0"


def failure_rows(report: FailureReport) -> tuple[tuple[str, ...], ...]:
    """The report's table: the intact cluster, then each kind of failure's worst case."""
    rows = [
        (
            "none (intact)",
            "",
            "",
            _of(report.intact.nodes, report.total_nodes),
            _of(report.intact.gpus, report.total_gpus),
            share_text(report.intact.share, report.fabric),
            "",
        )
    ]
    for line in report.lines:
        note = ""
        if line.underpowered:
            plural = "s" if line.underpowered != 1 else ""
            note = (
                f"{line.underpowered} node{plural} underpowered: the PSUs left do not cover "
                "max_watts (hardware.feed-loss-underpowers)"
            )
        rows.append(
            (
                line.kind,
                str(line.cases),
                line.worst,
                _of(line.left.nodes, report.total_nodes),
                _of(line.left.gpus, report.total_gpus),
                share_text(line.left.share, report.fabric),
                note,
            )
        )
    return tuple(rows)
