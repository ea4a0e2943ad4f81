"""What the facility sheets and pictures print, from the cluster's one physical plan.

Every number comes from Cluster.rack_plans (the plan the power checks judged) and every
cable from Cluster.switch_ports; here they are only turned into rows of fixed-format text
and into the coordinates of the rack elevations, so the templates hold no arithmetic.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clustergen.errors import collapse_alike, format_path
from clustergen.facility import (
    CONTINUOUS_LOAD_LIMIT,
    FEEDS,
    Device,
    FeedLoad,
    RackPlan,
    cables,
    kilo,
)
from clustergen.names import element_names
from clustergen.resolve import Cluster

# Fills by role: light enough for black text and for printing, distinct in colour, and
# the role is written in every label too, for a grey-scale print.
ROLE_FILLS = {
    "compute": "#a6c8ec",
    "controller": "#f9c38a",
    "storage": "#a8d5a0",
    "login": "#d4b5d0",
    "service": "#e6d3b3",
    "switch": "#9fd8d3",
    "device": "#d9d9d9",
}
OK_FILL = "#59a14f"
NEAR_FILL = "#f1a340"  # within the limit, but above NEAR_LIMIT of it
OVER_FILL = "#e15759"
NEAR_LIMIT = 0.9

# Elevation geometry, in SVG user units (px at 100%).
UNIT_PX = 20
RACK_X = 34  # left of the rack frame; the unit numbers sit in the margins
RACK_W = 300
TITLE_H = 52
BAR_W = RACK_W
LEGEND_ROW_PX = 16
FONT_PX = 11
# Labels are cut to fit their box by an estimate of DejaVu Sans at FONT_PX (its average
# glyph is about half an em, bold a little wider, as measured in Chromium).
CHAR_PX = 5.5
BOLD_CHAR_PX = 6.3
LABEL_W = RACK_W - 16


@dataclass(frozen=True)
class Text:
    x: int
    y: int
    text: str
    weight: str = "normal"  # "bold" for titles
    anchor: str = "start"  # SVG text-anchor: start, middle or end


@dataclass(frozen=True)
class Label:
    """A device's name in bold, and what it is: on one line in a 1U box, else two."""

    x: int
    name_y: int
    name: str
    detail_y: int  # == name_y: the detail follows the name on its line
    detail: str

    @property
    def one_line(self) -> bool:
        return self.detail_y == self.name_y


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int
    fill: str


@dataclass(frozen=True)
class Bar:
    """A load bar scaled to the circuit's full rating, with the 80% limit marked."""

    x: int
    y: int
    width: int
    height: int
    fill_width: int
    fill: str
    limit_x: int  # the 80% tick, a little taller than the bar
    tick_top: int
    tick_bottom: int
    percent_of_limit: str  # '93%'


@dataclass(frozen=True)
class Elevation:
    rack: str
    width: int
    height: int
    title: Text
    subtitle: Text
    frame: Box
    grid: str  # SVG of every unit (drawn first; an empty one stays white) and its number
    devices: tuple[tuple[Box, Label], ...]
    free: tuple[Text, ...]  # 'free U15-U40 (26U)' on each run of empty units
    load: tuple[Text, ...]
    bar: Bar | None  # None for a rack without PDUs
    legend: tuple[tuple[Box, Text], ...]


# What stands in for the i-th name in a Shape: NUL, never printed (YAML refuses it raw,
# and a rack whose names hold one anyway is rendered without the shape memo).
PLACEHOLDER = "\x00"
PLACEHOLDERS = re.compile(f"{PLACEHOLDER}([0-9]+){PLACEHOLDER}")


def placeholder(index: int) -> str:
    return f"{PLACEHOLDER}{index}{PLACEHOLDER}"


