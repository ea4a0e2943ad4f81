"""Multi-node NVLink domains (issue 23): one per rack by default, or listed (or dealt out by
a pattern); each tray in exactly one."""

from __future__ import annotations

from typing import Any

import yaml

from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate_cluster

from support.paths import INVALID

Data = dict[str, Any]


def _spec() -> Data:
    # Two racks of 4 NVLink trays (the domain size the profile gives), as in the invalid cases.
    data: Data = yaml.safe_load((INVALID / "nvlink-domain-too-big.yaml").read_text())
    del data["network"]["nvlink_domains"]
    return data


def _domains(data: Data) -> list[tuple[str, tuple[str, ...], int | None]]:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None
    assert not [p for p in problems if p.code.severity == "error"], [p.format() for p in problems]
    return [(d.name, d.nodes, d.index) for d in cluster.nvlink_domains]


def test_each_rack_is_a_domain_of_its_trays_by_default() -> None:
    # The head node in rack nvl1 is no tray: it is left out.
    assert _domains(_spec()) == [
        ("nvl1", ("gb1", "gb2", "gb3", "gb4"), None),
        ("nvl2", ("gb5", "gb6", "gb7", "gb8"), None),
    ]


def test_a_pattern_deals_the_trays_out_in_order() -> None:
    data = _spec()
    data["network"]["nvlink_domains"] = [{"names": "dom[1-2]", "nodes": "gb[1-8]"}]
    assert _domains(data) == [
        ("dom1", ("gb1", "gb2", "gb3", "gb4"), 0),
        ("dom2", ("gb5", "gb6", "gb7", "gb8"), 1),
    ]


def test_without_trays_there_are_no_domains() -> None:
    data = _spec()
    del data["hardware"]["tray"]["gpu"]["nvlink_domain"]
    assert _domains(data) == []
