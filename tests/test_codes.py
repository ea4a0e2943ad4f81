"""Every registered code is produced somewhere a test sees it.

Most codes appear in tests/invalid/*.expected. The rest are produced here, each
by one small change to a reference spec, or are listed in NOT_PRODUCED with the
reason no spec can produce them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from clustergen.base.codes import CODES
from clustergen.base.errors import SpecInvalid
from clustergen.spec.load import LoadedSpec, parse_spec
from clustergen.validate import validate

from support.paths import INVALID, WARNING_CASES
from support.specs import example_data

Data = dict[str, Any]


def _set(path: str, value: Any) -> Callable[[Data], None]:
    """A change that sets the value at a dotted path ('nodes.0.roles')."""

    def change(data: Data) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node: Any = data
        for part in parents:
            node = node[part]
        node[last] = value

    return change


def _delete(section: str) -> Callable[[Data], None]:
    return lambda data: data.pop(section) and None


def _both(*changes: Callable[[Data], None]) -> Callable[[Data], None]:
    def change(data: Data) -> None:
        for one in changes:
            one(data)

    return change


def _copy_profile(name: str) -> Callable[[Data], None]:
    return lambda data: data["hardware"].__setitem__(
        name, copy.deepcopy(data["hardware"]["head-server"])
    )


# Codes no invalid case shows, each with the change to the reference spec that produces it.
PRODUCED_BY_CHANGE: dict[str, Callable[[Data], None]] = {
    "software.slurm-newer-than-key-lists": _set("software.slurm", "26.11.0"),
    "shape.missing-key": _delete("slurm"),
    "software.rdma-unpinned": _set("software.os", "ubuntu-26.04"),
    "network.subnet-manager-keys": _set("network.fabric.subnet_manager", {"kind": "opensm"}),
    "network.subnet-manager-node": _set(
        "network.fabric.subnet_manager", {"kind": "opensm", "nodes": ["login99", "gpu01"]}
    ),
    "software.rdma-repository-unknown": _set(
        "software.rdma", {"stack": "doca-ofed", "version": "2.9.1", "repository": "doca"}
    ),
    "monitoring.node-exporter-version": _set("monitoring", {"node_exporter": {}}),
    "monitoring.dcgm-exporter-version": _both(
        _set("software.dcgm", "4.9.9"), _set("monitoring", {"dcgm_exporter": {}})
    ),
    "monitoring.slurm-exporter-version": _set("monitoring", {"slurm": {}}),
    "monitoring.slurm-metrics-release": _set("monitoring", {"slurm": {"kind": "openmetrics"}}),
    "monitoring.slurm-metrics-private": _both(
        _set("software.slurm", "25.11.2"), _set("monitoring", {"slurm": {"kind": "openmetrics"}})
    ),
    "monitoring.slurm-metrics-unauthenticated": _both(
        _set("software.slurm", "26.05.1"), _set("monitoring", {"slurm": {"kind": "openmetrics"}})
    ),
    "ansible.pull-unsigned-allowed": _both(
        _set("software.os", "debian-13"),
        _set("ansible", {"pull": {"repository": "https://g.example.org/s.git", "unsigned": True}}),
    ),
    "ansible.pull-core-untested": _both(
        _set("software.os", "ubuntu-24.04"),
        _set("ansible", {"pull": {"repository": "https://git.example.org/site.git"}}),
    ),
    "shape.null-value": _set("cluster.domain", None),
    "shape.wrong-length": _set("nodes", []),
    "syntax.conf-boolean": _set("slurm.options", {"SlurmdTimeout": True}),
    "syntax.hostname": _set("slurm.accounting.host", "bad..host"),
    "syntax.identifier": _set("cluster.extra_roles", ["Bad Role"]),
    "syntax.size": _set("storage.lustre.layouts.0.stripe_size", "1MB"),
    "hardware.redundant-psus": _set("hardware.hgx-h100.power.redundant_psus", 6),
    "hardware.numa-uneven": _set("hardware.hgx-h100.cpu.numa_per_socket", 3),
    "nodes.duplicate-role": _set("nodes.0.roles", ["compute", "compute"]),
    "network.duplicate-switch": _set("network.fabric.switches.1.name", "ib-leaf01"),
    "network.gateway-not-host": _set("network.management.gateway", "10.0.1.255"),
    "network.roce-on-infiniband": _set("network.fabric.roce", {}),
    "network.switch-own-child": _set("network.fabric.switches.2.switches", "ib-spine01"),
    "packages.cudnn8-cuda-suffix": _set("software.cudnn", "8.9.7.29"),
    "packages.group-name-clash": _copy_profile("head_server"),
    "packages.zfs-version-missing": _set("storage.lustre.osts.0.backend", "zfs"),
    "racks.device-needs-size": _set("racks.0.devices.2", {"u": 42, "name": "ib-leaf01"}),
    "racks.device-node-or-name": _set("racks.0.devices.0", {"u": 3}),
    "racks.node-with-size": _set("racks.0.devices.0.height_u", 6),
    "facility.rack-on-two-cdus": _set(
        "facility.cdus",
        [{"name": f"cdu{n}", "capacity_kw": 100, "racks": "r01"} for n in (1, 2)],
    ),
    "slurm.accounting-host-without-role": _set("nodes.1.roles", ["slurm_controller", "login"]),
    "slurm.controller-listed-twice": _set("slurm.controllers", ["slurm-head", "slurm-head"]),
    "slurm.controller-not-listed": _set("nodes.2.roles", ["lustre_mgs", "slurm_controller"]),
    "slurm.def-mem-conflict": _both(
        _set("slurm.partitions.0.def_mem_per_gpu_mib", 1000),
        _set("slurm.options", {"DefMemPerCPU": 100}),
    ),
    "slurm.default-time-exceeds-max": _set("slurm.partitions.1.default_time", "02:00:00"),
    "slurm.no-compute-nodes": _set("nodes.0.roles", ["login"]),
    "slurm.node-in-no-partition": _both(
        _set("slurm.partitions.0.nodes", "gpu[01-07]"),
    ),
    "slurm.option-defunct": _set("slurm.options", {"SchedulerAuth": "x"}),
    "slurm.unkillable-below-message-timeout": _set(
        "slurm.options", {"MessageTimeout": 30, "UnkillableStepTimeout": 60}
    ),
    "slurm.priority-needs-multifactor": _set("slurm.priority.type", "basic"),
    "software.cuda-not-in-driver-table": _set("software.cuda", "12.99.1"),
    "software.slurm-too-old": _set("software.slurm", "20.11.9"),
    "storage.unknown-role": _set("storage.lustre.mount.clients", ["computer"]),
    "storage.nfs-export-trusts-clients": _set(
        "storage.nfs",
        [
            {
                "server": "slurm-head",
                "export": "/srv/home",
                "path": "/home",
                "roles": ["login"],
                "export_options": ["rw", "no_root_squash"],
            }
        ],
    ),
    "ignore.unknown-code": _set("ignore", ["hardware.unused-profil"]),
}

# Codes no spec can produce today, and why they are registered anyway.
NOT_PRODUCED: dict[str, str] = {
    "shape.invalid": "the fallback for a pydantic error clustergen has no wording for; "
    "every error a spec can raise today has one",
    "packages.malformed-version": "software.packages values are checked by their syntax "
    "(syntax.invalid) first; the check guards the catalog against a model change",
}


def _codes_in_expected_files() -> set[str]:
    found = set()
    for expected in [*INVALID.glob("*.expected"), *WARNING_CASES.glob("*.expected")]:
        found |= set(re.findall(r" \[([a-z0-9.-]+)\]$", expected.read_text(), re.M))
    return found


def _codes_for(data: Data) -> set[str]:
    problems = validate(LoadedSpec(file="spec.yaml", name="spec.yaml", data=data))[1]
    return {p.code.name for p in problems}


def test_every_code_is_produced_by_a_case_a_change_or_is_listed() -> None:
    in_cases = _codes_in_expected_files()
    assert in_cases <= set(CODES), "an .expected file names an unregistered code"
    # audit.* codes come from nodes' reports, not specs: tests/test_audit.py proves each.
    audit = {name for name in CODES if name.startswith("audit.")}
    unaccounted = (
        set(CODES)
        - in_cases
        - set(PRODUCED_BY_CHANGE)
        - set(NOT_PRODUCED)
        - {"yaml.too-deep"}
        - audit
    )
    assert not unaccounted, f"no test produces these codes: {sorted(unaccounted)}"
    stale = (set(PRODUCED_BY_CHANGE) | set(NOT_PRODUCED)) & in_cases
    assert not stale, f"now shown by an invalid case; remove them from this file: {stale}"


def test_the_reference_spec_has_only_its_true_warnings() -> None:
    # HGX H100 with 3 + 3 PSUs of 3000 W cannot run at 10.2 kW on one feed, and ib-leaf02
    # takes 43 HCAs and an uplink, more than the 40 ports of an HDR switch. preempt/qos
    # names no QOS (issue 7) and the GPU profile has no topology table (issue 9). Each
    # leaf has 32 or 43 HCA ports and one uplink, 32:1 and 43:1 under the GPU partition's
    # default max_blocking 1 (issue 20). Rack r01's seven PSUs per feed (3 + 3 GPU,
    # 1 switch) put 8520 VA on L1 when a feed is lost: 35.6 A on a 40 A pole, within its
    # rating but above the 80% continuous limit (issue 20). SchedMD's support for Slurm
    # 23.11 ended in May 2025 (tests run on 2026-11-25: conftest.py). Its Slurm is
    # SchedMD's by default and no repository is named that serves it (issue 20). Its
    # InfiniBand fabric does not say what runs the subnet manager (issue 25). Its health
    # check pins no NHC, so no HealthCheckProgram runs between jobs, and it names no
    # nccl-tests release, so nothing builds the all-reduce jobs' binaries (issue 25), and
    # its slurm.mpi is none, so they could not start their ranks either (issue 40). Its
    # Lustre servers run Ubuntu, where Lustre builds no DKMS package of the server modules,
    # and it names no kernel of a site build of them (issue 39).
    assert _codes_for(example_data()) == {
        "storage.lustre-server-modules-unpinned",
        "nccl.tests-not-built",
        "nccl.tests-without-pmix",
        "slurm.health-check-without-nhc",
        "network.subnet-manager-unset",
        "software.slurm-end-of-support",
        "software.slurm-schedmd-without-repository",
        "hardware.feed-loss-underpowers",
        "network.leaf-oversubscribed",
        "racks.phase-over-limit-on-failover",
        "network.switch-ports-assumed-exceeded",
        "slurm.preempt-qos-without-qos",
        "hardware.topology-missing",
    }


@pytest.mark.parametrize("code", sorted(PRODUCED_BY_CHANGE))
def test_change_produces_code(code: str) -> None:
    data = example_data()
    PRODUCED_BY_CHANGE[code](data)
    assert code in _codes_for(data)


def test_yaml_nested_too_deeply() -> None:
    with pytest.raises(SpecInvalid) as caught:
        parse_spec("[" * 100_000, file="deep.yaml", name="deep.yaml")
    assert [p.code.name for p in caught.value.problems] == ["yaml.too-deep"]