@dataclass(frozen=True)
class Shape:
    """A rack's elevation with every name in it (the rack's, its PDUs', its devices'
    labels) written as placeholder(i), and the names, i-th for placeholder(i).

    Racks built alike (thousands at scale) have equal shapes, so their SVG is rendered
    once and each rack's names are put in after (outputs/facility/__init__.py). The
    shape is made by the code that makes the elevation, so whatever the picture shows
    other than a name is in it, and racks that differ in anything else differ here too.
    Where a name's length matters (a label cut to fit, the room left beside it), the
    elevation measures the real name, so the shape carries that too.
    """

    rack: str
    elevation: Elevation
    names: tuple[str, ...]

    def named(self) -> Elevation:
        """The rack's own elevation: the shape with its names in every text."""
        named = _named(self.elevation, self)
        assert isinstance(named, Elevation)
        return named

    def fill(self, text: str) -> str:
        """The text with the name for each placeholder in it."""
        return PLACEHOLDERS.sub(lambda found: self.names[int(found[1])], text)


def _named(value: object, shape: Shape) -> object:
    """value with the shape's names in every string anywhere in it."""
    if isinstance(value, str):
        return shape.fill(value)
    if isinstance(value, tuple):
        return tuple(_named(item, shape) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        named = {f.name: _named(getattr(value, f.name), shape) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **named)
    return value


@dataclass(frozen=True)
class FeedRow:
    rack: str
    pdu: str
    feed: str
    circuit: str  # '415 V 3-phase 40 A'
    capacity: str
    limit: str
    typical: str
    normal: str
    failover: str  # '' on a rack with one feed
    headroom: str
    phase_headroom: str  # the least of its phases'; '' on a single-phase PDU
    normal_bar: Bar
    failover_bar: Bar | None
    over: bool  # the feed or one of its phases is over its limit
    worst_share: float  # the worst load (failover on two feeds) over the 80% limit, of the
    # feed or of its fullest phase, whichever is larger

    @property
    def cells(self) -> tuple[str, ...]:
        """The row of pdu-feeds.csv, in FEED_HEADER's order."""
        return (
            self.rack,
            self.pdu,
            self.feed,
            self.circuit,
            self.capacity,
            self.limit,
            self.typical,
            self.normal,
            self.failover,
            self.headroom,
            self.phase_headroom,
        )


@dataclass(frozen=True, order=True)
class SpecWarning:
    path: str
    message: str
    code: str


@dataclass(frozen=True)
class Facility:
    cluster: str
    shapes: tuple[Shape, ...]  # each rack's elevation, as a Shape; spec order
    rack_rows: tuple[tuple[str, ...], ...]
    rack_totals: tuple[tuple[str, ...], ...]  # rack, units, used, free, typical W, max W
    feed_rows: tuple[FeedRow, ...]
    device_rows: tuple[tuple[str, ...], ...]
    phase_rows: tuple[tuple[str, ...], ...]
    bank_rows: tuple[tuple[str, ...], ...]
    outlet_rows: tuple[tuple[str, ...], ...]
    cable_rows: tuple[tuple[str, ...], ...]
    site: tuple[str, ...]  # summary lines
    warnings: tuple[SpecWarning, ...]

    @functools.cached_property
    def elevations(self) -> tuple[Elevation, ...]:
        """Each rack's elevation, names and all; the SVGs are rendered from the shapes."""
        return tuple(shape.named() for shape in self.shapes)


RACK_HEADER = ("rack", "unit", "top", "device", "role", "hardware", "height_u")
RACK_HEADER_W = ("typical_watts", "max_watts")
FEED_HEADER = (
    "rack",
    "pdu",
    "feed",
    "circuit",
    "capacity_va",
    "limit_va",
    "typical_va",
    "normal_va",
    "failover_va",
    "headroom_va",
    "phase_headroom_va",
)
DEVICE_HEADER = (
    "rack",
    "device",
    "max_watts",
    "power_factor",
    "psus_a",
    "psus_b",
    "normal_watts_a",
    "normal_watts_b",
    "failover_watts_a",
    "failover_watts_b",
)
PHASE_HEADER = (
    "rack",
    "pdu",
    "phase",
    "capacity_va",
    "limit_va",
    "normal_va",
    "failover_va",
    "headroom_va",
)
BANK_HEADER = (
    "rack",
    "pdu",
    "bank",
    "phase",
    "breaker_amps",
    "capacity_va",
    "limit_va",
    "normal_va",
    "failover_va",
)
OUTLET_HEADER = ("rack", "pdu", "device", "psu", "bank", "phase", "normal_va", "failover_va")
CABLE_HEADER = ("switch", "port", "kind", "peer", "peer_port", "note")


@functools.lru_cache(maxsize=4096)
def number(value: float) -> str:
    """A whole number of W or VA: 10200.4 -> '10200'. Racks built alike repeat the same
    few loads hundreds of thousands of times, so the strings are kept."""
    return f"{value:.0f}"


def percent(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def csv_text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The CSV file of a table, as csv.writer writes it (minimal quoting, "\\n" lines).

    Sheet cells are names and numbers, which need no quoting, so the rows are joined as
    they stand (a 16k-node site's cable and outlet sheets hold a quarter million rows,
    and csv.writer takes four times as long); csv.writer writes the table instead when
    any cell would need quoting: one holding a comma, a quote or a line break (the
    commas and line breaks are counted, so one inside a cell shows), and for a row of
    fewer than two cells (one empty cell is written "").
    """
    lines = [",".join(header), *map(",".join, rows), ""]
    text = "\n".join(lines)
    commas = len(header) - 1 + sum(map(len, rows)) - len(rows)
    if (
        len(header) > 1
        and min(map(len, rows), default=2) > 1
        and '"' not in text
        and "\r" not in text
        and text.count(",") == commas
        and text.count("\n") == len(lines) - 1
    ):
        return text
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def role_and_hardware(device: Device, switch_models: dict[str, str | None]) -> tuple[str, str]:
    if device.node or device.name not in switch_models:
        return device.role, device.hardware
    return "switch", switch_models[device.name] or ""


@functools.lru_cache(maxsize=4096)
def bar(x: int, y: int, width: int, height: int, load: float, limit: float) -> Bar:
    """A Bar; kept, as racks built alike draw the same few loads thousands of times."""
    capacity = limit / CONTINUOUS_LOAD_LIMIT
    fraction = min(load / capacity, 1.0) if capacity else 0.0
    return Bar(
        x=x,
        y=y,
        width=width,
        height=height,
        fill_width=round(width * fraction),
        fill=OVER_FILL if load > limit else NEAR_FILL if load > NEAR_LIMIT * limit else OK_FILL,
        limit_x=x + round(width * CONTINUOUS_LOAD_LIMIT),
        tick_top=y - 3,
        tick_bottom=y + height + 3,
        percent_of_limit=percent(load, limit),
    )


def circuit(load: FeedLoad) -> str:
    pdu = load.pdu
    return f"{pdu.volts} V {pdu.phases}-phase {pdu.amps} A"


def fit(text: str, width: float, char_px: float) -> str:
    """The text, cut with an ellipsis where it would run past `width` px."""
    most = int(width // char_px)
    return text if len(text) <= most else text[: max(most - 1, 0)] + "\u2026"


def power_given(device: Device) -> bool:
    """False for a node whose profile has no 'power' (the plan counts it as 0 W; a rack
    with PDUs refuses it, a rack without may hold it)."""
    return not device.node or device.max_watts > 0


def detail(hardware: str, role: str, watts: str, width: float) -> str:
    """'hgx-h100 · compute, 10200 W max'; the role goes first, then the hardware is cut,
    when the label would run out of its box (the fill still says the role)."""
    for parts in ((hardware, role), (hardware,)):
        what = " \u00b7 ".join(part for part in parts if part)
        text = f"{what}, {watts}" if what else watts
        if len(text) * CHAR_PX <= width:
            return text
    return fit(hardware, width - (len(watts) + 2) * CHAR_PX, CHAR_PX) + ", " + watts


def top_of_unit(height_u: int, unit: int) -> int:
    """Top edge of a unit in the picture; U1 is at the bottom."""
    return TITLE_H + (height_u - unit) * UNIT_PX


@functools.cache
def unit_grid(height_u: int) -> str:
    """The SVG of a rack's units and their numbers in both margins: the same for every rack
    of one height, so it is made once per height (thousands of racks share it). The lines
    between units are one path and the numbers share their anchor, which keeps an
    elevation small (a 16k-node site has thousands)."""

    def unit_y(unit: int) -> int:
        return top_of_unit(height_u, unit)

    units = range(height_u, 0, -1)
    lines = "".join(f"M{RACK_X} {unit_y(u)}h{RACK_W}" for u in units[1:])
    numbers = "".join(
        f'<g text-anchor="{anchor}">\n'
        + "".join(f'<text x="{x}" y="{unit_y(u) + UNIT_PX // 2 + 4}">{u}</text>\n' for u in units)
        + "</g>\n"
        for x, anchor in ((RACK_X - 6, "end"), (RACK_X + RACK_W + 6, "start"))
    )
    return (
        f'<rect x="{RACK_X}" y="{unit_y(height_u)}" width="{RACK_W}" '
        f'height="{height_u * UNIT_PX}" fill="#ffffff"/>\n'
        f'<path d="{lines}" stroke="#c8c8c8" stroke-width="1"/>\n'
        f'<g font-size="9" fill="#555555">\n{numbers}</g>'
    )


def verbatim(name: str) -> str:
    return name


def elevation(
    rack: RackPlan,
    switch_models: dict[str, str | None],
    name: Callable[[str], str] = verbatim,
) -> Elevation:
    """The rack's elevation; every name in it (the rack's, a PDU's, a device's label as
    cut to fit) is written as name(it), which for a Shape is a placeholder."""
    height_u = rack.rack.height_u
    frame_h = height_u * UNIT_PX
    spans = []
    devices = []
    roles: list[str] = []
    for device in sorted(rack.devices, key=lambda d: (-d.u, d.index)):
        role, hardware = role_and_hardware(device, switch_models)
        roles.append(role)
        top = min(device.top, height_u)
        if device.u > height_u:
            continue  # outside the rack: the placement check reports it
        spans.append((device.u, top))
        label_name = fit(device.name, LABEL_W, BOLD_CHAR_PX)
        watts = f"{device.max_watts} W max" if power_given(device) else "power not given"
        devices.append(
            _device(
                height_u, device.u, top, role, hardware, watts, len(label_name), name(label_name)
            )
        )
    below = TITLE_H + frame_h
    if rack.loads:
        drawn = sum(load.normal_va for load in rack.loads)
        load_texts, rack_bar = _load_lines(below, drawn, rack.limit_va)
    else:
        load_texts, rack_bar = (Text(RACK_X, below + 20, "No PDUs: power not planned"),), None
    legend_y = below + 72
    shown = tuple(role for role in ROLE_FILLS if role in roles)
    pdus = ", ".join(f"{name(load.pdu.name)} ({load.pdu.feed})" for load in rack.loads)
    return Elevation(
        rack=name(rack.rack.name),
        width=2 * RACK_X + RACK_W,
        height=legend_y + ((len(shown) + 1) // 2) * LEGEND_ROW_PX + 8,
        title=Text(RACK_X, 22, f"Rack {name(rack.rack.name)}", "bold"),
        subtitle=Text(
            RACK_X,
            40,
            f"{height_u}U, front view; " + (f"PDUs {pdus}" if pdus else "no PDUs"),
        ),
        frame=Box(RACK_X, TITLE_H, RACK_W, frame_h, "none"),
        grid=unit_grid(height_u),
        devices=tuple(devices),
        free=_free_runs(height_u, tuple(spans)),
        load=load_texts,
        bar=rack_bar,
        legend=_legend(legend_y, shown),
    )


@functools.lru_cache(maxsize=4096)
def _device(
    height_u: int,
    u: int,
    top: int,
    role: str,
    hardware: str,
    watts: str,
    name_length: int,
    name: str,
) -> tuple[Box, Label]:
    """A device's box from unit u to top, and its label: `name` in bold (the label's
    room beside it on one line is what name_length characters leave), then the role,
    hardware and `watts`. Kept: in a shape the name is a placeholder, so racks built
    alike draw the same ones."""
    y = top_of_unit(height_u, top) + 1
    h = (top - u + 1) * UNIT_PX - 2
    box = Box(RACK_X + 2, y, RACK_W - 4, h, ROLE_FILLS[role])
    middle = y + h // 2
    one_line = h < 2 * UNIT_PX - 2
    room = LABEL_W - (name_length + 2) * BOLD_CHAR_PX if one_line else LABEL_W
    label = Label(
        x=RACK_X + 8,
        name_y=middle + 4 if one_line else middle - 2,
        name=name,
        detail_y=middle + 4 if one_line else middle + 12,
        detail=detail(hardware, role, watts, room),
    )
    return box, label


@functools.lru_cache(maxsize=1024)
def _free_runs(height_u: int, spans: tuple[tuple[int, int], ...]) -> tuple[Text, ...]:
    """'free U15-U40 (26U)' on each run of units no span (lowest, highest unit) holds."""
    held = {u for low, high in spans for u in range(low, high + 1)}
    free = []
    run: list[int] = []
    for u in [*range(height_u, 0, -1), 0]:
        if u and u not in held:
            run.append(u)
            continue
        if run:
            low, high = run[-1], run[0]
            span = f"U{low}" if low == high else f"U{low}-U{high}"
            # Inside the middle unit, clear of the lines between units.
            middle = top_of_unit(height_u, run[len(run) // 2]) + UNIT_PX // 2
            text = f"free {span} ({len(run)}U)"
            free.append(Text(RACK_X + RACK_W // 2, middle + 4, text, anchor="middle"))
            run = []
    return tuple(free)


@functools.lru_cache(maxsize=1024)
def _load_lines(below: int, drawn: float, limit_va: float) -> tuple[tuple[Text, ...], Bar]:
    """The load of a rack with PDUs, drawing `drawn` VA at max against its `limit_va`,
    under its frame, and its bar."""
    texts = (
        Text(RACK_X, below + 20, f"Load at max draw {kilo(drawn, 'VA')}"),
        Text(
            RACK_X,
            below + 34,
            f"80% limit {kilo(limit_va, 'VA')} "
            f"(of {kilo(limit_va / CONTINUOUS_LOAD_LIMIT, 'VA')}): "
            f"{percent(drawn, limit_va)} used",
        ),
    )
    return texts, bar(RACK_X, below + 42, BAR_W, 14, drawn, limit_va)


@functools.lru_cache(maxsize=1024)
def _legend(legend_y: int, shown: tuple[str, ...]) -> tuple[tuple[Box, Text], ...]:
    """A swatch and the name of each role shown, two to a row."""
    return tuple(
        (
            Box(
                RACK_X + (i % 2) * (RACK_W // 2),
                legend_y + (i // 2) * LEGEND_ROW_PX,
                12,
                12,
                ROLE_FILLS[role],
            ),
            Text(
                RACK_X + (i % 2) * (RACK_W // 2) + 18,
                legend_y + (i // 2) * LEGEND_ROW_PX + 10,
                role,
            ),
        )
        for i, role in enumerate(shown)
    )


class _Placeholders:
    """A `name` for elevation(): each name it is given becomes placeholder(i), in turn."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, name: str) -> str:
        self.names.append(name)
        return placeholder(len(self.names) - 1)


