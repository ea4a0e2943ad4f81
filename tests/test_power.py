"""Power per pole (issue 20): every phase of a 3-phase PDU against 80% of its own pole,
normal and on failover; PSUs on phases as the outlets are wired; the phase-imbalance
warning names the phase that is off, and stays quiet below its floor."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ruamel.yaml import YAML

from clustergen.base.errors import LocatedProblem
from clustergen.outputs.facility.derive import derive_facility
from clustergen.resolve import ResolvedCluster
from clustergen.spec.load import LoadedSpec
from clustergen.validate import validate, validate_cluster

from support.paths import EXAMPLES, WARNING_CASES

Data = dict[str, Any]


def _load(path: str) -> Data:
    data: Data = YAML(typ="safe").load(path)
    return data


def _reference() -> Data:
    return _load((EXAMPLES / "ml-training-8node.yaml").read_text())


def _imbalance_case() -> Data:
    return _load((WARNING_CASES / "phase-imbalance.yaml").read_text())


def _problems(data: Data) -> list[LocatedProblem]:
    return validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]


def _cluster(data: Data) -> ResolvedCluster:
    cluster, problems = validate_cluster(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))
    assert cluster is not None, [p.format() for p in problems]
    return cluster


def test_reference_r01_phase_over_its_pole_on_failover_is_a_warning() -> None:
    # r01: 2 HGX (3 PSUs per feed, 3400 VA each on failover) and a 1720 W switch: L1 takes
    # a GPU PSU of each node and the switch's, 8520 VA when the other feed is lost, on a
    # pole of 415 / 1.732 x 40 = 9584 VA whose 80% is 7667 VA; the feed (22120 of 23002 VA)
    # is within its own limit.
    found = [p for p in _problems(_reference()) if p.code.name.startswith("racks.phase-over")]
    assert [(p.code.name, p.severity, str(p.path)) for p in found] == [
        ("racks.phase-over-limit-on-failover", "warning", "('racks', 0, 'pdus', 0, 'amps')"),
        ("racks.phase-over-limit-on-failover", "warning", "('racks', 0, 'pdus', 1, 'amps')"),
    ]
    assert "phase L1 of PDU 'r01-pdu-a'" in found[0].message
    assert "carries 8.52 kVA with the other feed lost: 35.6 A on its 40 A pole" in found[0].message
    assert "89% of its rating" in found[0].message


def test_sheet_gives_each_phase_its_headroom() -> None:
    cluster = _cluster(_reference())
    load = cluster.rack_plans[0].loads[0]
    assert load.headroom_va == pytest.approx(882, abs=1)  # the feed: within its limit
    assert load.phase_headroom_va == pytest.approx(7667 - 8520, abs=1)  # L1: over
    facility = derive_facility(cluster)
    assert facility is not None
    r01a = facility.feed_rows[0]
    assert (r01a.headroom, r01a.phase_headroom, r01a.over) == ("882", "-853", True)
    # A large site's page keeps the most loaded feeds: r01's L1 at 111% of its limit ranks
    # it above a feed at 96% of its own.
    assert r01a.worst_share == pytest.approx(8520 / 7667, abs=0.001)
    assert facility.phase_rows[0] == (
        "r01",
        "r01-pdu-a",
        "L1",
        "9584",
        "7667",
        "4260",
        "8520",
        "-853",
    )


def test_phase_over_its_rating_on_failover_is_an_error() -> None:
    # Seven one-PSU-per-feed devices plugged onto L1, L2, L3, L1, L2, L3, L1: L1 carries
    # 4000 + 4000 + 2000 = 10000 VA on failover, above its pole's full 9584 VA (the breaker
    # trips and the rack loses its second feed too), while the feed carries 12000 VA.
    data = _reference()
    watts = [4000, 500, 500, 4000, 500, 500, 2000]
    data["racks"].append(
        {
            "name": "r06",
            "height_u": 42,
            "pdus": [
                {"name": "r06-pdu-a", "feed": "A", "volts": 415, "phases": 3, "amps": 40},
                {"name": "r06-pdu-b", "feed": "B", "volts": 415, "phases": 3, "amps": 40},
            ],
            "devices": [
                {"u": 1 + 2 * k, "name": f"shelf{k}", "height_u": 2, "max_watts": w}
                for k, w in enumerate(watts)
            ],
        }
    )
    problems = [p for p in _problems(data) if p.path[:2] == ("racks", 5)]
    assert [(p.code.name, p.severity) for p in problems if "amps" in p.path] == [
        ("racks.phase-over-limit", "error"),
        ("racks.phase-over-limit", "error"),
    ]
    assert (
        "carries 10.00 kVA with the other feed lost: 41.7 A on its 40 A pole, above its "
        "full rating (9.58 kVA): it trips" in problems[0].message
    )


def test_phase_over_its_pole_in_normal_operation_is_an_error() -> None:
    # One feed (B removed): L1 carries gpu01 PSU1 + PSU4, gpu02 PSU1 + PSU4 (1700 VA each)
    # and the switch's PSUs: 8520 VA, above 7667 VA, while the feed's 22120 VA is within
    # its 23002 VA limit.
    data = _reference()
    data["racks"][0]["pdus"] = data["racks"][0]["pdus"][:1]
    problems = [p for p in _problems(data) if p.path[:2] == ("racks", 0)]
    over = [p for p in problems if p.code.name == "racks.phase-over-limit"]
    assert len(over) == 1 and over[0].severity == "error"
    assert "carries 8.52 kVA in normal operation" in over[0].message


def test_a_phase_that_is_one_bank_is_judged_as_that_bank_only() -> None:
    # With banks: 3 each bank is a whole phase behind a breaker of the PDU's amps: r01's
    # bank 1 (L1) is reported as the bank (an error, as banks always were), not twice.
    data = _reference()
    for pdu in data["racks"][0]["pdus"]:
        pdu["banks"] = 3
    problems = [p for p in _problems(data) if p.path[:2] == ("racks", 0)]
    assert sorted({p.code.name for p in problems}) == ["racks.bank-over-limit"]


def test_psus_alternate_across_phases_in_plug_order() -> None:
    # r05 feed A in plug order: slurm-head, mds01, oss01-04, ib-leaf02, ib-spine01, one
    # PSU each on L1, L2, L3, L1, ... as on an alternating-phase PDU.
    cluster = _cluster(_reference())
    load = cluster.rack_plans[4].loads[0]
    assert [(o.device, o.phase) for o in load.outlets] == [
        ("slurm-head", "L1"),
        ("mds01", "L2"),
        ("oss01", "L3"),
        ("oss02", "L1"),
        ("oss03", "L2"),
        ("oss04", "L3"),
        ("ib-leaf02", "L1"),
        ("ib-spine01", "L2"),
    ]


def test_a_device_added_at_the_end_of_a_rack_moves_no_plugged_psu() -> None:
    data = _reference()
    before = _cluster(copy.deepcopy(data)).rack_plans[4].loads[0].outlets
    data["racks"][4]["devices"].append(
        {"u": 30, "name": "storage-shelf", "height_u": 2, "max_watts": 3000}
    )
    after = _cluster(data).rack_plans[4].loads[0].outlets
    assert after[: len(before)] == before
    assert after[-1].device == "storage-shelf" and after[-1].phase == "L3"


def test_imbalance_names_the_phase_furthest_from_the_mean() -> None:
    # rack2's devices plug onto L1, L2, L3, L1, L2: L1 1.00, L2 1.20, L3 0.10 kVA. L2 is
    # the heaviest but L3 is furthest from the mean (0.77 kVA).
    problems = _problems(_imbalance_case())
    (first, _second) = [p for p in problems if p.code.name == "racks.phase-imbalance"]
    assert "L3 is 0.67 kVA below the mean 0.77 kVA and carries spine1 PSU1 0.10 kVA" in (
        first.message
    )
    assert "L2 carries" not in first.message


def test_imbalance_below_the_floor_is_not_reported() -> None:
    # A service rack: the head node (800 W) and two 500 W switches, one PSU each per feed,
    # on a 16 A PDU: L1 0.40, L2 0.25, L3 0.25 kVA is 33% off the mean, but 0.10 kVA off it
    # is under a tenth of a pole's 80% limit (3.07 kVA).
    data = _imbalance_case()
    data["racks"][1]["devices"] = [
        {"u": 1, "node": "head1"},
        {"u": 42, "name": "leaf1", "height_u": 1, "max_watts": 500},
        {"u": 41, "name": "spine1", "height_u": 1, "max_watts": 500},
    ]
    assert not [p for p in _problems(data) if p.code.name == "racks.phase-imbalance"]
