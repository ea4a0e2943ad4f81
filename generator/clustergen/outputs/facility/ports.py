"""The port map and port budget of every fabric switch, by plane, for the people who cable
the floor (facility/ports.csv, facility/ports.md).

A plane is a connected set of switches (a rail of a rail-optimised fabric whose spines
serve one rail each, or the whole fabric when the spines serve every leaf). Each cable of
cables.csv is printed at both of its ends: a leaf's port to a node's HCA, a child's port
up to its parent's, and that parent's port down to the child. The tier names the two
layers a cable joins (node-leaf, leaf-spine, spine-core) and the cable class
(catalog/cables.py: DAC, ACC or optical) follows from the fabric's rate and the tier.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clustergen.catalog.cables import TIERS, Tier, cable_class
from clustergen.outputs.facility.sheets import csv_block
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import tiers
from clustergen.spec.cable_plan import SwitchPorts

PORT_HEADER = (
    "plane",
    "switch",
    "port",
    "tier",
    "peer",
    "peer_port",
    "cable_class",
    "rail",
    "note",
    "peer_at",
)
BUDGET_HEADER = ("plane", "switch", "tier", "model", "ports", "down", "up", "used", "free", "note")
# Past this many switch ports in all, ports.md keeps each plane's budget and its
# switch-to-switch ports, and leaves the node ports to ports.csv (at 16k nodes they are
# a quarter million rows, no page anyone prints).
PRINTED_PORTS = 4096
SWITCH_TIER_NAMES = ("leaf", "spine", "core")
BEYOND = "beyond the switch's ports"  # cables.csv's note


@dataclass(frozen=True)
class Plane:
    number: int  # 1-based, in the order of each plane's first switch in the spec
    label: str  # 'plane 1' (a connected set of switches), 'rail 2'
    switches: tuple[str, ...]  # spec order
    rail: int | None = None  # the rail of a rail-optimised fabric the section is


def switch_tier_name(tier: int) -> str:
    return SWITCH_TIER_NAMES[tier] if tier < len(SWITCH_TIER_NAMES) else f"tier {tier}"


def count_switches(names: Sequence[str], tier: dict[str, int]) -> str:
    """'4 leaves, 2 spines': how many switches of each tier, the lowest first."""
    counts: dict[int, int] = {}
    for name in names:
        level = tier.get(name, 0)
        counts[level] = counts.get(level, 0) + 1
    nouns = (("leaf", "leaves"), ("spine", "spines"), ("core", "cores"))
    return ", ".join(
        f"{count} {nouns[level][count != 1] if level < len(nouns) else f'tier-{level} switches'}"
        for level, count in sorted(counts.items())
    )


def link_tier(child_tier: int) -> Tier:
    """The tier of a cable from a switch of `child_tier` up to its parent; a fourth layer's
    cables go under spine-core, the last switch-to-switch class the catalog knows."""
    return TIERS[min(child_tier + 1, len(TIERS) - 1)]


def switch_rails(rows: Sequence[SwitchPorts], tier: dict[str, int]) -> dict[str, int | None]:
    """Each switch's one rail: a leaf's own, a switch above leaves the rail every leaf below
    it carries when they all carry the same one (a spine of one rail); else None."""
    below: dict[str, set[int | None]] = {}
    children = {row.name: [child for child, _ in row.down] for row in rows}
    for row in sorted(rows, key=lambda row: tier.get(row.name, 0)):
        under = [below.get(child, {None}) for child in children[row.name]]
        below[row.name] = set().union(*under) if under else {row.rail}
    return {name: next(iter(rails)) if len(rails) == 1 else None for name, rails in below.items()}


def fabric_planes(rows: Sequence[SwitchPorts], tier: dict[str, int]) -> tuple[Plane, ...]:
    """The sections of the port map. On a rail-optimised fabric, one per rail (its leaves
    and the switches that serve it alone), then the switches of several rails or none
    (cores over every spine, a service leaf); else one per connected set of switches, in
    the order of its first switch in the spec."""
    rails = switch_rails(rows, tier)
    if any(row.rail is not None for row in rows):
        by_rail: dict[int | None, list[str]] = {}
        for row in rows:
            by_rail.setdefault(rails[row.name], []).append(row.name)
        numbered = sorted(rail for rail in by_rail if rail is not None)
        planes = [Plane(rail, f"rail {rail}", tuple(by_rail[rail]), rail) for rail in numbered]
        if None in by_rail:
            shared = "switches of several rails, or of none"
            planes.append(Plane(len(planes) + 1, shared, tuple(by_rail[None])))
        return tuple(planes)
    root = {row.name: row.name for row in rows}

    def find(name: str) -> str:
        while root[name] != name:
            root[name] = root[root[name]]
            name = root[name]
        return name

    for row in rows:
        for child, _ in row.down:
            if child in root:
                root[find(child)] = find(row.name)
    members: dict[str, list[str]] = {}
    for row in rows:
        members.setdefault(find(row.name), []).append(row.name)
    return tuple(
        Plane(number, f"plane {number}", tuple(names))
        for number, names in enumerate(members.values(), start=1)
    )


@dataclass(frozen=True)
class PortMap:
    planes: tuple[Plane, ...]
    # ports.csv: PORT_HEADER, then a row per port; plane, then spec order, then port.
    # Made as the rows are, which are never all kept: at 65,536 nodes on rails they are
    # 2.6 million.
    text: str
    count: int  # the rows of ports.csv
    budgets: tuple[tuple[str, ...], ...]  # BUDGET_HEADER's cells; plane, then spec order
    over: tuple[str, ...]  # switches with more cables than ports
    classes: tuple[tuple[str, str], ...] = ()  # ('node-leaf', 'DAC'), in the rows' order
    links: int = 0  # the rows of switch-to-switch cables (each cable at both ends)
    # What ports.md prints of the rows: '' every row, 'node' (past PRINTED_PORTS ports in
    # all) the switch-to-switch rows, 'all' (past PRINTED_PORTS of those too) none; and
    # those rows.
    omitted: str = ""
    printed: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class _Cabling:
    """What each row of the port map looks up, once."""

    plane_of: dict[str, str]
    rail_of: dict[str, str]
    radix: dict[str, int | None]
    at: dict[str, str]
    rack_of: dict[str, str]
    link_of: dict[int, Tier]  # a switch's tier -> the tier of its cables up
    classes: dict[str, str]  # a tier -> its cable class; 'across racks' for a node's


def port_map(
    cluster: ResolvedCluster,
    cable_rows: Iterable[Sequence[str]],
    tier: dict[str, int] | None = None,
) -> PortMap:
    """Every switch port with its cable, at both ends, and each switch's budget, from the
    rows of cables.csv (sheets.cable_sheet: switch, port, kind, peer, peer port, note),
    read once."""
    ports = cluster.switch_ports
    fabric = cluster.spec.network.fabric
    if fabric is None or not ports:
        return PortMap((), "", 0, (), ())
    tier = tiers(cluster) if tier is None else tier
    planes = fabric_planes(ports, tier)
    placed = locations(cluster)
    classes: dict[str, str] = {name: cable_class(fabric.rate, name) for name in TIERS}
    # A node cabled to a leaf in another rack: no in-rack run, and no length in the spec,
    # so the class that reaches any length (catalog/cables.py: optical).
    classes["across racks"] = cable_class(fabric.rate, "node-leaf", math.inf)
    look = _Cabling(
        plane_of={name: plane.label for plane in planes for name in plane.switches},
        rail_of={row.name: "" if row.rail is None else str(row.rail) for row in ports},
        radix={row.name: row.ports for row in ports},
        at={name: place for name, (_, place) in placed.items()},
        rack_of={name: rack for name, (rack, _) in placed.items()},
        link_of={level: link_tier(level) for level in set(tier.values()) | {0}},
        classes=classes,
    )
    switches = _Switches({row.name: row for row in ports})
    used = _port_rows(cable_rows, look, tier, switches)
    switches.close()
    order = [name for plane in planes for name in plane.switches]
    budgets, over = _budgets(ports, planes, look.plane_of, tier)
    shown = tuple((name, classes[name]) for name in ("node-leaf", "across racks", *TIERS[1:]))
    return PortMap(
        planes,
        "".join([csv_block([PORT_HEADER]), *(switches.text.get(name, "") for name in order)])
        if switches.count
        else "",
        switches.count,
        budgets,
        over,
        tuple(c for c in shown if c[0] in used),
        switches.links,
        switches.omitted,
        tuple(row for name in order for row in switches.printed.get(name, ())),
    )


class _Switches:
    """Each switch's rows of ports.csv in port order, made text once they are all in.

    The cables come by switch (spec.cable_plan.cables), each switch's own (to its nodes,
    and up) in port order; the rows of the ports its children's uplinks land on come with
    the children's cables, before or after its own. A switch is written once its own
    cables are past and every uplink its budget counts has landed: at 65,536 nodes on a
    rail fabric the 2.6 million rows are never all kept, only their text.
    """

    def __init__(self, ports: dict[str, SwitchPorts]) -> None:
        # Rows still to land on each switch, and those with no cable of their own.
        self.landing = {name: sum(n for _, n in row.down) for name, row in ports.items()}
        self.past = {name for name, row in ports.items() if not row.hcas and not row.up}
        self.own: dict[str, list[tuple[str, ...]]] = {}
        self.landed: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        self.text: dict[str, str] = {}
        # The rows ports.md may print, as the rows written so far allow (omitted).
        self.printed: dict[str, list[tuple[str, ...]]] = {}
        self.count = 0  # rows written
        self.links = 0  # of them, the rows of switch-to-switch cables (a cable at both ends)
        self._current: str | None = None
        self._rows: list[tuple[str, ...]] = []  # the current switch's own rows

    @property
    def omitted(self) -> str:
        """What ports.md leaves to ports.csv (port_pages), as the rows written stand."""
        if self.count <= PRINTED_PORTS:
            return ""
        return "node" if self.links <= PRINTED_PORTS else "all"

    def add(self, switch: str, row: tuple[str, ...]) -> None:
        """A row of `switch`'s own cables."""
        if switch != self._current:
            self._begin(switch)
        self._rows.append(row)

    def _begin(self, switch: str) -> None:
        if self._current is not None:
            self.own[self._current] = self._rows
            self.past.add(self._current)
            self._write(self._current)
        # The contract of cables.csv's order; a second run of one switch's rows would
        # come after its text was made.
        assert switch not in self.past, f"cables.csv lists {switch}'s cables apart"
        self._current, self._rows = switch, []

    def land(self, switch: str, port: int, row: tuple[str, ...]) -> None:
        """A row of a port of `switch` that a child's uplink lands on."""
        self.landed.setdefault(switch, []).append((port, row))
        self.landing[switch] -= 1
        if self.landing[switch] <= 0 and switch in self.past:
            self._write(switch)

    def close(self) -> None:
        if self._current is not None:
            self.own[self._current] = self._rows
            self._current, self._rows = None, []
        for name in [*self.own, *self.landed]:
            if name not in self.text:
                self.past.add(name)
                self.landing[name] = 0
                self._write(name)
        omitted = self.omitted
        self.printed = {name: _printed(rows, omitted) for name, rows in self.printed.items()}

    def _write(self, name: str) -> None:
        if name not in self.past or self.landing[name] > 0 or name in self.text:
            return
        rows = self.own.pop(name, [])
        if name in self.landed:
            mixed = [(int(row[2]), row) for row in rows] + self.landed.pop(name)
            rows = [row for _, row in sorted(mixed, key=lambda item: item[0])]
        self.text[name] = csv_block(rows) if rows else ""
        self.count += len(rows)
        self.links += sum(1 for row in rows if row[3] != "node-leaf")
        self.printed[name] = _printed(rows, self.omitted)