def shape(rack: RackPlan, switch_models: dict[str, str | None]) -> Shape:
    placeholders = _Placeholders()
    drawn = elevation(rack, switch_models, placeholders)
    return Shape(rack.rack.name, drawn, tuple(placeholders.names))


def feed_row(rack: RackPlan, load: FeedLoad) -> FeedRow:
    phase_headroom = load.phase_headroom_va
    return FeedRow(
        rack=rack.rack.name,
        pdu=load.pdu.name,
        feed=load.pdu.feed,
        circuit=circuit(load),
        capacity=number(load.capacity_va),
        limit=number(load.limit_va),
        typical=number(load.typical_va),
        normal=number(load.normal_va),
        failover="" if load.failover_va is None else number(load.failover_va),
        headroom=number(load.headroom_va),
        phase_headroom="" if phase_headroom is None else number(phase_headroom),
        normal_bar=bar(0, 0, 200, 12, load.normal_va, load.limit_va),
        failover_bar=(
            None
            if load.failover_va is None
            else bar(0, 0, 200, 12, load.failover_va, load.limit_va)
        ),
        over=load.headroom_va < 0 or (phase_headroom is not None and phase_headroom < 0),
        worst_share=max(
            (
                worst / limit
                for worst, limit in (
                    (load.worst_va, load.limit_va),
                    *((load.phase_worst_va(p), p.limit_va) for p in load.phases),
                )
                if limit
            ),
            default=0.0,
        ),
    )


