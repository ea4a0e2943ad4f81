"""Facility: rack elevations (SVG), an overview page (HTML), and the rack, PDU and cable
sheets (CSV and Markdown) under facility/, for the team that racks, powers and cables the
cluster. Nothing here is installed on nodes. A spec without racks renders none of it.
"""

from __future__ import annotations

import jinja2

from clustergen.artifacts import Artifact
from clustergen.outputs.facility.derive import (
    BANK_HEADER,
    CABLE_HEADER,
    DEVICE_HEADER,
    FEED_HEADER,
    OUTLET_HEADER,
    PHASE_HEADER,
    RACK_HEADER,
    RACK_HEADER_W,
    Facility,
    csv_text,
    derive_facility,
)
from clustergen.render import render_template
from clustergen.resolve import Cluster

# Beyond this many racks the overview stays a page a person reads: it lists each rack's
# load with a link to its elevation (every elevation is in racks/), and the most loaded
# feeds (every feed is in pdu-feeds.csv and pdus.md); pdus.md keeps its feeds and leaves
# the per-device, phase, bank and outlet tables to their CSVs.
WHOLE_RACKS = 48
SHOWN_FEEDS = 48


def render(cluster: Cluster, env: jinja2.Environment) -> list[Artifact]:
    facility = derive_facility(cluster)
    if facility is None:
        return []
    svgs = [
        render_template(env, "facility/rack.svg.j2", cluster, rack=rack)
        for rack in facility.elevations
    ]
    artifacts = [
        Artifact(f"facility/racks/{rack.rack}.svg", svg)
        for rack, svg in zip(facility.elevations, svgs, strict=True)
    ]
    sheets = {
        "racks.csv": csv_text(RACK_HEADER + RACK_HEADER_W, facility.rack_rows),
        "pdu-feeds.csv": csv_text(FEED_HEADER, [row.cells for row in facility.feed_rows]),
        "pdu-devices.csv": csv_text(DEVICE_HEADER, facility.device_rows),
        "pdu-phases.csv": csv_text(PHASE_HEADER, facility.phase_rows),
        "pdu-banks.csv": csv_text(BANK_HEADER, facility.bank_rows),
        "pdu-outlets.csv": csv_text(OUTLET_HEADER, facility.outlet_rows),
        "cables.csv": csv_text(CABLE_HEADER, facility.cable_rows),
    }
    artifacts += [Artifact(f"facility/{name}", text) for name, text in sheets.items()]
    # The page carries each elevation inline, so it is one file with nothing to fetch.
    pages = {
        "overview.html": _overview(facility, svgs),
        "racks.md": {},
        "pdus.md": _pdu_sheet(facility),
    }
    for name, values in pages.items():
        text = render_template(env, f"facility/{name}.j2", cluster, facility=facility, **values)
        artifacts.append(Artifact(f"facility/{name}", text))
    return artifacts


def _pdu_sheet(facility: Facility) -> dict[str, object]:
    """Past WHOLE_RACKS racks the page keeps every feed and leaves the tables of every
    device, phase, bank and outlet to their CSVs (at 4,096 racks they were 8 MB of
    Markdown, which no review tool shows)."""
    if len(facility.elevations) <= WHOLE_RACKS:
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
    return {"detail_omitted": {"racks": len(facility.elevations), "rows": rows}}


def _overview(facility: Facility, svgs: list[str]) -> dict[str, object]:
    if len(facility.elevations) <= WHOLE_RACKS:
        return {"svgs": svgs, "feeds": facility.feed_rows, "summary": None}
    feeds = sorted(facility.feed_rows, key=lambda row: (-row.worst_share, row.rack, row.pdu))
    return {
        "svgs": [],
        "feeds": feeds[:SHOWN_FEEDS],
        "summary": {"racks": len(facility.elevations), "feeds": len(facility.feed_rows)},
    }
