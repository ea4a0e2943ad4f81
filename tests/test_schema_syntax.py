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

from clustergen.render import render_all
from clustergen.spec.load import load_spec
from clustergen.spec.schema import schema_document
from clustergen.validate import validate_cluster

from support.ci import tool
from support.paths import INVALID, REFERENCE_SPECS, SCHEMA

CASES = sorted(INVALID.glob("*.yaml"))

# Invalid cases check-jsonschema is not run on, with the reason.
NOT_FOR_CHECK_JSONSCHEMA: dict[str, str] = {
    "alias-bomb": "check-jsonschema follows every alias (9^9 nodes) and does not finish in "
    "minutes; clustergen refuses the file at the alias that crosses its allowance",
}

_CROSS_REFERENCE = "cross-reference: a name must exist (or be unique) elsewhere in the spec"
_ADDRESSES = "address arithmetic across node groups and networks"
_INTERFACES = (
    "relates a node group's addresses to its hardware profile's interfaces and the networks"
)
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
_POWER_PLAN = "sums over the rack's devices, PSUs and feeds (clustergen/spec/physical_plan.py)"
_LUSTRE_TUNING = "the parameter table (catalog/lustre.py) with ranges and places per key"
_PINS = "package overrides are compared with the versions clustergen derives"
_NCCL_TABLE = (
    "values are judged per variable by catalog/nccl_vars.py; the schema leaves nccl.env open "
    "so that a name NCCL adds later only warns"
)

_WEAKENS = (
    "the schema leaves slurm.options keys open (they depend on the pinned Slurm); whether "
    "a value weakens security depends on the Slurm release and slurm.isolation"
)

