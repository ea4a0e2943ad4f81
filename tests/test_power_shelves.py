"""Power shelves and liquid cooling (issue 24): the sheets print the plan the checks judge,
the checks hold at their edges, and a spec without shelves, liquid or CDUs renders none
of it (the reference specs' goldens, tests/test_golden.py, hold them byte for byte)."""

from __future__ import annotations

import copy
import csv
import io
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from clustergen.base.errors import format_path
from clustergen.render import render_all
from clustergen.spec.load import LoadedSpec, load_spec
from clustergen.validate import validate, validate_cluster

from support.paths import CLASSIC_SPECS

SPEC = Path(__file__).parent / "data" / "rack-scale-liquid.yaml"
NEW_SHEETS = ("facility/power-shelves.csv", "facility/cooling.csv", "facility/cdus.csv")


def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe").load(SPEC.read_text())
    return loaded


def _loaded(data: dict[str, Any]) -> LoadedSpec:
    return LoadedSpec(file="spec.yaml", name="spec.yaml", data=copy.deepcopy(data))


def _problems(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(code, path, message) of every error and of the warnings this file is about."""
    return [
        (p.code.name, format_path(p.path), p.message)
        for p in validate(_loaded(data))[1]
        if p.severity == "error" or p.code.name.startswith(("racks.", "facility."))
    ]


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_shelf_and_heat_sheets_print_the_plan_the_checks_judge() -> None:
    cluster, problems = validate_cluster(_loaded(_data()))
    assert cluster is not None, [p.format() for p in problems]
    files = {name: a.text for name, a in render_all(cluster).items()}
    # 2 x 33 kW in N+N: one shelf carries the rack, 33 kW; 2 x 10200 + 2 x 500 W = 21.4 kW.
    (shelves,) = _rows(files["facility/power-shelves.csv"])
    assert shelves == {
        "rack": "nvl1",
        "shelves": "2",
        "shelf_kw": "33",
        "redundancy": "N+N",
        "carrying_shelves": "1",
        "capacity_w": "33000",
        "typical_watts": "21400",
        "max_watts": "21400",
        "headroom_w": "11600",
    }
    # Liquid: 2 x 10200 W x 0.85 + 500 W x 0.5 = 17590 W; air: the rest, 3810 W.
    heat = {row["rack"]: row for row in _rows(files["facility/cooling.csv"])}
    assert [heat["nvl1"][k] for k in ("cdu", "liquid_watts", "air_watts", "air_headroom_w")] == [
        "cdu1",
        "17590",
        "3810",
        "1190",
    ]
    assert [heat["svc1"][k] for k in ("cdu", "liquid_watts", "air_cooling_w")] == ["", "0", ""]
    assert _rows(files["facility/cdus.csv"]) == [
        {
            "cdu": "cdu1",
            "racks": "nvl1",
            "capacity_w": "20000",
            "liquid_watts": "17590",
            "headroom_w": "2410",
        }
    ]
    # The PDU rack keeps its feed; the shelf rack has none.
    assert [row["rack"] for row in _rows(files["facility/pdu-feeds.csv"])] == ["svc1"]
    assert (
        "| nvl1 | 2 | 33 | N+N | 1 | 33000 | 21400 | 21400 | 11600 |" in files["facility/pdus.md"]
    )
    assert "| nvl1 | cdu1 | 21400 | 17590 | 3810 | 5000 | 1190 |" in files["facility/racks.md"]
    assert "| cdu1 | nvl1 | 20000 | 17590 | 2410 |" in files["facility/racks.md"]
    # The elevation names the shelves and draws the load against them, not "no PDUs".
    svg = files["facility/racks/nvl1.svg"]
    assert "power shelves 2 x 33 kW (N+N)" in svg and "33.00 kW: 65% used" in svg
    assert "No PDUs" not in svg


@pytest.mark.parametrize("spec_path", CLASSIC_SPECS, ids=lambda p: p.stem)
def test_a_spec_without_shelves_liquid_or_cdus_renders_none_of_their_sheets(
    spec_path: Path,
) -> None:
    cluster, _ = validate_cluster(load_spec(str(spec_path)))
    assert cluster is not None
    files = render_all(cluster)
    assert not [name for name in NEW_SHEETS if name in files]
    assert "## Power shelves" not in files["facility/pdus.md"].text
    assert "## Heat" not in files["facility/racks.md"].text


def test_shelves_over_capacity_tells_lost_redundancy_from_too_few_shelves() -> None:
    data = _data()
    shelves = data["racks"][0]["power_shelves"]
    shelves.update(count=4, shelf_kw=7, redundancy="N+1")  # 3 x 7 = 21 kW < 21.4 kW < 28 kW
    ((code, where, message),) = _problems(data)
    assert (code, where) == ("racks.shelves-over-capacity", "racks[0].power_shelves.count")
    assert "carry 21.00 kW (3 x 7 kW) with 1 shelf lost, so the rack is not N+1" in message
    shelves.update(count=2, shelf_kw=10, redundancy="N")  # 20 kW < 21.4 kW, no reserve
    ((code, _, message),) = _problems(data)
    assert "above even all 2 together (20.00 kW)" in message
    shelves.update(shelf_kw=10.7)  # exactly 21.4 kW on the two: fits
    assert _problems(data) == []


def test_node_without_power_in_a_shelf_rack_is_refused() -> None:
    data = _data()
    del data["hardware"]["hgx"]["power"]
    codes = {(code, where) for code, where, _ in _problems(data)}
    assert ("racks.node-power-unknown", "racks[0].devices[0].node") in codes


def test_cdu_checks_need_a_cdu_and_a_known_rack() -> None:
    data = _data()
    data["facility"]["cdus"] = [
        {"name": "cdu1", "capacity_kw": 20, "racks": "nvl1"},
        {"name": "cdu2", "capacity_kw": 20, "racks": "nvl1,svc1"},
    ]
    assert [code for code, _, _ in _problems(data)] == ["facility.rack-on-two-cdus"]
    del data["facility"]["cdus"]  # no CDUs: liquid heat is shown, not checked
    assert _problems(data) == []


def test_rack_pattern_carries_shelves_and_air_cooling() -> None:
    data = _data()
    data["racks"][0] = {
        "names": "nvl[1-2]",
        "height_u": 48,
        "nodes": "gpu[1-2]",
        "units": [1],
        "power_shelves": {"count": 2, "shelf_kw": 6},
        "air_cooling_kw": 1,
    }
    data["facility"]["cdus"] = [{"name": "cdu1", "capacity_kw": 40, "racks": "nvl[1-2]"}]
    problems = _problems(data)
    # Each rack: one 10.2 kW tray on 6 kW in N+N, and 1.53 kW to air over 1 kW; the two
    # racks' alike problems are told once, at the pattern's keys.
    assert sorted((code, where) for code, where, _ in problems) == [
        ("racks.air-cooling-exceeded", "racks[0].air_cooling_kw"),
        ("racks.shelves-over-capacity", "racks[0].power_shelves.count"),
    ]
    assert all("nvl1" in message for _, _, message in problems)


def test_busbar_fed_trays_without_psus_validate_and_render_in_a_shelf_rack() -> None:
    data = _data()
    data["hardware"]["hgx"]["power"] = {"max_watts": 10200}  # no psu_count: busbar-fed
    cluster, problems = validate_cluster(_loaded(data))
    assert cluster is not None, [p.format() for p in problems]
    assert not [p.format() for p in problems if p.severity == "error"]
    files = {name: a.text for name, a in render_all(cluster).items()}
    # The trays draw from the shelves as with PSUs: the same rack total and headroom.
    (shelves,) = _rows(files["facility/power-shelves.csv"])
    assert (shelves["max_watts"], shelves["headroom_w"]) == ("21400", "11600")
    racked = {row["device"]: row for row in _rows(files["facility/racks.csv"])}
    assert (racked["gpu1"]["rack"], racked["gpu1"]["max_watts"]) == ("nvl1", "10200")
    # No outlet, PDU device row or feed for them; the PDU rack keeps its own.
    assert [row["device"] for row in _rows(files["facility/pdu-devices.csv"])] == ["head1"]
    assert {row["device"] for row in _rows(files["facility/pdu-outlets.csv"])} == {"head1"}
    assert "a tray with no PSUs of its own (no psu_count) as well" in files["facility/pdus.md"]
    # A feed lost under every rack leaves the busbar-fed trays running.
    assert (
        "| one feed in every rack | 1 | feed A in every rack | 2 of 2 (100%) |"
        in (files["facility/failure-domains.md"])
    )


def test_a_node_without_psus_is_refused_outside_a_shelf_rack() -> None:
    data = _data()
    data["hardware"]["hgx"]["power"] = {"max_watts": 10200}
    data["racks"][0]["devices"].pop(1)  # gpu2 goes to the PDU rack svc1
    data["racks"][1]["devices"].append({"u": 10, "node": "gpu2"})
    found = [(c, w, m) for c, w, m in _problems(data) if c == "racks.node-without-psus"]
    assert [(c, w) for c, w, _ in found] == [
        ("racks.node-without-psus", "racks[1].devices[1].node")
    ]
    assert (
        "'gpu2' is in rack 'svc1', which has PDUs, but its hardware profile 'hgx'" in (found[0][2])
    )
    del data["racks"][1]["pdus"]  # neither PDUs nor shelves: still no busbar
    ((_, _, message),) = [p for p in _problems(data) if p[0] == "racks.node-without-psus"]
    assert "which has neither PDUs nor power_shelves" in message
    # PSUs back on the profile: the PDU rack plugs them in again.
    data["hardware"]["hgx"]["power"].update(psu_count=6, psu_watts=3500)
    assert not [p for p in _problems(data) if p[0] == "racks.node-without-psus"]


@pytest.mark.parametrize(
    ("power", "message"),
    [
        ({"psu_count": 6}, "psu_count is given without psu_watts"),
        ({"psu_watts": 3500}, "psu_watts is given without psu_count"),
        ({"psus_per_feed": {"A": 3}}, "psus_per_feed counts PSUs, but psu_count is not given"),
        (
            {"redundant_psus": 0, "psus_per_feed": {"A": 3}},
            "redundant_psus and psus_per_feed count PSUs",
        ),
    ],
)
def test_psu_keys_without_psu_count_are_refused(power: dict[str, Any], message: str) -> None:
    data = _data()
    data["hardware"]["hgx"]["power"] = {"max_watts": 10200, **power}
    ((code, where, text),) = _problems(data)
    assert (code, where) == ("hardware.psus-incomplete", "hardware.hgx.power")
    assert message in text