def device_sheet(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """The rows of pdu-devices.csv: each device of a rack with PDUs, from the bottom up.

    A device's cells but its name follow from its PSUs, power factor and max_watts and
    its rack's feeds; the plan makes the PSUs once per kind of device (facility._psus),
    so the cells are made once per kind and feeds, not for each of 16k nodes."""
    cells: dict[tuple[int, float, int, tuple[str, ...]], tuple[str, ...]] = {}
    rows = []
    for rack in plans:
        if not rack.loads:
            continue
        for device in sorted(rack.devices, key=lambda d: (d.u, d.index)):
            # By identity: every PSU tuple is alive in the plan while this runs.
            kind = (id(device.psus), device.power_factor, device.max_watts, rack.feeds)
            own = cells.get(kind)
            if own is None:
                own = cells[kind] = device_cells(rack, device)
            rows.append((rack.rack.name, device.name, *own))
    return tuple(rows)


def device_cells(rack: RackPlan, device: Device) -> tuple[str, ...]:
    """Watts a device draws from each feed at max_watts: every feed up, and alone."""
    two_feeds = len(rack.feeds) > 1
    normal = {feed: 0.0 for feed in FEEDS}
    failover = {feed: 0.0 for feed in FEEDS}
    for psu in device.psus:
        normal[psu.feed] += psu.normal_va * device.power_factor
        failover[psu.feed] += psu.failover_va * device.power_factor

    def on(feed: str, watts: dict[str, float]) -> str:
        return number(watts[feed]) if feed in rack.feeds else ""

    return (
        str(device.max_watts),
        f"{device.power_factor:.2f}",
        str(device.psus_on("A")),
        str(device.psus_on("B")),
        on("A", normal),
        on("B", normal),
        on("A", failover) if two_feeds else "",
        on("B", failover) if two_feeds else "",
    )


def outlet_sheet(plans: Sequence[RackPlan]) -> tuple[tuple[str, ...], ...]:
    """The rows of pdu-outlets.csv: rack, PDU, device, then the outlet's own cells.

    A 16k-node site has a hundred thousand outlets on a few kinds of circuit: the plan
    gives racks built alike one _Circuit (facility._loads), with the same PSUs plugged
    in the same order, so an outlet's own cells are made from the first PDU on each
    circuit (and feed count) and only the names come from each PDU's own."""
    cells: dict[tuple[int, bool], list[tuple[str, ...]]] = {}
    rows: list[tuple[str, ...]] = []
    for rack in plans:
        for load in rack.loads:
            two_feeds = load.failover_va is not None
            # By identity: every circuit is alive in the plan while this runs.
            own = cells.get((id(load.circuit), two_feeds))
            if own is None:
                own = cells[(id(load.circuit), two_feeds)] = [
                    (
                        str(outlet.psu),
                        str(outlet.bank),
                        outlet.phase,
                        number(outlet.normal_va),
                        number(outlet.failover_va) if two_feeds else "",
                    )
                    for outlet in load.outlets
                ]
            rows.extend(
                (rack.rack.name, load.pdu.name, device, *outlet)
                for (device, _), outlet in zip(load.plugged, own, strict=True)
            )
    return tuple(rows)


def derive_facility(cluster: Cluster) -> Facility | None:
    """None for a spec without racks: there is nothing for the facility team."""
    spec = cluster.spec
    if not spec.racks:
        return None
    plans = cluster.rack_plans
    fabric = spec.network.fabric
    switch_models = {s.name: s.model for s in fabric.switches} if fabric else {}
    rack_rows = tuple(
        (
            rack.rack.name,
            str(device.u),
            str(device.top),
            device.name,
            *role_and_hardware(device, switch_models),
            str(device.height),
            str(device.typical_watts) if power_given(device) else "",
            str(device.max_watts) if power_given(device) else "",
        )
        for rack in plans
        for device in sorted(rack.devices, key=lambda d: (d.u, d.index))
    )
    rack_totals = tuple(
        (
            rack.rack.name,
            str(rack.rack.height_u),
            str(used := sum(d.height for d in rack.devices)),
            str(rack.rack.height_u - used),
            str(rack.typical_watts),
            str(rack.max_watts),
        )
        for rack in plans
    )
    feed_rows = tuple(feed_row(rack, load) for rack in plans for load in rack.loads)
    device_rows = device_sheet(plans)
    phase_rows = tuple(
        (
            rack.rack.name,
            load.pdu.name,
            phase.name,
            number(phase.capacity_va),
            number(phase.limit_va),
            number(phase.normal_va),
            "" if load.failover_va is None else number(phase.failover_va),
            number(phase.limit_va - load.phase_worst_va(phase)),
        )
        for rack in plans
        for load in rack.loads
        for phase in load.phases
    )
    bank_rows = tuple(
        (
            rack.rack.name,
            load.pdu.name,
            str(bank.number),
            bank.phase,
            str(load.pdu.bank_amps or load.pdu.amps),
            number(bank.capacity_va),
            number(bank.limit_va),
            number(bank.normal_va),
            "" if load.failover_va is None else number(bank.failover_va),
        )
        for rack in plans
        for load in rack.loads
        for bank in load.banks
    )
    outlet_rows = outlet_sheet(plans)
    cable_rows = tuple(
        (
            cable.switch,
            str(cable.port),
            cable.kind,
            cable.peer,
            cable.peer_port,
            "beyond the switch's ports" if cable.beyond else "",
        )
        for cable in cables(spec, cluster.by_name, cluster.switch_ports)
    )
    total = sum(rack.max_watts for rack in plans)
    racks = f"{len(plans)} rack{'s' if len(plans) != 1 else ''}"
    site = [f"{racks}, {kilo(total, 'W')} at max draw"]
    if spec.facility is not None and spec.facility.power_budget_kw is not None:
        budget = spec.facility.power_budget_kw * 1000
        site.append(f"site power budget {kilo(budget, 'W')}: {percent(total, budget)} used")
    if spec.facility is not None and spec.facility.cooling_kw is not None:
        cooling = spec.facility.cooling_kw * 1000
        site.append(f"site cooling {kilo(cooling, 'W')}: {percent(total, cooling)} used")
    ignored = set(spec.ignore)
    # The dated warnings (end of support) are left out: the render depends on the spec and
    # clustergen alone, not on the day it is made.
    kept = [
        p
        for p in cluster.warnings
        if p.severity == "warning" and p.code.name not in ignored and not p.code.dated
    ]
    # Alike warnings once, as validate prints them: the first in the spec's order stands
    # for the others (racks[5] before racks[10]).
    kept.sort(
        key=lambda p: (
            tuple((0, part, "") if isinstance(part, int) else (1, 0, part) for part in p.path),
            p.message,
        )
    )
    names = functools.cache(lambda: element_names(spec.model_dump(exclude_none=True)))
    warnings = tuple(
        sorted(
            SpecWarning(format_path(p.path), p.message, str(p.code))
            for p in collapse_alike(kept, names)
        )
    )
    return Facility(
        cluster=spec.cluster.name,
        shapes=tuple(shape(rack, switch_models) for rack in plans),
        rack_rows=rack_rows,
        rack_totals=rack_totals,
        feed_rows=feed_rows,
        device_rows=device_rows,
        phase_rows=phase_rows,
        bank_rows=bank_rows,
        outlet_rows=outlet_rows,
        cable_rows=cable_rows,
        site=tuple(site),
        warnings=warnings,
    )
