"""Facility: rack elevations (SVG), an overview page (HTML), and the rack, PDU and cable
sheets (CSV and Markdown) under facility/, for the team that racks, powers and cables the
cluster. Nothing here is installed on nodes. A spec without racks renders none of it.
"""

from __future__ import annotations

import collections
import re

import jinja2

from clustergen.base.artifacts import Artifact
from clustergen.outputs.facility.derive import FacilitySheets, derive_facility
from clustergen.outputs.facility.elevation import PLACEHOLDER, PLACEHOLDERS, Elevation, Shape
from clustergen.outputs.facility.fabric_drawing import fabric_drawing
from clustergen.outputs.facility.failures import failure_report, failure_rows
from clustergen.outputs.facility.ports import (
    PortMap,
    locations,
    port_map,
    port_pages,
)
from clustergen.outputs.facility.sheets import (
    BANK_HEADER,
    CABLE_HEADER,
    CDU_HEADER,
    DEVICE_HEADER,
    FEED_HEADER,
    HEAT_HEADER,
    OUTLET_HEADER,
    PHASE_HEADER,
    RACK_HEADER,
    RACK_HEADER_W,
    SHELF_HEADER,
    CsvSheet,
    cable_sheet,
    csv_text,
)
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.fabric import tiers
from clustergen.templating import render_template

# Stays in the output tree: none of its files goes onto a node.
INSTALLED = False

# Beyond this many racks the overview stays a page a person reads: it lists each rack's
# load with a link to its elevation (every elevation is in racks/), and the most loaded
# feeds (every feed is in pdu-feeds.csv and pdus.md); pdus.md keeps its feeds and leaves
# the per-device, phase, bank and outlet tables to their CSVs.
WHOLE_RACKS = 48
SHOWN_FEEDS = 48


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    facility = derive_facility(cluster)
    if facility is None:
        return []
    svgs = rack_svgs(facility, cluster, env)
    artifacts = [
        Artifact(f"facility/racks/{shape.rack}.svg", svg)
        for shape, svg in zip(facility.shapes, svgs, strict=True)
    ]
    sheets = {
        "racks.csv": csv_text(RACK_HEADER + RACK_HEADER_W, facility.rack_rows),
        "pdu-feeds.csv": csv_text(FEED_HEADER, [row.cells for row in facility.feed_rows]),
        "pdu-devices.csv": csv_text(DEVICE_HEADER, facility.device_rows),
        "pdu-phases.csv": csv_text(PHASE_HEADER, facility.phase_rows),
        "pdu-banks.csv": csv_text(BANK_HEADER, facility.bank_rows),
        "pdu-outlets.csv": csv_text(OUTLET_HEADER, facility.outlet_rows),
    }
    tier = tiers(cluster)  # once: the port map, the failures and the drawing read it
    # The cables are read once, into cables.csv and the port map as each is made: at 65,536
    # nodes on a rail fabric they are 1.6 million rows, which are never all kept.
    cables_csv = CsvSheet(CABLE_HEADER)
    cable_rows = cables_csv.passing(cable_sheet(cluster))
    ports = port_map(cluster, cable_rows, tier)
    collections.deque(cable_rows, maxlen=0)  # any the port map had no use for
    sheets["cables.csv"] = cables_csv.text()
    for name, header, rows in (
        ("power-shelves.csv", SHELF_HEADER, facility.shelf_rows),
        ("cooling.csv", HEAT_HEADER, facility.heat_rows),
        ("cdus.csv", CDU_HEADER, facility.cdu_rows),
    ):
        if rows:  # only where the spec uses them: a spec without renders as before
            sheets[name] = csv_text(header, rows)
    ports_page = None
    if ports.count:
        sheets["ports.csv"] = ports.text
        ports_page = _ports_page(cluster, ports)
    del ports  # its text is in the sheets, and what the page prints in the page
    artifacts += [Artifact(f"facility/{name}", text) for name, text in sheets.items()]
    drawing = fabric_drawing(cluster, tier)
    if drawing is not None:
        text = render_template(env, "facility/fabric.svg.j2", cluster, drawing=drawing)
        artifacts.append(Artifact("facility/fabric.svg", text))
    # The page carries each elevation inline, so it is one file with nothing to fetch.
    pages: dict[str, dict[str, object]] = {
        "overview.html": _overview(facility, svgs),
        "racks.md": {},
        "pdus.md": _pdu_sheet(facility),
        "failure-domains.md": {"failure_rows": failure_rows(failure_report(cluster, tier))},
    }
    if ports_page is not None:
        pages["ports.md"] = {"ports_page": ports_page}
    for name, values in pages.items():
        text = render_template(env, f"facility/{name}.j2", cluster, facility=facility, **values)
        artifacts.append(Artifact(f"facility/{name}", text))
    return artifacts


