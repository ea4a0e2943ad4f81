"""The facility family: sheets from the one physical plan, rack elevations and the
overview page as XML and HTML, and as pictures drawn by a real browser."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clustergen.outputs.facility import WHOLE_RACKS
from clustergen.outputs.facility.derive import derive_facility
from clustergen.outputs.facility.elevation import CHAR_PX, ROLE_FILLS, UNIT_PX, detail
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.spec.physical_plan import CONTINUOUS_LOAD_LIMIT
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import EXAMPLES, RACK_SCALE_EXAMPLE, REFERENCE_SPECS
from support.png import decode

SVG = "{http://www.w3.org/2000/svg}"
# The overview is drawn at this size: wide enough for five racks side by side.
PAGE_SIZE = (2000, 1400)
RACKS_PER_SCREEN = 5  # elevations side by side in PAGE_SIZE; more wrap to rows below


def _cluster(path: Path) -> ResolvedCluster:
    cluster, problems = validate_cluster(load_spec(str(path)))
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def _facility_files(path: Path) -> dict[str, str]:
    return {
        name: artifact.text
        for name, artifact in render_all(_cluster(path)).items()
        if name.startswith("facility/")
    }


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_reference_specs_render_every_sheet(spec_path: Path) -> None:
    files = _facility_files(spec_path)
    cluster = _cluster(spec_path)
    sheets = {
        "facility/overview.html",
        "facility/racks.csv",
        "facility/racks.md",
        "facility/pdus.md",
        "facility/pdu-feeds.csv",
        "facility/pdu-devices.csv",
        "facility/pdu-phases.csv",
        "facility/pdu-banks.csv",
        "facility/pdu-outlets.csv",
        "facility/cables.csv",
        # the fabric's port map, failure domains and drawing (both specs have a fabric)
        "facility/ports.csv",
        "facility/ports.md",
        "facility/failure-domains.md",
        "facility/fabric.svg",
    }
    racks = {f"facility/racks/{rack.name}.svg" for rack in cluster.spec.racks}
    # the rack-scale sheets (power shelves, heat to liquid, CDUs), only where the spec
    # has what they show: the rack-scale example has all three, the others none
    if spec_path == RACK_SCALE_EXAMPLE:
        sheets |= {"facility/power-shelves.csv", "facility/cooling.csv", "facility/cdus.csv"}
    assert set(files) == sheets | racks
    assert all(
        artifact.install is None
        for artifact in render_all(cluster).values()
        if artifact.path.startswith("facility/")
    )


def test_spec_without_racks_renders_no_facility_files() -> None:
    cluster = _cluster(EXAMPLES / "edge-roce-2node.yaml")
    spec = cluster.spec.model_copy(update={"racks": []})
    bare = ResolvedCluster(spec, cluster.spec_name)
    assert derive_facility(bare) is None
    assert not [name for name in render_all(bare) if name.startswith("facility/")]


def test_render_reuses_the_plan_and_problems_validation_computed() -> None:
    cluster = _cluster(EXAMPLES / "ml-training-8node.yaml")
    kept = {part: cluster.__dict__.get(part) for part in ("rack_plans", "switch_ports", "warnings")}
    assert all(value is not None for value in kept.values()), kept
    derive_facility(cluster)
    assert all(cluster.__dict__[part] is value for part, value in kept.items())


def test_pdu_sheet_prints_the_plan_the_checks_judge() -> None:
    cluster = _cluster(EXAMPLES / "ml-training-8node.yaml")
    files = _facility_files(EXAMPLES / "ml-training-8node.yaml")
    feeds = _rows(files["facility/pdu-feeds.csv"])
    loads = [load for rack in cluster.rack_plans for load in rack.loads]
    assert [row["pdu"] for row in feeds] == [load.pdu.name for load in loads]
    r01a = feeds[0]
    # 415 V x 40 A x sqrt(3) = 28752 VA; 80% = 23002 VA; the rack is 2 x 10200 W + 1720 W,
    # half of it on each feed normally and all of it on one feed on failover.
    assert (r01a["capacity_va"], r01a["limit_va"]) == ("28752", "23002")
    assert (r01a["normal_va"], r01a["failover_va"], r01a["headroom_va"]) == (
        "11060",
        "22120",
        "882",
    )
    assert float(r01a["limit_va"]) == pytest.approx(
        float(r01a["capacity_va"]) * CONTINUOUS_LOAD_LIMIT, abs=1
    )
    devices = {row["device"]: row for row in _rows(files["facility/pdu-devices.csv"])}
    gpu = devices["gpu01"]
    assert (gpu["psus_a"], gpu["psus_b"]) == ("3", "3")
    assert (gpu["normal_watts_a"], gpu["failover_watts_a"]) == ("5100", "10200")
    phases = [r for r in _rows(files["facility/pdu-phases.csv"]) if r["pdu"] == "r02-pdu-a"]
    assert [(r["phase"], r["normal_va"]) for r in phases] == [
        ("L1", "3400"),
        ("L2", "3400"),
        ("L3", "3400"),
    ]
    outlets = [r for r in _rows(files["facility/pdu-outlets.csv"]) if r["device"] == "gpu03"]
    assert [(r["psu"], r["phase"]) for r in outlets][:3] == [("1", "L1"), ("2", "L2"), ("3", "L3")]


def test_single_feed_rack_has_no_failover_columns() -> None:
    files = _facility_files(EXAMPLES / "edge-roce-2node.yaml")
    (feed,) = _rows(files["facility/pdu-feeds.csv"])
    # 208 V x 30 A = 6240 VA; 80% = 4992 VA; 2 x 2000 + 450 + 350 W = 4800 W.
    assert (feed["capacity_va"], feed["limit_va"], feed["normal_va"]) == ("6240", "4992", "4800")
    assert feed["failover_va"] == "" and feed["headroom_va"] == "192"


def test_bank_sheet_gives_each_bank_its_breaker() -> None:
    cluster = _cluster(EXAMPLES / "edge-roce-2node.yaml")
    rack = cluster.spec.racks[0]
    pdu = rack.pdus[0].model_copy(update={"banks": 2, "bank_amps": 20})
    racks = [rack.model_copy(update={"pdus": [pdu]})]
    banked = ResolvedCluster(cluster.spec.model_copy(update={"racks": racks}), cluster.spec_name)
    facility = derive_facility(banked)
    assert facility is not None
    # 208 V x 20 A = 4160 VA, 80% = 3328 VA. Plugged in order onto alternating banks: each
    # node's two PSUs (1000 VA each on lab1 and lab2, 225 VA on lab-head) on banks 1 and 2,
    # then the switch's one PSU (350 VA) on bank 1: 2575 VA and 2225 VA.
    assert [row[2:] for row in facility.bank_rows] == [
        ("1", "", "20", "4160", "3328", "2575", ""),
        ("2", "", "20", "4160", "3328", "2225", ""),
    ]


def test_cable_sheet_numbers_ports_from_one_and_marks_the_overflow() -> None:
    files = _facility_files(EXAMPLES / "ml-training-8node.yaml")
    cables = _rows(files["facility/cables.csv"])
    leaf02 = [row for row in cables if row["switch"] == "ib-leaf02"]
    assert [int(row["port"]) for row in leaf02] == list(range(1, len(leaf02) + 1))
    assert leaf02[0]["peer"] == "gpu05" and leaf02[0]["peer_port"] == "mlx5_0"
    assert [row["port"] for row in leaf02 if row["note"]] == ["41", "42", "43", "44"]
    uplinks = [(r["switch"], r["peer"], r["peer_port"]) for r in cables if r["kind"] == "uplink"]
    assert uplinks == [("ib-leaf01", "ib-spine01", "1"), ("ib-leaf02", "ib-spine01", "2")]


def test_elevation_puts_u1_at_the_bottom() -> None:
    facility = derive_facility(_cluster(EXAMPLES / "ml-training-8node.yaml"))
    assert facility is not None
    r05 = next(e for e in facility.elevations if e.rack == "r05")
    boxes = {label.name: box for box, label in r05.devices}
    # slurm-head (1U at U2) sits one unit above the bottom of the frame.
    assert boxes["slurm-head"].y == r05.frame.y + r05.frame.height - 2 * UNIT_PX + 1
    assert boxes["ib-spine01"].y == r05.frame.y + 1  # U42, the top
    assert boxes["mds01"].height == 2 * UNIT_PX - 2
    assert [t.text for t in r05.free] == [
        "free U16-U40 (25U)",
        "free U6-U7 (2U)",
        "free U3 (1U)",
        "free U1 (1U)",
    ]


def test_a_long_label_loses_the_role_then_is_cut_but_keeps_the_watts() -> None:
    watts = "10200 W max"
    assert detail("hgx-h100", "compute", watts, 284) == "hgx-h100 \u00b7 compute, 10200 W max"
    assert detail("hgx-h100", "compute", watts, 120) == "hgx-h100, 10200 W max"
    cut = detail("a-very-long-hardware-profile-name", "storage", "1600 W max", 150)
    assert cut.endswith("\u2026, 1600 W max") and len(cut) * CHAR_PX <= 150


@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_svg_parses_and_html_fetches_nothing(spec_path: Path) -> None:
    files = _facility_files(spec_path)
    for name, text in files.items():
        if name.endswith(".svg"):
            root = ET.fromstring(text)
            assert root.tag == f"{SVG}svg"
            assert root.find(f"{SVG}title") is not None
    page = files["facility/overview.html"]
    racks = len(_cluster(spec_path).spec.racks)
    inline = racks <= WHOLE_RACKS  # a larger site's overview lists racks, with no picture
    # The only URL is the SVG namespace name of the inline elevations, never fetched.
    urls = set(re.findall(r"https?://[^\s\"'<>]*", page))
    assert urls == ({"http://www.w3.org/2000/svg"} if inline else set())
    for external in ("src=", "<script", "<link", "url(", "@import", "@font-face"):
        assert external not in page, external
    if inline:
        assert "href=" not in page
    assert page.count("<svg ") == (racks if inline else 0)


def _screenshot(chromium: str, page: Path, size: tuple[int, int], out: Path) -> bytes:
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--hide-scrollbars",
            f"--user-data-dir={out.parent / 'chromium-profile'}",
            f"--screenshot={out}",
            f"--window-size={size[0]},{size[1]}",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out.read_bytes()


def _rgb(fill: str) -> tuple[int, ...]:
    return tuple(int(fill[i : i + 2], 16) for i in (1, 3, 5))


@pytest.mark.slow
@pytest.mark.parametrize("spec_path", REFERENCE_SPECS, ids=lambda p: p.stem)
def test_browser_draws_the_elevations_and_the_overview(spec_path: Path, tmp_path: Path) -> None:
    """Headless Chromium draws every elevation at its own size and the overview page; each
    picture has that size, is not blank, and shows the fill of every role in it."""
    chromium = tool("chromium")
    if chromium is None:
        skip_or_fail("needs chromium")
    files = _facility_files(spec_path)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    facility = derive_facility(_cluster(spec_path))
    assert facility is not None
    # Racks drawn alike (one size, the same fills in the same places) are drawn once.
    shapes = {
        (r.width, r.height, tuple(b.fill for b, _ in r.devices)): r for r in facility.elevations
    }
    for rack in shapes.values():
        svg = tmp_path / f"facility/racks/{rack.rack}.svg"
        size = (rack.width, rack.height)
        image = decode(_screenshot(chromium, svg, size, tmp_path / f"{rack.rack}.png"))
        assert (image.width, image.height) == size
        colours = image.colours()
        assert len(colours) > 2, f"{rack.rack}: a blank picture"
        for box, label in rack.devices:
            assert _rgb(box.fill) in colours, f"{rack.rack}: {label.name} not drawn"
    page = tmp_path / "facility/overview.html"
    # A screen per row of elevations, so that every rack the page draws is in the
    # picture; past WHOLE_RACKS the page draws none (a row per rack instead).
    drawn_racks = len(facility.elevations) if len(facility.elevations) <= WHOLE_RACKS else 1
    page_size = (PAGE_SIZE[0], PAGE_SIZE[1] * -(-drawn_racks // RACKS_PER_SCREEN))
    image = decode(_screenshot(chromium, page, page_size, tmp_path / "overview.png"))
    assert (image.width, image.height) == page_size
    colours = image.colours()
    if len(facility.elevations) <= WHOLE_RACKS:
        drawn = {box.fill for rack in facility.elevations for box, _ in rack.devices}
        assert {_rgb(fill) for fill in drawn} <= colours
        assert _rgb(ROLE_FILLS["compute"]) in colours


def test_a_large_site_overview_lists_racks_and_the_most_loaded_feeds(tmp_path: Path) -> None:
    """Past WHOLE_RACKS racks the page stays readable: a row per rack linking its
    elevation, the most loaded feeds first, and nothing inline that grows per device."""
    from clustergen.dev import large_spec as large_spec_module
    from clustergen.outputs.facility import SHOWN_FEEDS, WHOLE_RACKS

    spec = tmp_path / "large.yaml"
    spec.write_text(large_spec_module.compact_spec(256))
    files = _facility_files(spec)
    racks = sorted(name for name in files if name.startswith("facility/racks/"))
    assert len(racks) > WHOLE_RACKS
    page = files["facility/overview.html"]
    assert "<svg" not in page
    links = re.findall(r'<a href="racks/([^"]+)\.svg">', page)
    assert [f"facility/racks/{name}.svg" for name in links] == racks
    feed_rows = re.findall(
        r"<tr(?: class=\"over\")?><td>([^<]+)</td><td>([^<]+)</td><td>[AB]</td>", page
    )
    assert len(feed_rows) == SHOWN_FEEDS
    shown = [int(p) for p in re.findall(r"\((\d+)% of the limit\)</td><td class=\"n\">", page)]
    assert shown == sorted(shown, reverse=True), "the most loaded feeds come first"
    assert len(page) < 200 * len(racks) + 100_000


def test_a_large_site_pdu_sheet_keeps_every_feed_and_leaves_outlets_to_the_csv(
    tmp_path: Path,
) -> None:
    """Past WHOLE_RACKS racks pdus.md has a row for every feed and points at the CSVs for
    the per-device, phase, bank and outlet rows, which still hold every one of them."""
    from clustergen.dev import large_spec as large_spec_module

    spec = tmp_path / "large.yaml"
    spec.write_text(large_spec_module.compact_spec(256))
    files = _facility_files(spec)
    sheet = files["facility/pdus.md"]
    feeds = list(csv.DictReader(io.StringIO(files["facility/pdu-feeds.csv"])))
    outlets = list(csv.DictReader(io.StringIO(files["facility/pdu-outlets.csv"])))
    devices = list(csv.DictReader(io.StringIO(files["facility/pdu-devices.csv"])))
    for feed in feeds:
        assert f"| {feed['rack']} | {feed['pdu']} | {feed['feed']} |" in sheet
    assert "## Outlets" not in sheet and "## Devices\n" not in sheet
    assert "pdu-outlets.csv" in sheet.split("## Devices, phases, banks and outlets")[1]
    assert sorted(row["device"] for row in devices if row["device"].startswith("gpu")) == [
        f"gpu{n:03d}" for n in range(1, 257)
    ]
    assert sum(1 for row in outlets if row["device"].startswith("gpu")) == 256 * 6
