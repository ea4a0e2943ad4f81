"""The facility family's shortcuts give the text the plain way gives: rack SVGs rendered
once per shape and filled in with each rack's names, device and outlet rows made once
per kind of device and circuit, and CSV sheets joined without csv.writer."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from random import Random
from typing import Any

import pytest
import yaml

import clustergen.outputs.facility as facility_outputs
import clustergen.outputs.facility.sheets as sheets_module
from clustergen.outputs.facility import RACK_SVG, rack_svgs
from clustergen.outputs.facility.derive import FacilitySheets, derive_facility
from clustergen.outputs.facility.elevation import PLACEHOLDER, Shape, elevation
from clustergen.outputs.facility.sheets import (
    CsvSheet,
    csv_text,
    device_cells,
    device_sheet,
    number,
    outlet_sheet,
)
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import load_spec
from clustergen.templating import environment, render_template
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES

# Racks of one shape whose names differ in length: the PDUs' and the 1U device's (its
# one-line label leaves the detail the room its name does not take), and a name cut to
# fit its box. `odd` differs from them in one device's watts only.
ALIKE = {
    "r1": ("pdu", "sw1", "a" * 60),
    "rack-number-two": ("rack-number-two-pdu", "switch-02", "b" * 63),
    "r3": ("p", "s", "c" * 50),
}


def _rack(name: str, pdu: str, switch: str, cut: str, watts: int = 350) -> dict[str, object]:
    return {
        "name": name,
        "height_u": 24,
        "pdus": [{"name": pdu, "feed": "A", "volts": 208, "phases": 1, "amps": 30}],
        "devices": [
            {"u": 1, "name": switch, "height_u": 1, "max_watts": watts},
            {"u": 3, "name": cut, "height_u": 2, "max_watts": 200},
        ],
    }


def _cluster(tmp_path: Path) -> ResolvedCluster:
    data = yaml.safe_load((EXAMPLES / "edge-roce-2node.yaml").read_text())
    racks = [_rack(name, *names) for name, names in ALIKE.items()]
    racks.append(_rack("odd", "pdu", "sw1", "a" * 60, watts=351))
    data["racks"] += racks
    path = tmp_path / "shapes.yaml"
    path.write_text(yaml.safe_dump(data))
    cluster, problems = validate_cluster(load_spec(str(path)))
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def _facility(cluster: ResolvedCluster) -> FacilitySheets:
    facility = derive_facility(cluster)
    assert facility is not None
    return facility


def test_racks_alike_share_a_shape_and_differ_only_in_names(tmp_path: Path) -> None:
    facility = _facility(_cluster(tmp_path))
    shapes = {shape.rack: shape for shape in facility.shapes}
    alike = {shapes[name].elevation for name in ALIKE}
    assert len(alike) == 1, "racks built alike have one shape"
    assert shapes["odd"].elevation not in alike
    assert len({shapes[name].names for name in ALIKE}) == len(ALIKE)


def test_a_shape_with_its_names_is_the_elevation_made_with_them(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    facility = _facility(cluster)
    fabric = cluster.spec.network.fabric
    switch_models = {s.name: s.model for s in fabric.switches} if fabric else {}
    made = tuple(elevation(plan, switch_models) for plan in cluster.rack_plans)
    assert facility.elevations == made
    labels = {label.name for rack in made for _, label in rack.devices}
    assert "sw1" in labels and "a" * 44 + "\u2026" in labels  # cut to fit


def test_rack_svgs_are_each_rack_rendered_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same text, from two renders a shape (its own, and its first rack whole to
    check it against): were a rack's SVG to differ from its shape's in more than names,
    every rack of that shape would be rendered whole, and this would count them."""
    cluster = _cluster(tmp_path)
    facility = _facility(cluster)
    env = environment()
    whole = [render_template(env, RACK_SVG, cluster, rack=rack) for rack in facility.elevations]
    renders = []

    def counted(*args: Any, **values: Any) -> str:
        renders.append(values["rack"])
        return render_template(*args, **values)

    monkeypatch.setattr(facility_outputs, "render_template", counted)
    assert rack_svgs(facility, cluster, env) == whole
    assert all(PLACEHOLDER not in svg for svg in whole)
    assert len(renders) == 2 * len({shape.elevation for shape in facility.shapes}) < 2 * len(whole)