RACK_SVG = "facility/rack.svg.j2"
# What markupsafe.escape (the template's `| e`) changes, and PLACEHOLDER: a rack whose
# names hold any of them is not filled in from its shape's SVG.
_NOT_PLAIN = re.compile(f"[&<>\"'{PLACEHOLDER}]")
_UNSEEN: list[str] = []  # a shape not rendered yet, told apart by identity


def rack_svgs(
    facility: FacilitySheets, cluster: ResolvedCluster, env: jinja2.Environment
) -> list[str]:
    """Each rack's elevation in SVG, the template rendered once per distinct shape.

    At 16k nodes the elevations were nearly half the facility's time, most of it rendering
    thousands of racks that differ only in names. A shape's SVG is split at its
    placeholders, and each rack's names are put in their places: the text rendering
    the rack makes, as the template only prints a name, escaped or not, which is the
    same for a name with nothing to escape. A rack whose names hold something to escape
    or a PLACEHOLDER is rendered whole, and so is every rack of a shape whose first
    rack does not come out as rendered whole.
    """
    split: dict[Elevation, list[str] | None] = {}
    svgs = []
    for shape in facility.shapes:
        # One look-up a rack: hashing a shape walks all of it.
        parts = split.get(shape.elevation, _UNSEEN)
        if parts is _UNSEEN:
            parts = split[shape.elevation] = _split(env, cluster, shape)
        if parts is not None and _plain(shape.names):
            svgs.append(_filled(parts, shape.names))
        else:
            svgs.append(render_template(env, RACK_SVG, cluster, rack=shape.named()))
    return svgs


def _split(env: jinja2.Environment, cluster: ResolvedCluster, shape: Shape) -> list[str] | None:
    """The shape's SVG split at its placeholders (text, index, text, ... text), or None
    when it is not to be trusted: the cluster's name holds a PLACEHOLDER, or the shape
    filled in with this rack's names is not this rack's SVG."""
    if PLACEHOLDER in cluster.spec.cluster.name or not _plain(shape.names):
        return None
    parts = PLACEHOLDERS.split(render_template(env, RACK_SVG, cluster, rack=shape.elevation))
    whole = render_template(env, RACK_SVG, cluster, rack=shape.named())
    return parts if _filled(parts, shape.names) == whole else None


def _plain(names: tuple[str, ...]) -> bool:
    return _NOT_PLAIN.search("".join(names)) is None


def _filled(parts: list[str], names: tuple[str, ...]) -> str:
    filled = parts.copy()
    filled[1::2] = [names[int(index)] for index in parts[1::2]]
    return "".join(filled)


def _pdu_sheet(facility: FacilitySheets) -> dict[str, object]:
    """Past WHOLE_RACKS racks the page keeps every feed and leaves the tables of every
    device, phase, bank and outlet to their CSVs (at 4,096 racks they were 8 MB of
    Markdown, which no review tool shows)."""
    if len(facility.shapes) <= WHOLE_RACKS:
        return {"detail_omitted": None}
    rows = sum(
        len(table)
        for table in (
            facility.device_rows,
            facility.phase_rows,
            facility.bank_rows,
            facility.outlet_rows,
        )
    )
    return {"detail_omitted": {"racks": len(facility.shapes), "rows": rows}}


def _overview(facility: FacilitySheets, svgs: list[str]) -> dict[str, object]:
    if len(facility.shapes) <= WHOLE_RACKS:
        return {"svgs": svgs, "racks": [], "feeds": facility.feed_rows, "summary": None}
    feeds = sorted(facility.feed_rows, key=lambda row: (-row.worst_share, row.rack, row.pdu))
    # Each rack's name, load bar and first load line (its draw), without making every
    # rack's whole elevation.
    racks = [
        (shape.rack, shape.elevation.bar, shape.fill(shape.elevation.load[0].text))
        for shape in facility.shapes
    ]
    return {
        "svgs": [],
        "racks": racks,
        "feeds": feeds[:SHOWN_FEEDS],
        "summary": {"racks": len(facility.shapes), "feeds": len(facility.feed_rows)},
    }


def _ports_page(cluster: ResolvedCluster, ports: PortMap) -> dict[str, object]:
    fabric = cluster.spec.network.fabric
    assert fabric is not None
    planes, omitted = port_pages(ports, locations(cluster))
    return {
        "planes": planes,
        "omitted": omitted,
        "link_count": ports.links,
        "port_count": ports.count,
        "over": ports.over,
        "rate": fabric.rate.upper(),
        "classes": ", ".join(
            f"node-leaf across racks {name}" if tier == "across racks" else f"{tier} {name}"
            for tier, name in ports.classes
        ),
    }
