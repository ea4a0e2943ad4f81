"""The rack elevations' geometry: where each unit, device box, label, load bar and legend
sits in a rack's picture, in SVG user units, from the rack's plan (ResolvedCluster.rack_plans).

The template (templates/facility/rack.svg.j2) only prints these coordinates; the sheets
(sheets.py) and this module share nothing but a load bar's drawing and what a device is
called. A rack's elevation is also made as a Shape, its names left as placeholders, so
that racks built alike are rendered once (outputs/facility/__init__.py).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from clustergen.spec.physical_plan import CONTINUOUS_LOAD_LIMIT, Device, RackPlan, kilo

# Fills by role: light enough for black text and for printing, distinct in colour, and
# the role is written in every label too, for a grey-scale print.
ROLE_FILLS = {
    "compute": "#a6c8ec",
    "controller": "#f9c38a",
    "storage": "#a8d5a0",
    "login": "#d4b5d0",
    "service": "#e6d3b3",
    "switch": "#9fd8d3",
    "nvlink-switch": "#c9e29b",
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


def percent(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "-"


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
    elif rack.shelf_capacity_w is not None:
        load_texts, rack_bar = _shelf_lines(below, rack.max_watts, rack.shelf_capacity_w)
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
            f"{height_u}U, front view; " + _feeding(rack, pdus),
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


def _feeding(rack: RackPlan, pdus: str) -> str:
    """What feeds the rack, for its subtitle: its PDUs, or its power shelves."""
    shelves = rack.rack.power_shelves
    if shelves is not None:
        return f"power shelves {shelves.count} x {shelves.shelf_kw:g} kW ({shelves.redundancy})"
    return f"PDUs {pdus}" if pdus else "no PDUs"


@functools.lru_cache(maxsize=1024)
def _shelf_lines(below: int, max_watts: int, capacity_w: float) -> tuple[tuple[Text, ...], Bar]:
    """The load of a rack on power shelves against what the shelves left when the
    redundancy is spent carry (checks.rack_scale.shelves), and its bar."""
    texts = (
        Text(RACK_X, below + 20, f"Load at max draw {kilo(max_watts, 'W')}"),
        Text(
            RACK_X,
            below + 34,
            f"Shelves with the redundancy spent {kilo(capacity_w, 'W')}: "
            f"{percent(max_watts, capacity_w)} used",
        ),
    )
    return texts, bar(RACK_X, below + 42, BAR_W, 14, max_watts, capacity_w)


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
