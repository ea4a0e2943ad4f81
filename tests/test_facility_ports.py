"""The port map and port budget (facility/ports.csv, ports.md): every cable of cables.csv
at both of its ends, with its plane, tier and cable class, and each switch's ports used
down, up and free, over budget flagged."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from clustergen.outputs.facility import ports as ports_module
from clustergen.outputs.facility.ports import PortMap, port_map, port_pages
from clustergen.outputs.facility.sheets import cable_sheet
from clustergen.render import render_all
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec, load_spec
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES, REPO
from support.specs import example_data

EXAMPLE = REPO / "docs" / "fabric-example.yaml"


def _cluster(data: dict[str, Any] | None = None, path: str | None = None) -> ResolvedCluster:
    loaded = (
        load_spec(path)
        if path is not None
        else LoadedSpec(file="spec.yaml", name="spec.yaml", data=data or {})
    )
    cluster, problems = validate_cluster(loaded)
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def _rows(ports: PortMap) -> list[tuple[str, ...]]:
    """ports.csv's rows, read back as a spreadsheet reads them."""
    table = [tuple(row) for row in csv.reader(io.StringIO(ports.text))]
    assert table[0] == ports_module.PORT_HEADER and len(table) == ports.count + 1
    return table[1:]


def test_every_cable_is_listed_at_both_ends_with_its_tier_and_class() -> None:
    cluster = _cluster(path=str(EXAMPLE))
    cables = tuple(cable_sheet(cluster))
    rows = _rows(port_map(cluster, cables))
    at = {(row[1], row[2]): row for row in rows}
    assert len(at) == len(rows), "a switch port listed twice"
    for switch, port, kind, peer, peer_port, _ in cables:
        row = at[(switch, port)]
        assert (row[4], row[5]) == (peer, peer_port)
        if kind == "uplink":
            back = at[(peer, peer_port)]
            assert (back[4], back[5], back[3]) == (switch, port, row[3])
    uplinks = sum(1 for cable in cables if cable[2] == "uplink")
    assert len(rows) == len(cables) + uplinks
    # NDR: node to leaf within the rack on passive copper, switch to switch optical.
    tiers = {(row[3], row[6]) for row in rows}
    assert tiers == {("node-leaf", "DAC"), ("leaf-spine", "optical"), ("spine-core", "optical")}
    leaf = at[("su2-leaf3", "1")]
    assert leaf[0] == "rail 3" and leaf[4] == "gpu033" and leaf[7] == "3"


def test_each_rail_is_a_section_with_the_spines_that_serve_it_alone() -> None:
    cluster = _cluster(path=str(EXAMPLE))
    ports = port_map(cluster, cable_sheet(cluster))
    # The cores serve every rail: they are a section of their own, after the rails.
    assert [plane.label for plane in ports.planes] == [f"rail {k}" for k in range(1, 9)] + [
        "switches of several rails, or of none"
    ]
    assert ports.planes[-1].switches == ("core01", "core02", "core03", "core04")
    sections, omitted = port_pages(ports, {})
    assert omitted == ""
    rail2 = sections[1].switches
    assert [s.name for s in rail2] == [f"su{u}-leaf2" for u in range(1, 5)] + [
        "spine03",
        "spine04",
    ]


def test_the_budget_counts_ports_down_up_and_free_and_flags_a_switch_over_it() -> None:
    cluster = _cluster(path=str(EXAMPLES / "ml-training-8node.yaml"))
    ports = port_map(cluster, cable_sheet(cluster))
    budget = {row[1]: row for row in ports.budgets}
    # ib-leaf02: 4 GPU nodes x 8 HCAs, the head node 1, mds01 and 4 OSS 2 each: 43 down.
    assert budget["ib-leaf02"][4:9] == ("40", "43", "1", "44", "-4")
    assert budget["ib-leaf02"][9].startswith("OVER BUDGET by 4")
    assert budget["ib-leaf01"][4:9] == ("40", "32", "1", "33", "7")
    assert ports.over == ("ib-leaf02",)
    data = example_data()
    data["network"]["fabric"]["switches"][1]["ports"] = 48
    ports = port_map(_cluster(data), cable_sheet(_cluster(data)))
    assert ports.over == ()
    assert {row[1]: row for row in ports.budgets}["ib-leaf02"][8:] == ("4", "")


