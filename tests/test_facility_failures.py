"""The failure-domain report (facility/failure-domains.md): what is left after one leaf,
spine, rail or plane, PDU, site feed or rack is lost, each kind's worst case named; the
shortcuts that keep it cheap give what computing every case in full gives."""

from __future__ import annotations

from typing import Any

import pytest

from clustergen.dev.large_spec import compact_spec
from clustergen.outputs.facility import failures
from clustergen.outputs.facility.failures import Left, Loss, failure_report, failure_rows
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec, load_spec, parse_spec
from clustergen.validate import validate_cluster

from support.paths import EXAMPLES, REPO
from support.specs import example_data


def _cluster(data: dict[str, Any]) -> ResolvedCluster:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def _worst(cluster: ResolvedCluster) -> dict[str, tuple[str, int, int, float | None, int]]:
    report = failure_report(cluster)
    return {
        line.kind: (line.worst, line.left.nodes, line.left.gpus, line.left.share, line.underpowered)
        for line in report.lines
    }


def test_the_reference_spec_loses_what_its_one_spine_and_two_leaves_carry() -> None:
    cluster, _ = validate_cluster(load_spec(str(EXAMPLES / "ml-training-8node.yaml")))
    assert cluster is not None
    report = failure_report(cluster)
    assert (report.total_nodes, report.total_gpus) == (8, 64)
    assert report.intact == Left(8, 64, 1.0)
    assert _worst(cluster) == {
        # gpu[01-04] go with ib-leaf01 (the first of two alike), and its 1 of 2 uplinks.
        "one leaf": ("ib-leaf01", 4, 32, 0.5, 0),
        # Without the spine the two leaves are apart: the larger group is one leaf's 4.
        "one spine": ("ib-spine01", 4, 32, 0.0, 0),
        "one rail or plane": ("plane 1 (2 leaves, 1 spine)", 0, 0, 0.0, 0),
        # gpu01 and gpu02 keep 3 PSUs of 3000 W, below their 10200 W: underpowered.
        "one PDU": ("r01-pdu-a (rack r01)", 6, 48, 1.0, 2),
        "one feed in every rack": ("feed A in every rack", 0, 0, 1.0, 8),
        # r05 holds ib-leaf02 and the spine: gpu[05-08] are cut off, gpu[01-04] stay.
        "one rack": ("rack r05", 4, 32, 0.0, 0),
    }
    rows = failure_rows(report)
    assert rows[0][3:6] == ("8 of 8 (100%)", "64 of 64 (100%)", "100%")
    assert rows[4][6].startswith("2 nodes underpowered")


def test_a_rail_lost_takes_every_node_and_a_leaf_lost_takes_its_units_nodes() -> None:
    cluster, _ = validate_cluster(load_spec(str(REPO / "docs" / "fabric-example.yaml")))
    assert cluster is not None
    worst = _worst(cluster)
    # su1-leaf1 carries rail 1 of gpu[001-032]: those 32 nodes lose a rail; its 2 x 8
    # of the 32 x 16 = 512 leaf-spine cables go with it.
    assert worst["one leaf"] == ("su1-leaf1", 96, 768, 1 - 16 / 512, 0)
    # A spine of rail 1 takes 4 x 8 of the 512 leaf cables and 4 x 2 of the 128 core cables.
    assert worst["one spine"] == ("spine01", 128, 1024, 1 - 32 / 512, 0)
    assert worst["one core"] == ("core01", 128, 1024, 1 - 32 / 128, 0)
    rail = worst["one rail or plane"]
    assert rail[0] == "rail 1 (4 leaves, 2 spines)" and rail[1:3] == (0, 0)
    assert "one PDU" not in worst  # no racks


def _split_spec() -> dict[str, Any]:
    """Two spines joined only through one leaf: losing that leaf splits the fabric."""
    data = example_data()
    data["network"]["fabric"]["switches"] = [
        {"name": "leaf1", "nodes": "gpu[01-03]"},
        {"name": "leaf2", "nodes": "gpu[04-05]"},
        {"name": "leaf3", "nodes": "gpu[06-08],slurm-head,mds01,oss[01-04]"},
        {"name": "spine1", "switches": "leaf[1-2]"},
        {"name": "spine2", "switches": "leaf[2-3]"},
    ]
    return data