def _printed(rows: list[tuple[str, ...]], omitted: str) -> list[tuple[str, ...]]:
    """The rows ports.md prints: all, the switch-to-switch ones ('node'), or none."""
    if omitted == "":
        return rows
    return [row for row in rows if row[3] != "node-leaf"] if omitted == "node" else []


def _port_rows(
    cable_rows: Iterable[Sequence[str]],
    look: _Cabling,
    tier: dict[str, int],
    switches: _Switches,
) -> set[str]:
    """Each cable at both ends into `switches`; the cable tiers used."""
    used: set[str] = set()
    plane_of, rail_of, at, rack_of = look.plane_of, look.rail_of, look.at, look.rack_of
    node_class = look.classes["node-leaf"]
    add, land = switches.add, switches.land
    for switch, port, kind, peer, peer_port, note in cable_rows:
        if kind == "node":
            kind_class, here, there = node_class, rack_of.get(switch), rack_of.get(peer)
            if here is not None and there is not None and here != there:
                kind_class = look.classes["across racks"]
                note = "; ".join(filter(None, (note, f"crosses racks: {here} to {there}")))
                used.add("across racks")
            else:
                used.add("node-leaf")
            plane, rail, peer_at = plane_of[switch], rail_of[switch], at.get(peer, "")
            add(
                switch,
                (
                    plane,
                    switch,
                    port,
                    "node-leaf",
                    peer,
                    peer_port,
                    kind_class,
                    rail,
                    note,
                    peer_at,
                ),
            )
            continue
        link = look.link_of[tier.get(switch, 0)]
        used.add(link)
        rail, kind_class = rail_of[switch], look.classes[link]
        mine = (plane_of[switch], switch, port, link, peer, peer_port, kind_class, rail, note)
        add(switch, (*mine, at.get(peer, "")))
        landing, last = int(peer_port), look.radix[peer]
        past = BEYOND if last is not None and landing > last else ""
        theirs = (plane_of[peer], peer, peer_port, link, switch, port, kind_class, rail, past)
        land(peer, landing, (*theirs, at.get(switch, "")))
    return used