# Each invalid case the schema cannot reject, with the reason. A case the schema
# starts to reject must leave this list (the test below says so).
SCHEMA_CANNOT_CATCH: dict[str, str] = {
    "configless-node-name-in-spool-dir": "slurm.options keys are open in the schema (they "
    "depend on the pinned Slurm), and %n matters only with slurm.configless, another key",
    "reboot-bound-below-one": "slurm.reboot.max_per_partition is checked by validation, "
    "so that a bound below 1 gets its own code (slurm.reboot-bound)",
    "reboot-gpu-node-outside-slurm": "which nodes have GPUs and which are Slurm compute "
    "nodes depends on hardware profiles and node roles together",
    "configless-topology-yaml-not-served": "whether Slurm gets topology.yaml depends on the "
    "partitions, the NVLink domains and the fabric together, and the patch release on a "
    "version string compared as numbers",
    "partition-option-modelled": "a partition's options key compared in any case with the "
    "keys written from the partition's own keys (Slurm reads keys in any case; a schema "
    "pattern has no case-insensitive flag)",
    "route-via-outside-network": "an address inside a CIDR given elsewhere in the section: "
    "a schema compares no two strings as networks",
    "option-duplicate": "two slurm.options keys equal in any case: a schema's property names "
    "are compared exactly",
    "pull-signer-key": "an OpenPGP key's fingerprint is a SHA-1 of its decoded packet, and "
    "one signer's keys are exclusive alternatives across fields: no schema computes either",
    "subnet-manager-plane": "the planes are the connected sets of the switch graph that the "
    "rail pattern expands to, and which nodes are cabled to each: no schema walks a graph",
    "link-layer": "an interface name's prefix judged against the type of the network that "
    "another section (network.fabric, network.storage) says it carries",
    "shared-interface-mtu": "two networks' mtu compared where a profile's interfaces name one "
    "netdev for both: a schema compares no values across sections",
    "storage-fabric-switches": "network.storage has network.fabric's shape (one model); only "
    "the storage fabric's switches are refused, by a check",
    "gpu-type-repeated": "GRES types compared across gpu and other_gpus, where a type left "
    "out is the catalog's for the model: a schema looks up no default",
    "nvlink-domain-named-twice": "names unique across list items: " + _CROSS_REFERENCE,
    "nvlink-domain-unknown-tray": _CROSS_REFERENCE,
    "nvlink-tray-in-two-domains": "a name in two domains' hostlists: hostlists are strings to "
    "a schema",
    "nvlink-domain-too-big": "a hostlist's length against a number in the hardware section",
    "nvlink-tray-without-domain": "which nodes are trays is in the hardware section, which "
    "domains list them in another",
    "nvlink-domain-lists-a-head-node": "a node's profile is in another section: "
    + _CROSS_REFERENCE,
    "block-sizes-not-doubling": "each size a power-of-two multiple of the list's first item: "
    "no schema relates the items of a list by arithmetic",
    "block-sizes-on-slurm-23-11": "a key against the Slurm release pinned in the software section",
    "nvlink-domain-smaller-than-the-first": "a domain's Slurm compute nodes against the first "
    "domain's, and the Slurm release in the software section",
    "rail-cabled-twice": "a node named in two leaves' hostlists of one rail: hostlists are "
    "strings to a schema",
    "rail-hca-uncabled": "which rails cable a node is known only from every leaf's hostlist",
    "rail-leaf-node-without-hca": "a node's HCA count is in its hardware profile, another section",
    "rail-plane-split": "whether switches are joined is a property of the whole graph",
    "rail-pattern-leaf-name-without-rail": "a template's placeholders against the pattern's "
    "counts: no schema compares a string's content with other keys",
    "rail-pattern-spines-per-rail": "a hostlist's length against a product of two keys",
    "sharp-on-a-switch-without-sharp": "the switch catalog's SHARP support per model, for "
    "every switch; " + _CATALOG,
    "duplicate-node-names": _CROSS_REFERENCE,
    "unknown-hardware-profile": _CROSS_REFERENCE,
    "unknown-role": "roles may be declared in cluster.extra_roles; " + _CROSS_REFERENCE,
    "address-outside-cidr": _ADDRESSES,
    "address-range-past-cidr": _ADDRESSES,
    "rail-subnets-past-fabric-cidr": _ADDRESSES,
    "storage-subnets-past-storage-cidr": _ADDRESSES,
    "fabric-ip-outside-rail-one-subnet": _ADDRESSES,
    "fabric-range-past-rail-one-subnet": _ADDRESSES,
    "storage-ip-reused": _ADDRESSES,
    "frontend-ip-is-gateway": _ADDRESSES,
    "storage-network-overlaps-fabric": _ADDRESSES,
    "rail-interfaces-fewer-than-hcas": _INTERFACES,
    "storage-interfaces-without-rail-prefix": _INTERFACES,
    "storage-interfaces-without-storage-network": _INTERFACES,
    "storage-interfaces-without-storage-ip": _INTERFACES,
    "storage-ip-without-storage-interface": _INTERFACES,
    "frontend-interface-without-frontend-network": _INTERFACES,
    "frontend-ip-without-frontend-interface": _INTERFACES,
    "address-used-twice": _ADDRESSES,
    "address-is-gateway": _ADDRESSES,
    "bmc-ip-without-bmc-network": "a node key that needs another section; " + _ADDRESSES,
    "reserved-memory-not-below-installed": _COMPARISON,
    "compute-profile-without-reserved-memory": "depends on which nodes use the profile",
    "unknown-gpu-model": "the GPU catalog, with a did-you-mean; " + _CATALOG,
    "gpu-model-names-several": "a family name the GPU catalog holds several models of; " + _CATALOG,
    "cpu-arch-beside-grace": "the CPU a GPU model comes with; " + _CATALOG,
    "cuda-too-old-for-b200": _CATALOG,
    "rubin-nccl-too-old": _CATALOG,
    "doca-release-not-served": "compares software.rdma.version with a segment of the URL "
    "of the repository it names",
    "v100-with-cuda-13": _CATALOG,
    "driver-below-cuda-minimum": _CATALOG,
    "driver-too-old-for-os": "catalog knowledge: which driver branches NVIDIA publishes per OS",
    "nvidia-repository-other-os": "catalog knowledge: NVIDIA's repository directory per OS",
    "no-cuda-12-7": _CATALOG,
    "fabric-manager-missing": "depends on the hardware profiles; " + _CATALOG,
    "nvlsm-missing-on-hgx-b200": "depends on the hardware profiles' GPU architecture; " + _CATALOG,
    "nvlsm-without-fourth-generation-nvswitch": "depends on the hardware profiles' GPU "
    "architecture; " + _CATALOG,
    "fabric-manager-differs-from-driver": _COMPARISON,
    "fabric-manager-without-nvswitch": "depends on the hardware profiles",
    "controller-not-a-node": _CROSS_REFERENCE,
    "controller-without-role": _CROSS_REFERENCE,
    "duplicate-partition-names": _CROSS_REFERENCE,
    "two-default-partitions": "counts across list items",
    "partition-non-compute-node": _CROSS_REFERENCE,
    "partition-unknown-node": _CROSS_REFERENCE,
    "options-folklore-key": _SLURM_VERSION,
    "options-key-from-newer-slurm": _SLURM_VERSION,
    "options-nodename": _SLURM_VERSION,
    "options-slurmctldhost": _SLURM_VERSION,
    "options-controlmachine": _SLURM_VERSION,
    "options-password": "the schema leaves slurm.options keys open (they depend on the "
    "pinned Slurm); checks/slurm_options.py refuses the password keys, naming the vault variable",
    "options-auth-none": _WEAKENS,
    "options-cred-none": _WEAKENS,
    "options-job-container-none": _WEAKENS,
    "options-privatedata-weakened": _WEAKENS,
    "mount-over-system-folder": "which folders a mount may not cover is the folder rule of "
    "catalog/folders.py, with a message naming the folder; and suid or dev in options are "
    "refused by validation so the error names the setuid key",
    "pull-source-unverified": "ref is refused by validation to say why (a branch and a tag "
    "may share its name), and signers and host_keys are required by the repository's kind "
    "and the unsigned key, which validation reads together",
    "paths-users-can-write": "whether a path is users' depends on the spec's own shared "
    "mounts, and an NCCL plugin value is a path only when it holds a '/'",
    "options-program-in-user-writable-folder": "the schema leaves slurm.options keys open "
    "(they depend on the pinned Slurm), and whether a path is users' depends on the spec's "
    "own shared mounts",
    "options-prologflags-without-contain": _WEAKENS,
    "preempt-qos-without-accounting": "a setting that needs another section",
    "compute-node-under-no-leaf": _TOPOLOGY,
    "node-under-two-leaves": _TOPOLOGY,
    "switch-cycle": _TOPOLOGY,
    "unknown-child-switch": _CROSS_REFERENCE,
    "two-switch-trees": _TOPOLOGY,
    "node-in-two-rack-positions": _CROSS_REFERENCE,
    "unknown-node-in-rack": _CROSS_REFERENCE,
    "several-problems-at-once": "its problems are catalog and cross-reference ones",
    "storage-unknown-node": _CROSS_REFERENCE,
    "lustre-failover-unknown-node": _CROSS_REFERENCE,
    "lustre-mount-unit-name": "the length of the path once systemd-escaped ('-' is 4 "
    "characters there)",
    "switch-unknown-node": _CROSS_REFERENCE,
    "accounting-host-unknown": _CROSS_REFERENCE,
    "package-nccl-wrong-cuda-suffix": _PINS,
    "pull-ansible-core-too-old": "catalog knowledge: the ansible-core each distribution "
    "ships, against the roles' min_ansible_version",
    "pull-without-ansible-package": "catalog knowledge: which distributions' ansible and git "
    "packages the catalog knows",
    "slurm-not-distribution-version": "catalog knowledge: the Slurm each distribution "
    "ships (catalog/slurm_packages.py)",
    "slurm-schedmd-apt-too-old": "compares software.slurm with the first release of "
    "SchedMD's Debian packaging, on apt only",
    "slurm-repository-missing": "slurm_packages: schedmd needs slurm_repository; a "
    "conditional requirement the schema leaves to clustergen, as the default packaging "
    "depends on software.os and software.slurm",
    "slurm-repository-unknown": _CROSS_REFERENCE,
    "nhc-repository-unknown": _CROSS_REFERENCE,
    "health-check-state-too-new": "a word against the Slurm release pinned in the software section",
    "slurm-repository-not-schedmd": "the default packaging depends on software.os and "
    "software.slurm (catalog/slurm_packages.py)",
    "state-save-system-folder": _SYSTEM_FOLDER,
    "log-file-in-system-folder": _SYSTEM_FOLDER,
    "spool-dir-system-folder": _SYSTEM_FOLDER,
    "package-unknown-name": "package names depend on software.os; " + _PINS,
    "gpu-defaults-exceed-node": "multiplies a partition's per-GPU defaults by the GPUs of "
    "the hardware profiles of its nodes",
    "package-version-disagrees": _PINS,
    "lustre-duplicate-index": "uniqueness of a field across list items",
    "nfs-mount-point-taken": "uniqueness of a path across list items and against "
    "storage.lustre.mount.path",
    "nfs-selects-unknown": _CROSS_REFERENCE,
    "monitoring-dcgm-exporter-with-dcgm3": "reads the major release of software.dcgm, a "
    "version string, for a key of another section; " + _COMPARISON,
    "lustre-failover-lacks-role": _CROSS_REFERENCE,
    "lustre-nid-network": _CROSS_REFERENCE,
    "lustre-ldiskfs-dataset": _LUSTRE_BACKEND,
    "lustre-kernel-device-name": _LUSTRE_BACKEND,
    "lustre-zfs-device-path": _LUSTRE_BACKEND,
    "lustre-zpool-on-ldiskfs": _LUSTRE_BACKEND,
    "lustre-layout-outside-mount": "a path compared with the mount point; " + _COMPARISON,
    "lustre-stripe-count": "counts the OSTs; " + _COMPARISON,
    "lustre-stripe-align": "arithmetic on a size with units",
    "lustre-component-order": _COMPARISON,
    "lustre-last-component": "a property of the last list item",
    "lustre-dom-placement": _COMPARISON,
    "lustre-unknown-pool": _CROSS_REFERENCE,
    "lustre-pool-ost": _CROSS_REFERENCE,
    "lustre-unknown-profile": _CROSS_REFERENCE,
    "lustre-tuning-range": _LUSTRE_TUNING,
    "lustre-tuning-place": _LUSTRE_TUNING,
    "lustre-pages-per-rpc": _COMPARISON,
    "lustre-quota-project": "a path compared with the mount point, per quota type",
    "accounting-dropped": "settings and a role that need another section",
    "system-reserve-all-cores": _COMPARISON,
    "qos-without-accounting": "a setting that needs another section",
    "duplicate-qos": _CROSS_REFERENCE,
    "preempt-unknown-qos": _CROSS_REFERENCE,
    "qos-preempts-itself": _CROSS_REFERENCE,
    "enforce-without-qos": "a slurm.options value judged against other settings",
    "ha-controllers-local-state": "counts the hosts of hostlist expressions",
    "billing-without-accounting": "a setting that needs another section",
    "nccl-topology-gpu-index-twice": "counts across list items against gpu.count",
    "nccl-topology-cores-beyond-cpus": _COMPARISON,
    "nccl-topology-numa-beyond-sockets": _COMPARISON,
    "nccl-topology-unknown-hca": _CROSS_REFERENCE,
    "nccl-topology-hcas-differ-from-fabric-hcas": _CROSS_REFERENCE,
    "nccl-timeout-out-of-range": _NCCL_TABLE,
    "nccl-hca-list-bad-prefix": _NCCL_TABLE,
    "nccl-unknown-hca": _CROSS_REFERENCE,
    "nccl-not-an-nccl-name": _NCCL_TABLE,
    "nccl-debug-enum": _NCCL_TABLE,
    "nccl-roce-without-traffic-class": "a setting that depends on the fabric type",
    "pattern-nodes-exceed-racks": "counts a hostlist's hosts against racks x units",
    "facility-switch-ports-exceeded": "counts the HCAs of a leaf's nodes; " + _COMPARISON,
    "facility-device-above-rack-top": "unit plus the node profile's height; " + _COMPARISON,
    "facility-two-devices-in-one-unit": "overlap of units across list items",
    "facility-node-not-racked": _CROSS_REFERENCE,
    "facility-unracked-unknown-node": _CROSS_REFERENCE,
    "facility-unracked-node-in-rack": _CROSS_REFERENCE,
    "facility-psus-below-max-watts": "arithmetic over PSU count and rating; " + _COMPARISON,
    "facility-max-watts-below-gpus": "the GPUs' board power; " + _CATALOG,
    "facility-typical-above-max": _COMPARISON,
    "facility-psu-split-not-psu-count": "a sum of a mapping's values; " + _COMPARISON,
    "facility-psu-on-missing-feed": "the node's feeds depend on its rack's PDUs",
    "facility-node-without-psus-in-pdu-rack": "whether a node's profile may lack PSUs "
    "depends on the rack a device entry elsewhere places it in",
    "facility-single-feed-over-limit": _POWER_PLAN,
    "facility-ab-feed-cannot-carry-rack-alone": _POWER_PLAN,
    "facility-bank-over-limit": _POWER_PLAN,
    "facility-bank-amps-without-banks": "a key that needs another key; " + _COMPARISON,
    "facility-pdu-outlets-exceeded": _POWER_PLAN,
    "facility-two-pdus-on-one-feed": "uniqueness of a field across list items",
    "facility-racked-node-without-power": _CROSS_REFERENCE,
    "facility-rack-weight-exceeded": _POWER_PLAN,
    "facility-rack-cooling-exceeded": _POWER_PLAN,
    "facility-site-over-power-budget": _POWER_PLAN,
    "facility-site-cooling-exceeded": _POWER_PLAN,
    "facility-phase-over-limit": _POWER_PLAN,
    "facility-power-shelves-over-capacity": _POWER_PLAN,
    "facility-cdu-over-capacity": _POWER_PLAN,
    "facility-rack-air-cooling-exceeded": _POWER_PLAN,
    "facility-pdus-and-power-shelves": "a key that excludes another; the schema leaves pdus "
    "open as a list that may be empty",
    "facility-power-shelves-odd-for-n-plus-n": "the parity of a count against another key",
    "facility-cdu-unknown-rack": _CROSS_REFERENCE,
    "slurm-dbd-role-elsewhere": "a node's role against the name another key gives: "
    + _CROSS_REFERENCE,
    "state-save-not-on-controllers": "a path under a mount point of another section, on "
    "the nodes that mount it (roles against node groups)",
    "lustre-release-for-os": "a version compared as numbers against another key's value",
    "lustre-client-architecture": "a version against the CPU architecture of the nodes "
    "whose roles mount Lustre (roles, node groups and hardware profiles together)",
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
