"""The JSON Schema carries every syntax rule: what editors and check-jsonschema see.

`clustergen validate` and the schema share one definition per constrained string
(clustergen/model/syntax.py), so a spec the schema rejects is rejected by the
validator too. These tests check the other direction with the real
check-jsonschema CLI: every invalid case whose mistake is syntax alone is rejected
by the schema, and the cases a schema cannot catch are listed here, each with why.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import regress

from clustergen.load import load_spec
from clustergen.render import render_all
from clustergen.schema import schema_document
from clustergen.validate import validate_cluster

from support.ci import tool
from support.paths import INVALID, REFERENCE_SPECS, SCHEMA

CASES = sorted(INVALID.glob("*.yaml"))

# Invalid cases check-jsonschema is not run on, with the reason.
NOT_FOR_CHECK_JSONSCHEMA: dict[str, str] = {
    "74-alias-bomb": "check-jsonschema follows every alias (9^9 nodes) and does not finish in "
    "minutes; clustergen refuses the file at the alias that crosses its allowance",
}

_CROSS_REFERENCE = "cross-reference: a name must exist (or be unique) elsewhere in the spec"
_ADDRESSES = "address arithmetic across node groups and networks"
_COMPARISON = "compares two values; JSON Schema cannot relate one number to another"
_CATALOG = "catalog knowledge: which CUDA, driver and GPU releases go together"
_SLURM_VERSION = (
    "slurm.conf keys depend on the pinned software.slurm, and Slurm reads them in any case"
)
_TOPOLOGY = "a property of the whole switch graph"
_LUSTRE_BACKEND = (
    "depends on storage.lustre.backend, checked in checks/lustre.py with a clearer message"
)
_SYSTEM_FOLDER = (
    "which folder the slurm role chowns depends on the slurm.conf key (a log file's folder) "
    "and on slurm.options, an open mapping; judged with '..' resolved (catalog/folders.py)"
)
_POWER_PLAN = "sums over the rack's devices, PSUs and feeds (clustergen/facility.py)"
_LUSTRE_TUNING = "the parameter table (catalog/lustre.py) with ranges and places per key"
_PINS = "package overrides are compared with the versions clustergen derives"
_NCCL_TABLE = (
    "values are judged per variable by catalog/nccl_vars.py; the schema leaves nccl.env open "
    "so that a name NCCL adds later only warns"
)

# Each invalid case the schema cannot reject, with the reason. A case the schema
# starts to reject must leave this list (the test below says so).
SCHEMA_CANNOT_CATCH: dict[str, str] = {
    "13-duplicate-node-names": _CROSS_REFERENCE,
    "14-unknown-hardware-profile": _CROSS_REFERENCE,
    "15-unknown-role": "roles may be declared in cluster.extra_roles; " + _CROSS_REFERENCE,
    "16-address-outside-cidr": _ADDRESSES,
    "17-address-range-past-cidr": _ADDRESSES,
    "18-address-used-twice": _ADDRESSES,
    "19-address-is-gateway": _ADDRESSES,
    "20-bmc-ip-without-bmc-network": "a node key that needs another section; " + _ADDRESSES,
    "21-reserved-memory-not-below-installed": _COMPARISON,
    "22-compute-profile-without-reserved-memory": "depends on which nodes use the profile",
    "23-unknown-gpu-model": "the GPU catalog, with a did-you-mean; " + _CATALOG,
    "24-cuda-too-old-for-b200": _CATALOG,
    "25-v100-with-cuda-13": _CATALOG,
    "26-driver-below-cuda-minimum": _CATALOG,
    "27-no-cuda-12-7": _CATALOG,
    "28-fabric-manager-missing": "depends on the hardware profiles; " + _CATALOG,
    "29-fabric-manager-differs-from-driver": _COMPARISON,
    "30-fabric-manager-without-nvswitch": "depends on the hardware profiles",
    "34-controller-not-a-node": _CROSS_REFERENCE,
    "35-controller-without-role": _CROSS_REFERENCE,
    "36-duplicate-partition-names": _CROSS_REFERENCE,
    "37-two-default-partitions": "counts across list items",
    "39-partition-non-compute-node": _CROSS_REFERENCE,
    "40-partition-unknown-node": _CROSS_REFERENCE,
    "41-options-folklore-key": _SLURM_VERSION,
    "42-options-key-from-newer-slurm": _SLURM_VERSION,
    "43-options-nodename": _SLURM_VERSION,
    "44-options-slurmctldhost": _SLURM_VERSION,
    "45-options-controlmachine": _SLURM_VERSION,
    "87-options-password": "the schema leaves slurm.options keys open (they depend on the "
    "pinned Slurm); checks/slurm.py refuses the password keys, naming the vault variable",
    "48-preempt-qos-without-accounting": "a setting that needs another section",
    "49-compute-node-under-no-leaf": _TOPOLOGY,
    "50-node-under-two-leaves": _TOPOLOGY,
    "51-switch-cycle": _TOPOLOGY,
    "52-unknown-child-switch": _CROSS_REFERENCE,
    "53-two-switch-trees": _TOPOLOGY,
    "54-node-in-two-rack-positions": _CROSS_REFERENCE,
    "55-unknown-node-in-rack": _CROSS_REFERENCE,
    "56-several-problems-at-once": "its problems are catalog and cross-reference ones",
    "57-storage-unknown-node": _CROSS_REFERENCE,
    "lustre-22-failover-unknown-node": _CROSS_REFERENCE,
    "lustre-23-mount-unit-name": "the length of the path once systemd-escaped ('-' is 4 "
    "characters there)",
    "58-switch-unknown-node": _CROSS_REFERENCE,
    "59-accounting-host-unknown": _CROSS_REFERENCE,
    "62-package-nccl-wrong-cuda-suffix": _PINS,
    "90-slurm-not-distribution-version": "catalog knowledge: the Slurm each distribution "
    "ships (catalog/packages.py)",
    "91-slurm-schedmd-apt-too-old": "compares software.slurm with the first release of "
    "SchedMD's Debian packaging, on apt only",
    "95-slurm-repository-missing": "slurm_packages: schedmd needs slurm_repository; a "
    "conditional requirement the schema leaves to clustergen, as the default packaging "
    "depends on software.os and software.slurm",
    "96-slurm-repository-unknown": _CROSS_REFERENCE,
    "97-slurm-repository-not-schedmd": "the default packaging depends on software.os and "
    "software.slurm (catalog/packages.py)",
    "105-state-save-system-folder": _SYSTEM_FOLDER,
    "106-log-file-in-system-folder": _SYSTEM_FOLDER,
    "107-spool-dir-system-folder": _SYSTEM_FOLDER,
    "63-package-unknown-name": "package names depend on software.os; " + _PINS,
    "92-gpu-defaults-exceed-node": "multiplies a partition's per-GPU defaults by the GPUs of "
    "the hardware profiles of its nodes",
    "64-package-version-disagrees": _PINS,
    "lustre-01-duplicate-index": "uniqueness of a field across list items",
    "lustre-02-failover-lacks-role": _CROSS_REFERENCE,
    "lustre-03-nid-network": _CROSS_REFERENCE,
    "lustre-04-ldiskfs-dataset": _LUSTRE_BACKEND,
    "lustre-05-kernel-device-name": _LUSTRE_BACKEND,
    "lustre-06-zfs-device-path": _LUSTRE_BACKEND,
    "lustre-07-zpool-on-ldiskfs": _LUSTRE_BACKEND,
    "lustre-08-layout-outside-mount": "a path compared with the mount point; " + _COMPARISON,
    "lustre-09-stripe-count": "counts the OSTs; " + _COMPARISON,
    "lustre-10-stripe-align": "arithmetic on a size with units",
    "lustre-11-component-order": _COMPARISON,
    "lustre-12-last-component": "a property of the last list item",
    "lustre-13-dom-placement": _COMPARISON,
    "lustre-14-unknown-pool": _CROSS_REFERENCE,
    "lustre-15-pool-ost": _CROSS_REFERENCE,
    "lustre-16-unknown-profile": _CROSS_REFERENCE,
    "lustre-17-tuning-range": _LUSTRE_TUNING,
    "lustre-18-tuning-place": _LUSTRE_TUNING,
    "lustre-19-pages-per-rpc": _COMPARISON,
    "lustre-21-quota-project": "a path compared with the mount point, per quota type",
    "77-accounting-dropped": "settings and a role that need another section",
    "79-system-reserve-all-cores": _COMPARISON,
    "80-qos-without-accounting": "a setting that needs another section",
    "81-duplicate-qos": _CROSS_REFERENCE,
    "82-preempt-unknown-qos": _CROSS_REFERENCE,
    "83-qos-preempts-itself": _CROSS_REFERENCE,
    "84-enforce-without-qos": "a slurm.options value judged against other settings",
    "85-ha-controllers-local-state": "counts the hosts of hostlist expressions",
    "86-billing-without-accounting": "a setting that needs another section",
    "nccl-01-topology-gpu-index-twice": "counts across list items against gpu.count",
    "nccl-02-topology-cores-beyond-cpus": _COMPARISON,
    "nccl-03-topology-numa-beyond-sockets": _COMPARISON,
    "nccl-04-topology-unknown-hca": _CROSS_REFERENCE,
    "nccl-05-topology-hcas-differ-from-fabric-hcas": _CROSS_REFERENCE,
    "nccl-06-nccl-timeout-out-of-range": _NCCL_TABLE,
    "nccl-07-nccl-hca-list-bad-prefix": _NCCL_TABLE,
    "nccl-08-nccl-unknown-hca": _CROSS_REFERENCE,
    "nccl-09-nccl-not-an-nccl-name": _NCCL_TABLE,
    "nccl-10-nccl-debug-enum": _NCCL_TABLE,
    "nccl-11-roce-without-traffic-class": "a setting that depends on the fabric type",
    "pattern-01-nodes-exceed-racks": "counts a hostlist's hosts against racks x units",
    "facility-01-switch-ports-exceeded": "counts the HCAs of a leaf's nodes; " + _COMPARISON,
    "facility-02-device-above-rack-top": "unit plus the node profile's height; " + _COMPARISON,
    "facility-03-two-devices-in-one-unit": "overlap of units across list items",
    "facility-04-node-not-racked": _CROSS_REFERENCE,
    "facility-05-unracked-unknown-node": _CROSS_REFERENCE,
    "facility-06-unracked-node-in-rack": _CROSS_REFERENCE,
    "facility-07-psus-below-max-watts": "arithmetic over PSU count and rating; " + _COMPARISON,
    "facility-08-max-watts-below-gpus": "the GPUs' board power; " + _CATALOG,
    "facility-09-typical-above-max": _COMPARISON,
    "facility-10-psu-split-not-psu-count": "a sum of a mapping's values; " + _COMPARISON,
    "facility-11-psu-on-missing-feed": "the node's feeds depend on its rack's PDUs",
    "facility-12-single-feed-over-limit": _POWER_PLAN,
    "facility-13-ab-feed-cannot-carry-rack-alone": _POWER_PLAN,
    "facility-14-bank-over-limit": _POWER_PLAN,
    "facility-15-bank-amps-without-banks": "a key that needs another key; " + _COMPARISON,
    "facility-16-pdu-outlets-exceeded": _POWER_PLAN,
    "facility-17-two-pdus-on-one-feed": "uniqueness of a field across list items",
    "facility-18-racked-node-without-power": _CROSS_REFERENCE,
    "facility-19-rack-weight-exceeded": _POWER_PLAN,
    "facility-20-rack-cooling-exceeded": _POWER_PLAN,
    "facility-21-site-over-power-budget": _POWER_PLAN,
    "facility-22-site-cooling-exceeded": _POWER_PLAN,
    "facility-23-phase-over-limit": _POWER_PLAN,
}


def _check_jsonschema(*files: Path) -> dict[str, object]:
    """check-jsonschema's JSON report for `files` against the committed schema."""
    exe = tool("check-jsonschema")
    assert exe, "check-jsonschema is a test dependency: pip install -e '.[test]'"
    result = subprocess.run(
        [exe, "--schemafile", str(SCHEMA), "--output-format", "json", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def _rejected(report: dict[str, object]) -> set[str]:
    entries = [*report.get("errors", []), *report.get("parse_errors", [])]  # type: ignore[misc]
    return {Path(entry["filename"]).stem for entry in entries}


def test_check_jsonschema_rejects_every_syntax_only_case() -> None:
    cases = [case for case in CASES if case.stem not in NOT_FOR_CHECK_JSONSCHEMA]
    rejected = _rejected(_check_jsonschema(*cases))
    names = {case.stem for case in cases}
    missed = sorted(names - rejected - set(SCHEMA_CANNOT_CATCH))
    assert not missed, (
        f"check-jsonschema accepts {missed}, which clustergen rejects on syntax; "
        "carry the rule in the schema (model/syntax.py) or, if no schema can, list the "
        "case in SCHEMA_CANNOT_CATCH with the reason"
    )
    caught = sorted(rejected & set(SCHEMA_CANNOT_CATCH))
    assert not caught, f"the schema now rejects {caught}; remove them from SCHEMA_CANNOT_CATCH"
    assert not set(SCHEMA_CANNOT_CATCH) - names, "SCHEMA_CANNOT_CATCH names a missing case"
    assert set(NOT_FOR_CHECK_JSONSCHEMA) <= {case.stem for case in CASES}


def test_check_jsonschema_accepts_the_reference_specs() -> None:
    report = _check_jsonschema(*REFERENCE_SPECS)
    assert report["status"] == "ok", json.dumps(report, indent=2)


def _patterns(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


# Strings on which Python's re and ECMA-262 are known to differ when a pattern is
# careless: Unicode digits, a trailing newline, non-ASCII spaces, and plain cases.
_PROBES = [
    "",
    "gpu01",
    "gpu01\n",
    "gpu[01-04]",
    "gpu[01-",
    "gpu[1-2]-ib",
    "gpu[01-04],login1",
    "10.0.1.11",
    "10.0.1.300",
    "010.0.1.1",
    "10.0.1.0/24",
    "10.0.1.0/31",
    "12.4.1",
    "12.4",
    "١٢.٤",
    "2-00:00:00",
    "1-24:00:00",
    "01:00:00",
    "61:59",
    "UNLIMITED",
    "Infinite",
    "4MiB",
    "4 MiB",
    "4mib",
    "/mnt/lustre",
    "/mnt/lu stre",
    "/mnt/lu\u00a0stre",
    "/dev/disk/by-id/nvme-x",
    "https://example.org/repo",
    "o2ib0",
    "a#b",
    "a\rb",
    "NCCL_IB_HCA",
    "2.21.5-1+cuda12.4",
    "1:2.3~rc1",
    "Mini",
    "hpc.example.org",
    "-gpu",
    "a" * 64,
]


@pytest.mark.parametrize("pattern", sorted(set(_patterns(schema_document()))))
def test_python_and_ecma_regex_agree_on_every_schema_pattern(pattern: str) -> None:
    ecma = regress.Regex(pattern, "u")
    python = re.compile(pattern)
    differ = [
        probe
        for probe in _PROBES
        if (ecma.find(probe) is not None) != (python.fullmatch(probe) is not None)
    ]
    assert not differ, f"{pattern!r}: Python and ECMA-262 disagree on {differ}"


def test_a_whole_number_written_with_a_decimal_point_is_that_number(tmp_path: Path) -> None:
    """JSON Schema, and so every editor, reads 1024.0 as the integer 1024; clustergen
    agrees, and renders it as 1024."""
    spec = REFERENCE_SPECS[0]
    text = spec.read_text(encoding="utf-8")
    whole, count = re.subn(r"(memory_gib|rack_units): (\d+)\b(?!\.)", r"\1: \2.0", text)
    assert count, "the reference spec has no memory_gib or rack_units to rewrite"
    decimal = tmp_path / spec.name
    decimal.write_text(whole, encoding="utf-8")

    def rendered(path: Path) -> dict[str, str]:
        loaded = load_spec(str(path))
        cluster, problems = validate_cluster(loaded)
        assert cluster is not None, [p.message for p in problems]
        return {name: file.text for name, file in render_all(cluster).items()}

    assert rendered(decimal) == rendered(spec)
    assert _check_jsonschema(decimal)["status"] == "ok"