def _budgets(
    ports: Sequence[SwitchPorts],
    planes: Sequence[Plane],
    plane_of: dict[str, str],
    tier: dict[str, int],
) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Each switch's ports: of its model (given, catalog, or the rate's usual switch),
    cabled down (HCAs and child switches' uplinks) and up, and free; a switch with more
    cables than ports is flagged (validate reports it: network.switch-ports-exceeded)."""
    row_of = {row.name: row for row in ports}
    rows = []
    over = []
    for plane in planes:
        for name in plane.switches:
            row = row_of[name]
            down = sum(n for _, n in row.hcas) + sum(n for _, n in row.down)
            up = sum(n for _, n in row.up)
            used = down + up
            note, free = "", ""
            if row.ports is None:
                note = "ports unknown: give the switch's model or ports"
            else:
                free = str(row.ports - used)
                notes = []
                if used > row.ports:
                    notes.append(f"OVER BUDGET by {used - row.ports}")
                    over.append(name)
                if row.assumed:
                    notes.append("ports assumed from the fabric's rate")
                note = "; ".join(notes)
            total = "" if row.ports is None else str(row.ports)
            cells = (plane.label, name, switch_tier_name(tier.get(name, 0)), row.model or "")
            rows.append((*cells, total, str(down), str(up), str(used), free, note))
    return tuple(rows), tuple(over)


def locations(cluster: ResolvedCluster) -> dict[str, tuple[str, str]]:
    """Where each device sits, by name: its rack, and 'r01 U42' (rack and lowest unit)."""
    return {
        device.name: (rack.rack.name, f"{rack.rack.name} U{device.u}")
        for rack in cluster.rack_plans
        for device in rack.devices
    }


@dataclass(frozen=True)
class SwitchSection:
    name: str
    tier: str  # 'leaf', 'spine', 'core'
    at: str  # 'r01 U42'; '' for a switch no rack holds
    budget: tuple[str, ...]  # its BUDGET_HEADER cells
    ports: tuple[tuple[str, ...], ...]  # port, tier, peer, peer port, peer at, cable, rail, note


@dataclass(frozen=True)
class PlaneSection:
    label: str
    switches: tuple[SwitchSection, ...]
    budget_rows: tuple[tuple[str, ...], ...]  # BUDGET_HEADER less the plane


def port_pages(
    ports: PortMap, placed: dict[str, tuple[str, str]]
) -> tuple[tuple[PlaneSection, ...], str]:
    """ports.md's sections, one per plane, and what it leaves to ports.csv: '' (nothing),
    'node' (past PRINTED_PORTS ports in all: the ports cabled to nodes) or 'all' (past
    PRINTED_PORTS switch-to-switch ports as well: every port; the budgets stay)."""
    by_switch: dict[str, list[tuple[str, ...]]] = {}
    for row in ports.printed:
        cells = (row[2], row[3], row[4], row[5], row[9], row[6], row[7], row[8])
        by_switch.setdefault(row[1], []).append(cells)
    budget_of = {row[1]: row for row in ports.budgets}
    sections = []
    for plane in ports.planes:
        switches = tuple(
            SwitchSection(
                name,
                budget_of[name][2],
                placed[name][1] if name in placed else "",
                budget_of[name],
                tuple(by_switch.get(name, ())),
            )
            for name in plane.switches
        )
        sections.append(
            PlaneSection(
                plane.label, switches, tuple(budget_of[name][1:] for name in plane.switches)
            )
        )
    return tuple(sections), ports.omitted