def test_names_to_escape_or_holding_a_placeholder_are_rendered_whole(tmp_path: Path) -> None:
    """Names the memo cannot put in as they stand: the rack is rendered whole, from the
    shape with its names in, escaped as the template escapes them."""
    cluster = _cluster(tmp_path)
    facility = _facility(cluster)
    first = facility.shapes[1]
    odd_names = [
        tuple(f"{name}&<'\"" for name in first.names),
        tuple(f"{name}{PLACEHOLDER}0{PLACEHOLDER}" for name in first.names),
    ]
    extra = tuple(Shape(f"x{i}", first.elevation, names) for i, names in enumerate(odd_names))
    facility = dataclasses.replace(facility, shapes=facility.shapes + extra)
    env = environment()
    svgs = rack_svgs(facility, cluster, env)
    for shape, svg in zip(facility.shapes, svgs, strict=True):
        assert svg == render_template(env, RACK_SVG, cluster, rack=shape.named())
    assert "&amp;&lt;&#39;&#34;" in svgs[-2]


def test_outlet_sheet_is_every_outlet_of_every_pdu(tmp_path: Path) -> None:
    """Racks alike share a circuit, so their outlets' cells are made once; each row is
    still its own rack's, PDU's and device's."""
    plans = _cluster(tmp_path).rack_plans
    circuits = {id(load.circuit) for plan in plans for load in plan.loads}
    assert len(circuits) < sum(len(plan.loads) for plan in plans)
    assert outlet_sheet(plans) == tuple(
        (
            plan.rack.name,
            load.pdu.name,
            outlet.device,
            str(outlet.psu),
            str(outlet.bank),
            outlet.phase,
            number(outlet.normal_va),
            "" if load.failover_va is None else number(outlet.failover_va),
        )
        for plan in plans
        for load in plan.loads
        for outlet in load.outlets
    )


def test_device_sheet_is_every_device_of_every_rack_with_pdus(tmp_path: Path) -> None:
    """Devices of a kind share their cells but the name; each row is its own."""
    plans = _cluster(tmp_path).rack_plans
    assert device_sheet(plans) == tuple(
        (plan.rack.name, device.name, *device_cells(plan, device))
        for plan in plans
        if plan.loads
        for device in sorted(plan.devices, key=lambda d: (d.u, d.index))
    )


def test_csv_text_is_what_csv_writer_writes() -> None:
    header = ("a", "b", "c")
    tables = [
        [],
        [("1", "2", "")],
        [("x,y", "z", "")],
        [('say "hi"', "", "")],
        [("line\nbreak", "", "")],
        [("carriage\rreturn", "", "")],
        [("",)],
        [("only",), ("", "")],
    ]
    for rows in tables:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        assert csv_text(header, rows) == out.getvalue(), rows


def test_a_sheet_made_a_block_at_a_time_is_what_csv_writer_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Blocks of 3 rows, plain and quoted ones side by side, a row passing to a reader on
    its way (the cable sheet feeding the port map), and one-column headers."""
    monkeypatch.setattr(sheets_module, "_BLOCK_ROWS", 3)
    cells = ["n1", "", "x,y", 'a "q"', "l\nb", "c\rr", "42", "mlx5_0"]
    random = Random(42)
    for header in (("a", "b", "c"), ("only",), ("x,y", "b")):
        for size in (0, 1, 2, 3, 4, 7, 30):
            rows = [
                tuple(random.choice(cells) for _ in range(random.choice((1, 2, 3))))
                for _ in range(size)
            ]
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)
            sheet = CsvSheet(header)
            assert list(sheet.passing(iter(rows))) == rows
            assert sheet.text() == out.getvalue() == csv_text(header, iter(rows)), rows
