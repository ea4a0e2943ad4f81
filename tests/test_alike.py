"""Floods (issue 20): problems of one code that say the same thing about different
elements print once, at the first one's place, with the count and the first few names,
in every format and on the facility overview page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from clustergen.base.errors import LocatedProblem
from clustergen.outputs.facility.derive import derive_facility
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate, validate_cluster

from support.paths import INVALID
from support.specs import example_data

Data = dict[str, Any]


def _rail_optimised(rails: int = 8) -> Data:
    """A rail-optimised fabric written as a tree: every node under each of `rails` leaves."""
    data = example_data()
    data["network"]["fabric"]["switches"] = [
        {"name": f"rail{k}", "nodes": "gpu[01-08]", "ports": 64} for k in range(rails)
    ] + [{"name": "ib-spine01", "switches": f"rail[0-{rails - 1}]"}]
    return data


def _problems(data: Data) -> list[LocatedProblem]:
    return validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]


def test_a_rail_optimised_attempt_is_one_line_not_fifty_six() -> None:
    # gpu01-gpu08 under rail1-rail7 as well as rail0: 56 times "node 'gpuNN' already hangs
    # from leaf 'rail0'", one line now, at rail1's nodes (the first), naming the others.
    problems = _problems(_rail_optimised())
    two = [p for p in problems if p.code.name == "network.node-two-leaves"]
    assert len(two) == 1, [p.format() for p in problems]
    assert two[0].path == ("network", "fabric", "switches", 1, "nodes")
    assert two[0].message == (
        "node 'gpu01' already hangs from leaf 'rail0'; the leaves of a rail-optimised fabric "
        "say their 'rail' (and 55 more like it: gpu02, gpu03, gpu04, ...)"
    )


def test_every_format_prints_the_collapsed_line(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "rails.yaml"
    YAML().dump(_rail_optimised(), spec)
    text = cli("validate", str(spec)).err.splitlines()
    records = json.loads(cli("validate", "--format", "json", str(spec)).out)
    github = cli("validate", "--format", "github", str(spec)).out.splitlines()
    for lines in (text, [r["message"] for r in records], github):
        alike = [line for line in lines if "already hangs from leaf" in line]
        assert len(alike) == 1 and "(and 55 more like it: gpu02" in alike[0], lines


def test_a_few_alike_problems_keep_a_line_each_at_their_own_place() -> None:
    # Up to four alike problems are no flood: each keeps its line and its place (an editor
    # or a pull request annotates each). gpu01-gpu04 under rail1 again: four lines.
    data = _rail_optimised(rails=2)
    data["network"]["fabric"]["switches"][1]["nodes"] = "gpu[01-04]"
    two = [p for p in _problems(data) if p.code.name == "network.node-two-leaves"]
    assert [p.message for p in two] == [
        f"node 'gpu0{n}' already hangs from leaf 'rail0'; the leaves of a rail-optimised "
        "fabric say their 'rail'"
        for n in range(1, 5)
    ]
    # The invalid case with two alike (gpu1, gpu2) keeps both lines.
    expected = (INVALID / "facility-psu-on-missing-feed.expected").read_text()
    assert expected.count("[racks.psu-feed-missing]") == 2


def test_identical_messages_at_several_places_name_the_places() -> None:
    # The same unknown node under five leaves: the message is the same each time, so the
    # places, not a name, tell the problems apart.
    data = example_data()
    data["network"]["fabric"]["switches"] = [
        {"name": f"leaf{k}", "nodes": "gpu[01-08],gpu99" if k == 0 else "gpu99"} for k in range(6)
    ] + [{"name": "ib-spine01", "switches": "leaf[0-5]"}]
    unknown = [p for p in _problems(data) if p.code.name == "network.unknown-node"]
    assert len(unknown) == 1, [p.format() for p in unknown]
    assert unknown[0].message.endswith(
        "(and 5 more like it: network.fabric.switches[1].nodes, "
        "network.fabric.switches[2].nodes, network.fabric.switches[3].nodes, ...)"
    )


def _overloaded_racks(count: int) -> Data:
    """The reference spec and `count` racks of seven shelves, one PSU per feed each, plugged
    onto L1, L2, L3, L1, ...: L1 carries 3500 + 3500 + 1500 = 8500 VA on failover, above
    80% of its 9584 VA pole though within it: a warning per rack and feed."""
    data = example_data()
    watts = [3500, 500, 500, 3500, 500, 500, 1500]
    for r in range(6, 6 + count):
        rack = f"r{r:02d}"
        data["racks"].append(
            {
                "name": rack,
                "height_u": 42,
                "pdus": [
                    {"name": f"{rack}-pdu-{f.lower()}", "feed": f, "volts": 415, "phases": 3}
                    | {"amps": 40}
                    for f in ("A", "B")
                ],
                "devices": [
                    {"u": 1 + 2 * k, "name": f"{rack}-shelf{k}", "height_u": 2, "max_watts": w}
                    for k, w in enumerate(watts)
                ],
            }
        )
    return data


def test_the_overview_page_lists_alike_warnings_once() -> None:
    data = _overloaded_racks(6)
    problems = _problems(data)
    over = [p for p in problems if p.code.name == "racks.phase-over-limit-on-failover"]
    # r01's two (its own devices) and one line per feed for r06-r11.
    assert len(over) == 4, [p.format() for p in over]
    assert over[2].path == ("racks", 5, "pdus", 0, "amps")
    assert "(and 5 more like it: r07-pdu-a, r08-pdu-a, r09-pdu-a, ...)" in over[2].message
    # The page prints the warnings validation handed to the cluster it returns, which it
    # returns for a valid spec only: the site's budget raised over the new racks.
    data["facility"]["power_budget_kw"] = 1000
    cluster, found = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in found]
    facility = derive_facility(cluster)
    assert facility is not None
    page = [w for w in facility.warnings if w.code == "racks.phase-over-limit-on-failover"]
    assert [w.message for w in page] == [p.message for p in over]