def test_a_port_past_the_switchs_last_is_noted() -> None:
    # ib-leaf02 has 44 cables on the 40 ports the rate's usual switch is assumed to have
    # (a warning: network.switch-ports-assumed-exceeded); ports 41 to 44 are past it, at
    # the leaf's end, and the spine's end of its uplink (port 2 of 40) is not.
    cluster = _cluster(path=str(EXAMPLES / "ml-training-8node.yaml"))
    rows = _rows(port_map(cluster, cable_sheet(cluster)))
    noted = [(row[1], row[2]) for row in rows if "beyond the switch's ports" in row[8]]
    assert noted == [("ib-leaf02", str(port)) for port in range(41, 45)]
    assert ("ib-spine01", "2", "ib-leaf02", "44") in [row[1:3] + row[4:6] for row in rows]


def test_past_the_printed_limit_the_page_keeps_budgets_and_switch_links(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ports_module, "PRINTED_PORTS", 10)
    files = render_all(_cluster(path=str(EXAMPLES / "ml-training-8node.yaml")))
    page = files["facility/ports.md"].text
    assert "the ports cabled to nodes are in ports.csv" in page
    assert "| ib-leaf02 | leaf |" in page
    assert "| 33 | leaf-spine | ib-spine01 | 1 |" in page
    assert "gpu01" not in page
    table = list(csv.reader(io.StringIO(files["facility/ports.csv"].text)))
    assert table[0] == list(ports_module.PORT_HEADER)
    first = ["plane 1", "ib-leaf01", "1", "node-leaf", "gpu01", "mlx5_0", "DAC", "", "", "r01 U3"]
    assert first in table
    # The spine's end of ib-leaf01's uplink: the leaf sits in r01 at U42.
    assert table[-2][:6] == ["plane 1", "ib-spine01", "1", "leaf-spine", "ib-leaf01", "33"]
    assert table[-2][9] == "r01 U42"
    assert "### ib-spine01 (spine, plane 1, at r05 U42)" in page
    # Past the limit in switch-to-switch ports too (2 cables, 4 ports), only the budgets.
    monkeypatch.setattr(ports_module, "PRINTED_PORTS", 3)
    page = render_all(_cluster(path=str(EXAMPLES / "ml-training-8node.yaml")))
    text = page["facility/ports.md"].text
    assert "every port is in ports.csv" in text and "| ib-leaf02 | leaf |" in text
    assert "###" not in text and "leaf-spine | ib-spine01" not in text


def test_a_node_cabled_to_a_leaf_in_another_rack_gets_the_class_for_any_length() -> None:
    # ib-leaf01 sits in r01 (U42) with gpu01 and gpu02; gpu03 and gpu04 are in r02.
    cluster = _cluster(path=str(EXAMPLES / "ml-training-8node.yaml"))
    rows = _rows(port_map(cluster, cable_sheet(cluster)))
    by_port = {(row[1], row[4], row[5]): row for row in rows}
    inside = by_port[("ib-leaf01", "gpu01", "mlx5_0")]
    across = by_port[("ib-leaf01", "gpu03", "mlx5_0")]
    assert (inside[6], inside[8], inside[9]) == ("DAC", "", "r01 U3")
    assert (across[6], across[8], across[9]) == ("optical", "crosses racks: r01 to r02", "r02 U3")
    # A node in no rack (the docs example has none) keeps the in-rack class.
    example = _cluster(path=str(EXAMPLE))
    assert {
        row[6] for row in _rows(port_map(example, cable_sheet(example))) if row[3] == "node-leaf"
    } == {"DAC"}