def test_a_leaf_that_joins_two_spines_splits_the_fabric_when_lost() -> None:
    cluster = _cluster(_split_spec())
    fabric = failures._Fabric(cluster)
    assert fabric.cut == {"leaf2", "spine1", "spine2"}
    left = fabric.left(Loss("leaf2", frozenset({"leaf2"}), frozenset()), {})
    assert (left.nodes, left.gpus) == (3, 24)  # gpu[01-03] apart from gpu[06-08]
    assert _worst(cluster)["one leaf"][:3] == ("leaf2", 3, 24)


@pytest.mark.parametrize("spec", ["split", "reference", "example"])
def test_the_shortcuts_give_what_computing_every_case_in_full_gives(spec: str) -> None:
    """Each single switch lost, with the connected sets computed again every time, as
    the report computes them only for an articulation point."""
    if spec == "split":
        cluster = _cluster(_split_spec())
    else:
        path = EXAMPLES / "ml-training-8node.yaml" if spec == "reference" else None
        path = path or REPO / "docs" / "fabric-example.yaml"
        found, _ = validate_cluster(load_spec(str(path)))
        assert found is not None
        cluster = found
    fabric = failures._Fabric(cluster)
    for name in fabric.names:
        lost = frozenset({name})
        quick = fabric.left(Loss(name, lost, frozenset({"gpu03"})), {})
        components = fabric.connected(lost)
        groups = fabric.group_totals(components, lost)
        key = fabric.unit_of.get("gpu03")
        if key is not None and lost.isdisjoint(key):
            group = groups[tuple(components[leaf] for leaf in key)]
            group[0] -= 1
            group[1] -= fabric.gpus["gpu03"]
        best = max(groups.values(), key=lambda totals: (totals[1], totals[0]), default=[0, 0])
        assert (quick.nodes, quick.gpus) == tuple(best), name


def test_at_scale_the_connected_sets_are_computed_again_only_for_cut_switches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loaded = parse_spec(compact_spec(1024), file="c.yaml", name="c.yaml")
    cluster, _ = validate_cluster(loaded)
    assert cluster is not None
    calls: list[int] = []
    connected = failures._Fabric.connected

    def counted(self: failures._Fabric, lost: frozenset[str]) -> dict[str, str]:
        calls.append(len(lost))
        return connected(self, lost)

    monkeypatch.setattr(failures._Fabric, "connected", counted)
    report = failure_report(cluster)
    cases = sum(line.cases for line in report.lines)
    # Leaves under one spine each make every spine and the core a cut switch: one
    # computation each, and one for the intact fabric and one per plane and site feed;
    # not one per leaf, PDU or rack.
    spines_and_core = sum(1 for row in cluster.switch_ports if row.down and not row.hcas)
    assert cases > 600
    assert len(calls) <= spines_and_core + 4, (len(calls), spines_and_core)


def test_without_a_fabric_only_power_and_racks_take_nodes() -> None:
    data = example_data()
    del data["network"]["fabric"], data["storage"]
    for group in data["nodes"]:
        group.pop("fabric_ip", None)
    report = failure_report(_cluster(data))
    assert [line.kind for line in report.lines] == [
        "one PDU",
        "one feed in every rack",
        "one rack",
    ]
    assert report.intact == Left(8, 64, None) and not report.fabric
    rack = report.lines[-1]
    assert (rack.worst, rack.left.nodes) == ("rack r01", 6)
    assert failure_rows(report)[0][5] == "no fabric"


def test_on_separate_planes_a_lost_spine_cuts_its_own_rail() -> None:
    """Two spines a rail and nothing above (tests/warnings/rails-not-joined.yaml): losing
    spine1 halves rail 1's leaf-spine cables, and a job across the rails runs at its
    slowest, so the share is that plane's 50%, not the 75% of all four spines' cables; the
    same fabric with every leaf up to every spine keeps 75%."""
    text = (REPO / "tests" / "warnings" / "rails-not-joined.yaml").read_text()
    separate = _worst(_cluster(parse_spec(text, "s.yaml", "s.yaml").data))
    assert separate["one spine"][3] == 0.5
    joined_text = text.replace("        spines_per_rail: 2\n", "")
    joined = _worst(_cluster(parse_spec(joined_text, "j.yaml", "j.yaml").data))
    assert joined["one spine"][3] == 0.75
