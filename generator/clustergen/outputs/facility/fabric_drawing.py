"""The geometry of the fabric's drawing (facility/fabric.svg), from the switches' cables
(ResolvedCluster.switch_ports) as cables.csv lists them.

Tiers are rows, the top tier first: cores, spines, leaves, and under the leaves one box
per group of nodes (the nodes a set of leaves shares: a scalable unit of a
rail-optimised fabric, or one leaf's nodes), never one box per node. Leaves are
coloured by the rail they carry and drawn side by side by group. A line joins each
pair of boxes that has cables between them; where every pair of a layer has the same
count, the legend says it once, else each line carries its count. A row of more than
MAX_BOXES boxes draws consecutive groups as one box (at 16k nodes, 513 leaves in 33
boxes of 16), so the picture stays one a person reads at every size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from clustergen.catalog.gpus import profile_gpu_count
from clustergen.outputs.facility.elevation import CHAR_PX, Box, Text, fit
from clustergen.outputs.facility.ports import count_switches, switch_rails
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import tiers
from clustergen.spec.cable_plan import SwitchPorts
from clustergen.spec.hosts import compress

MAX_BOXES = 32
# Rail colours (Tableau 10, as the elevations' role fills), rail 1 first; the 11th rail
# takes the first colour again. A switch with no rail, or serving several, is grey.
RAIL_FILLS = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
SHARED_FILL = "#d9d9d9"
NODES_FILL = "#f4f4f4"
MARGIN = 24
TITLE_H = 64
BOX_H = 38
NODES_H = 38
ROW_GAP = 120  # between rows: room for the links
BOX_GAP = 8  # between boxes of one group
GROUP_GAP = 24  # between groups
MIN_BOX_W = 64
MAX_BOX_W = 200
LEGEND_ROW = 18
WRITTEN_COUNTS = 64  # a layer of more lines than this says its total in the legend
# Switch and node names are mostly digits and brackets, wider than the average glyph the
# elevations' CHAR_PX stands for: DejaVu Sans Bold's digits are 0.696 em (7.7 px at 11 px).
NAME_CHAR_PX = 7.7


@dataclass(frozen=True)
class FabricBox:
    """A switch, or several drawn as one, or a group of nodes."""

    box: Box
    name: Text  # bold
    detail: Text
    over: bool = False  # a switch (or one of several) has more cables than ports


@dataclass(frozen=True)
class FabricLink:
    x1: int
    y1: int
    x2: int
    y2: int
    stroke: str
    width: float
    count: Text | None  # the cable count, where the layer's counts differ


@dataclass(frozen=True)
class FabricDrawing:
    width: int
    height: int
    title: Text
    subtitle: Text
    rows: tuple[Text, ...]  # each row's name, at its left
    links: tuple[FabricLink, ...]
    boxes: tuple[FabricBox, ...]
    legend: tuple[tuple[Box | None, Text], ...]


@dataclass
class _Item:
    """One box to be: its switches (or its group's nodes), its fill and its texts."""

    names: list[str]
    fill: str
    label: str
    detail: str
    group: int  # leaves of one group are drawn together
    over: bool = False
    x: int = 0
    y: int = 0
    width: int = MIN_BOX_W


def rail_fill(rail: int | None) -> str:
    return SHARED_FILL if rail is None else RAIL_FILLS[(rail - 1) % len(RAIL_FILLS)]


ROW_LABEL_W = 64  # the row names' column
ROW_NAMES = ("leaves", "spines", "cores")


def _leaf_groups(leaves: Sequence[SwitchPorts]) -> list[tuple[list[str], list[str]]]:
    """Leaves by the nodes they share (a unit's rail leaves, or one leaf and its nodes), in
    the order of their first leaf; each group's leaves and its nodes."""
    groups: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
    for row in leaves:
        nodes = tuple(node for node, _ in row.hcas)
        key = nodes if nodes else ("", row.name)
        groups.setdefault(key, ([], list(nodes)))[0].append(row.name)
    return list(groups.values())


def _chunks(count: int) -> int:
    """How many consecutive entries one box stands for, so a row has at most MAX_BOXES."""
    return max(1, math.ceil(count / MAX_BOXES))


def _merged_fill(fills: Sequence[str]) -> str:
    return fills[0] if len(set(fills)) == 1 else SHARED_FILL


def _switch_item(names: list[str], ports: _Switches, group: int) -> _Item:
    rows = [ports.row_of[name] for name in names]
    fill = _merged_fill([rail_fill(ports.rail_of[name]) for name in names])
    over = any(row.ports is not None and row.used > row.ports for row in rows)
    if len(rows) > 1:
        return _Item(names, fill, compress(names), f"{len(rows)} switches", group, over)
    row = rows[0]
    rail = ports.rail_of[row.name]
    if row.hcas:
        detail = f"{sum(n for _, n in row.hcas)} HCA ports"
    else:
        detail = f"{sum(n for _, n in row.down)} cables down"
    if rail is not None:
        detail = f"rail {rail}" if row.rail is not None else f"rail {rail} · {detail}"
    if over:
        detail = f"{detail} · over"
    return _Item(names, fill, row.name, detail, group, over)


@dataclass(frozen=True)
class _Switches:
    row_of: dict[str, SwitchPorts]
    rail_of: dict[str, int | None]


def _rows(
    cluster: ResolvedCluster, tier: dict[str, int]
) -> tuple[list[list[_Item]], list[_Item], bool]:
    """The boxes of each tier, leaves first, the node boxes, and whether some box stands
    for several switches or groups."""
    ports = cluster.switch_ports
    switches_of = _Switches({row.name: row for row in ports}, switch_rails(ports, tier))
    by_tier: dict[int, list[SwitchPorts]] = {}
    for row in ports:
        by_tier.setdefault(tier.get(row.name, 0), []).append(row)
    groups = _leaf_groups(by_tier.get(0, []))
    merged = False
    leaf_count = sum(len(leaves) for leaves, _ in groups)
    step = _chunks(len(groups))
    leaves_row: list[_Item] = []
    node_row: list[_Item] = []
    # One count a profile, not a node: 65,536 nodes share a handful of profiles.
    per_profile = {name: profile_gpu_count(p) for name, p in cluster.spec.hardware.items()}
    gpus = {
        host.name: per_profile[host.hardware_name] for host in cluster.compute if host.hardware.gpu
    }
    for number, start in enumerate(range(0, len(groups), step)):
        chunk = groups[start : start + step]
        names = [name for leaves, _ in chunk for name in leaves]
        nodes = [node for _, members in chunk for node in members]
        if leaf_count > MAX_BOXES:
            merged = merged or len(names) > 1
            leaves_row.append(_switch_item(names, switches_of, number))
        else:
            leaves_row += [_switch_item([name], switches_of, number) for name in names]
        if nodes:
            count = sum(gpus.get(node, 0) for node in nodes)
            detail = f"{len(nodes)} node{'s' if len(nodes) != 1 else ''} · {count} GPUs"
            node_row.append(_Item(nodes, NODES_FILL, compress(nodes), detail, number))
    rows = [leaves_row]
    for level in sorted(level for level in by_tier if level > 0):
        switches = [row.name for row in by_tier[level]]
        size = _chunks(len(switches))
        merged = merged or size > 1
        rows.append(
            [
                _switch_item(switches[i : i + size], switches_of, i)
                for i in range(0, len(switches), size)
            ]
        )
    return rows, node_row, merged


NODE_GAP = 64  # between the leaves and their node boxes


def _width(items: Sequence[_Item]) -> int:
    wanted = max(
        (max(len(item.label) * NAME_CHAR_PX, len(item.detail) * CHAR_PX) + 12 for item in items),
        default=MIN_BOX_W,
    )
    return int(min(MAX_BOX_W, max(MIN_BOX_W, wanted)))


def _place_leaves(leaves: list[_Item], nodes: list[_Item], y: int) -> int:
    """Leaves side by side by group, each group's node box under it; the row's right end."""
    width = _width(leaves)
    node_of = {item.group: item for item in nodes}
    x = MARGIN + ROW_LABEL_W
    start = 0
    while start < len(leaves):
        group = leaves[start].group
        end = start
        while end < len(leaves) and leaves[end].group == group:
            end += 1
        span = (end - start) * width + (end - start - 1) * BOX_GAP
        node = node_of.get(group)
        needed = _width([node]) if node is not None else 0
        extent = max(span, needed)
        left = x + (extent - span) // 2
        for offset, item in enumerate(leaves[start:end]):
            item.x, item.y, item.width = left + offset * (width + BOX_GAP), y, width
        if node is not None:
            node.x, node.y, node.width = x, y + BOX_H + NODE_GAP, extent
        x += extent + GROUP_GAP
        start = end
    return x - GROUP_GAP


def _place_row(items: list[_Item], y: int, right: int) -> int:
    """A row of switches centred over the drawing (from the row names to `right`)."""
    width = _width(items)
    span = len(items) * width + (len(items) - 1) * GROUP_GAP
    left = MARGIN + ROW_LABEL_W
    x = left + max(0, (right - left - span) // 2)
    for item in items:
        item.x, item.y, item.width = x, y, width
        x += width + GROUP_GAP
    return x - GROUP_GAP


def _box(item: _Item, height: int) -> FabricBox:
    inner = item.width - 8
    centre = item.x + item.width // 2
    return FabricBox(
        Box(item.x, item.y, item.width, height, item.fill),
        Text(centre, item.y + 16, fit(item.label, inner, NAME_CHAR_PX), "bold", "middle"),
        Text(centre, item.y + 30, fit(item.detail, inner, CHAR_PX), "normal", "middle"),
        item.over,
    )


LAYER_NAMES = ("node-leaf", "leaf-spine", "spine-core")


def _layer_name(child_row: int) -> str:
    """The links from row `child_row` up (-1: the node boxes up to their leaves)."""
    index = child_row + 1
    return LAYER_NAMES[index] if index < len(LAYER_NAMES) else f"tier {child_row}-{index}"


def _pairs(
    cluster: ResolvedCluster, rows: list[list[_Item]], nodes: list[_Item]
) -> dict[int, dict[tuple[int, int], int]]:
    """Cables between boxes, by layer (-1: node boxes to leaves; n: row n up to row n+1),
    keyed by (lower box, upper box) indices in their rows."""
    where: dict[str, tuple[int, int]] = {}
    for level, items in enumerate(rows):
        for index, item in enumerate(items):
            for name in item.names:
                where[name] = (level, index)
    layers: dict[int, dict[tuple[int, int], int]] = {}
    node_box = {item.group: index for index, item in enumerate(nodes)}
    for row in cluster.switch_ports:
        if row.name not in where:
            continue
        level, index = where[row.name]
        hcas = sum(n for _, n in row.hcas)
        if level == 0 and hcas and rows[0][index].group in node_box:
            key = (node_box[rows[0][index].group], index)
            pairs = layers.setdefault(-1, {})
            pairs[key] = pairs.get(key, 0) + hcas
        for parent, count in row.up:
            if parent in where and where[parent][0] == level + 1:
                key = (index, where[parent][1])
                pairs = layers.setdefault(level, {})
                pairs[key] = pairs.get(key, 0) + count
    return layers


def _links(
    layers: dict[int, dict[tuple[int, int], int]], rows: list[list[_Item]], nodes: list[_Item]
) -> tuple[list[FabricLink], list[str]]:
    """The lines, and the legend's line for each layer whose pairs all have one count."""
    links, said = [], []
    for layer, pairs in sorted(layers.items()):
        lower = nodes if layer == -1 else rows[layer]
        upper = rows[layer + 1] if layer + 1 < len(rows) else []
        counts = set(pairs.values())
        name = _layer_name(layer)
        uniform = len(counts) == 1
        # Past WRITTEN_COUNTS lines in a layer the counts would overlap: the legend gives
        # the layer's total instead.
        written = not uniform and len(pairs) <= WRITTEN_COUNTS
        if uniform:
            count = min(counts)
            said.append(f"{name}: {count} cable{'s' if count != 1 else ''} on every line")
        elif written:
            said.append(f"{name}: each line's cable count is written on it")
        else:
            said.append(f"{name}: {sum(pairs.values()):,} cables on {len(pairs):,} lines")
        for (low, high), count in pairs.items():
            a = lower[low]
            b = rows[0][high] if layer == -1 else upper[high]
            x1, x2 = a.x + a.width // 2, b.x + b.width // 2
            if layer == -1:
                x1, y1, y2 = x2, a.y, b.y + BOX_H
            else:
                y1, y2 = a.y, b.y + BOX_H
            label = None
            if written:
                # A quarter of the way up from the lower box, where lines are apart.
                label = Text(
                    x1 + (x2 - x1) // 4, y1 + (y2 - y1) // 4, str(count), "normal", "middle"
                )
            stroke = a.fill if a.fill not in (SHARED_FILL, NODES_FILL) else "#555555"
            if layer == -1:
                stroke = b.fill if b.fill != SHARED_FILL else "#555555"
            links.append(FabricLink(x1, y1, x2, y2, stroke, 1.2, label))
    return links, said


def fabric_drawing(
    cluster: ResolvedCluster, tier: dict[str, int] | None = None
) -> FabricDrawing | None:
    """The drawing of the compute fabric; None for a spec without fabric switches.
    `tier`: fabric.tiers(cluster), when the caller has it."""
    fabric = cluster.spec.network.fabric
    if fabric is None or not cluster.switch_ports:
        return None
    tier = tiers(cluster) if tier is None else tier
    rows, nodes, merged = _rows(cluster, tier)
    top = TITLE_H
    leaf_y = top + (len(rows) - 1) * (BOX_H + ROW_GAP)
    right = _place_leaves(rows[0], nodes, leaf_y)
    for level in range(1, len(rows)):
        y = top + (len(rows) - 1 - level) * (BOX_H + ROW_GAP)
        right = max(right, _place_row(rows[level], y, right))
    links, said = _links(_pairs(cluster, rows, nodes), rows, nodes)
    row_names = [
        Text(MARGIN, items[0].y + 24, ROW_NAMES[level] if level < 3 else f"tier {level}", "bold")
        for level, items in enumerate(rows)
        if items
    ]
    if nodes:
        row_names.append(Text(MARGIN, nodes[0].y + 24, "nodes", "bold"))
    bottom = max([item.y + NODES_H for item in nodes] + [leaf_y + BOX_H]) + 32
    legend = _legend(cluster, said, merged, bottom)
    texts = [text for _, text in legend]
    return FabricDrawing(
        width=max([right] + [int(t.x + len(t.text) * CHAR_PX) for t in texts]) + MARGIN,
        height=max(text.y for text in texts) + MARGIN,
        title=Text(MARGIN, 28, f"Fabric of {cluster.spec.cluster.name}", "bold"),
        subtitle=Text(
            MARGIN, 48, f"{fabric.rate.upper()} {fabric.type}: {_summary(cluster, tier)}"
        ),
        rows=tuple(row_names),
        links=tuple(links),
        boxes=tuple(
            [_box(item, BOX_H) for items in rows for item in items]
            + [_box(item, NODES_H) for item in nodes]
        ),
        legend=legend,
    )


def _summary(cluster: ResolvedCluster, tier: dict[str, int]) -> str:
    """'32 leaves, 16 spines, 4 cores on 8 rails; 128 nodes cabled'."""
    text = count_switches([row.name for row in cluster.switch_ports], tier)
    rails = {row.rail for row in cluster.switch_ports if row.rail is not None}
    if rails:
        text += f" on {len(rails)} rail{'s' if len(rails) != 1 else ''}"
    nodes = {node for row in cluster.switch_ports for node, _ in row.hcas}
    return f"{text}; {len(nodes)} nodes cabled"


def _legend(
    cluster: ResolvedCluster, said: list[str], merged: bool, y: int
) -> tuple[tuple[Box | None, Text], ...]:
    """The rail colours on one line, then what the lines' cable counts are."""
    rails = sorted({row.rail for row in cluster.switch_ports if row.rail is not None})
    entries: list[tuple[Box | None, Text]] = []
    x = MARGIN
    swatches = [(rail_fill(rail), f"rail {rail}") for rail in rails]
    if any(row.rail is None for row in cluster.switch_ports):
        swatches.append((SHARED_FILL, "no rail, or several" if rails else "switch"))
    swatches.append((NODES_FILL, "nodes"))
    for fill, text in swatches:
        entries.append((Box(x, y, 12, 12, fill), Text(x + 16, y + 10, text)))
        x += 24 + int(len(text) * CHAR_PX)
    lines = ["Cables: " + "; ".join(said)] if said else []
    if merged:
        lines.append(
            f"A box stands for several switches, or several groups of leaves, where a row "
            f"would hold more than {MAX_BOXES}: its lines carry the cables of all of them."
        )
    if any(row.ports is not None and row.used > row.ports for row in cluster.switch_ports):
        lines.append("A red frame: a switch with more cables than ports (ports.md, OVER BUDGET).")
    for number, line in enumerate(lines, start=1):
        entries.append((None, Text(MARGIN, y + 10 + number * LEGEND_ROW, line)))
    return tuple(entries)
