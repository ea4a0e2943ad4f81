"""The fabric's drawing (facility/fabric.svg, docs/fabric.svg): tiers as rows, a box per
switch and per group of nodes, a line per pair of boxes with cables between them, as
SVG and as a picture drawn by a real browser."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clustergen.dev.large_spec import compact_rail_spec
from clustergen.outputs.facility.fabric_drawing import (
    MAX_BOXES,
    NODES_FILL,
    FabricDrawing,
    fabric_drawing,
    rail_fill,
)
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec, parse_spec
from clustergen.templating import environment, render_template
from clustergen.validate import validate_cluster

from support.ci import skip_or_fail, tool
from support.paths import EXAMPLES, REPO
from support.png import decode
from support.regen import check_current

SVG = "{http://www.w3.org/2000/svg}"
EXAMPLE = REPO / "docs" / "fabric-example.yaml"
DOC_SVG = REPO / "docs" / "fabric.svg"
REFERENCE = EXAMPLES / "ml-training-8node.yaml"


def _cluster(path: Path) -> ResolvedCluster:
    cluster, problems = validate_cluster(load_spec(str(path)))
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def _drawing(cluster: ResolvedCluster) -> FabricDrawing:
    drawing = fabric_drawing(cluster)
    assert drawing is not None
    return drawing


def _svg(cluster: ResolvedCluster) -> str:
    return render_template(
        environment(), "facility/fabric.svg.j2", cluster, drawing=_drawing(cluster)
    )


def _names(drawing: FabricDrawing) -> list[str]:
    return [box.name.text for box in drawing.boxes]


def test_the_reference_fabric_is_two_leaves_under_a_spine_and_their_nodes() -> None:
    drawing = _drawing(_cluster(REFERENCE))
    assert _names(drawing)[:3] == ["ib-leaf01", "ib-leaf02", "ib-spine01"]
    nodes = [box for box in drawing.boxes if box.box.fill == NODES_FILL]
    assert [box.detail.text for box in nodes] == ["4 nodes · 32 GPUs", "10 nodes · 32 GPUs"]
    # Two leaf-spine lines of 1 cable each, said once; two node lines of 32 and 43 HCAs.
    counts = sorted(link.count.text for link in drawing.links if link.count is not None)
    assert counts == ["32", "43"] and len(drawing.links) == 4
    legend = " ".join(text.text for _, text in drawing.legend)
    assert "leaf-spine: 1 cable on every line" in legend
    # ib-leaf02: 44 cables on the 40 ports assumed for HDR; it is framed red, and said.
    over = {box.name.text: box.over for box in drawing.boxes}
    assert over["ib-leaf02"] and not over["ib-leaf01"] and not over["ib-spine01"]
    assert "A red frame: a switch with more cables than ports" in legend
    root = ET.fromstring(_svg(_cluster(REFERENCE)))
    assert root.tag == f"{SVG}svg" and root.find(f"{SVG}title") is not None


def test_a_rail_optimised_fabric_draws_its_rails_units_spines_and_cores() -> None:
    drawing = _drawing(_cluster(EXAMPLE))
    names = _names(drawing)
    assert names[:9] == [f"su1-leaf{rail}" for rail in range(1, 9)] + ["su2-leaf1"]
    assert names.count("spine01") == 1 and "core04" in names
    assert names[-4:] == ["gpu[001-032]", "gpu[033-064]", "gpu[065-096]", "gpu[097-128]"]
    fills = {box.name.text: box.box.fill for box in drawing.boxes}
    assert fills["su2-leaf3"] == fills["spine05"] == rail_fill(3)
    # 32 leaves to their unit's nodes, 2 spines each, 16 spines to 4 cores.
    assert len(drawing.links) == 32 + 32 * 2 + 16 * 4
    legend = " ".join(text.text for _, text in drawing.legend)
    assert "red frame" not in legend and not any(box.over for box in drawing.boxes)
    for said in ("node-leaf: 32 cables", "leaf-spine: 8 cables", "spine-core: 2 cables"):
        assert said in legend
    # The rows, top to bottom: cores, spines, leaves, nodes.
    rows = {text.text: text.y for text in drawing.rows}
    assert rows["cores"] < rows["spines"] < rows["leaves"] < rows["nodes"]


def test_at_scale_a_row_draws_at_most_max_boxes() -> None:
    # The rail-optimised three-tier form: 1,024 leaves, spines per rail and pod, cores.
    loaded = parse_spec(compact_rail_spec(4096), file="c.yaml", name="c.yaml")
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    drawing = _drawing(cluster)
    rows: dict[int, int] = {}
    for box in drawing.boxes:
        rows[box.box.y] = rows.get(box.box.y, 0) + 1
    assert max(rows.values()) <= MAX_BOXES
    assert len(rows) == 4  # cores, spines, leaves and node boxes, each row at most MAX_BOXES
    legend = " ".join(text.text for _, text in drawing.legend)
    assert "A box stands for several switches" in legend
    # Hundreds of lines between merged boxes: the legend gives the layers' totals.
    assert not any(link.count for link in drawing.links if link.y1 < drawing.boxes[0].box.y)
    assert " cables on " in legend
    first = drawing.boxes[0]
    assert first.name.text.startswith("su001-r[1-8]") and first.detail.text.endswith(" switches")


@pytest.mark.parametrize("spec", [REFERENCE, EXAMPLES / "edge-roce-2node.yaml"], ids=str)
def test_the_facility_family_renders_the_drawing(spec: Path) -> None:
    files = render_all(_cluster(spec))
    assert files["facility/fabric.svg"].text == _svg(_cluster(spec))


def test_the_docs_drawing_is_the_example_specs(update_golden: bool) -> None:
    check_current(DOC_SVG, _svg(_cluster(EXAMPLE)), update_golden)


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
@pytest.mark.parametrize("spec", [REFERENCE, EXAMPLE], ids=lambda p: p.stem)
def test_browser_draws_the_fabric(spec: Path, tmp_path: Path) -> None:
    """Headless Chromium draws the SVG at its own size, with every box's fill in it."""
    chromium = tool("chromium")
    if chromium is None:
        skip_or_fail("needs chromium")
    cluster = _cluster(spec)
    drawing = _drawing(cluster)
    page = tmp_path / "fabric.svg"
    page.write_text(_svg(cluster), encoding="utf-8")
    size = (drawing.width, drawing.height)
    image = decode(_screenshot(chromium, page, size, tmp_path / "fabric.png"))
    assert (image.width, image.height) == size
    colours = image.colours()
    for box in drawing.boxes:
        assert _rgb(box.box.fill) in colours, f"{box.name.text} not drawn"
    # The red frame of an over-budget switch (the reference spec's ib-leaf02) shows.
    assert (_rgb("#d62728") in colours) == any(box.over for box in drawing.boxes)
