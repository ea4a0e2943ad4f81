"""group_vars: the variables of each inventory group (pins, repositories, the NVIDIA
stack's and Slurm's settings, the architectures), all.yml's, and versions.lock's groups."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clustergen.catalog.architectures import (
    ARCH_GROUP_TITLES,
    CPU_ARCHES,
    arch_group,
    nvidia_repository_url,
    serves,
)
from clustergen.catalog.gpus import DEFAULT_CPU_ARCH
from clustergen.catalog.groups import (
    GPU_GROUP,
    GROUP_TITLES,
    NVLINK_GROUP,
    RDMA_GROUP,
    hardware_group,
)
from clustergen.catalog.nvidia_packages import driver_sibling_pins
from clustergen.catalog.packages import CONCERNS, PIN_PLAYS
from clustergen.catalog.pins import Pins
from clustergen.catalog.versions import parse_version
from clustergen.model.hardware import CpuArch, HardwareProfile
from clustergen.model.nccl import AcceptanceTools
from clustergen.outputs.ansible.files import (
    FILE_LISTS,
    GATHER_FILES,
)
from clustergen.outputs.ansible.inventory import (
    HOSTS_LIST,
)
from clustergen.resolve import ResolvedCluster, rdma_profiles
from clustergen.resolve.imex_mode import imex_start
from clustergen.spec.hosts import compress

# The GPU nodes' variable of nccl-tests' directory (nccl.acceptance.nccl_tests_dir): the
# nccl_tests role installs there, the acceptance jobs read the same spec key.
NCCL_TESTS_DIR_VARIABLE = "nccl_tests_dir"


# NVIDIA's cuda-toolkit-<major>-<minor> package installs under /usr/local/cuda-<major>.<minor>
# (CUDA Installation Guide for Linux, "Post-installation Actions": the PATH it adds).
CUDA_PREFIX = "/usr/local/cuda-"


# slurm.reboot.mode, which only roles/nvidia_driver reads (its plan).
REBOOT_MODE_VARIABLE = "clustergen_reboot_mode"

# Rendered files are found from the inventory, wherever the output tree is copied.
FROM_INVENTORY = "{{ inventory_dir }}/.."


@dataclass(frozen=True)
class Variable:
    """One group variable: a scalar, a flat mapping, a list of strings, or a list of flat
    mappings (whose values may be lists of strings)."""

    name: str
    comment: str
    value: (
        str
        | bool
        | Mapping[str, str]
        | Sequence[str]
        | Sequence[Mapping[str, str | bool | list[str]]]
    )
    # A Jinja expression of the roles', or JSON text of the catalog's names (never spec
    # data): written as a folded block, one line of it a line, not as one quoted string.
    folded: bool = False
    # The concern whose pins it carries (its packages, the version its role checks, the
    # driver's sibling records): outside the release's base, so that a release that
    # changes only pins converges only the plays of the concerns they belong to.
    pin: str | None = None


@dataclass(frozen=True)
class GroupVars:
    group: str
    title: str
    variables: list[Variable]


@dataclass(frozen=True)
class LockGroup:
    name: str
    nodes: str  # Slurm-style hostlist, for the reader
    packages: Pins


def group_pins(cluster: ResolvedCluster) -> dict[str, Pins]:
    """Inventory group -> the packages its nodes get, from every concern it carries."""
    by_group: dict[str, Pins] = {}
    for concern in CONCERNS:
        by_group.setdefault(concern.group, {}).update(cluster.pins.by_concern[concern.name])
    return by_group


def lock_groups(cluster: ResolvedCluster) -> list[LockGroup]:
    """Groups that have nodes and packages, sorted by name, packages sorted by name."""
    groups = []
    hostlists: dict[frozenset[str], str] = {}  # groups of the same nodes share one
    for name, packages in sorted(group_pins(cluster).items()):
        members = cluster.members.get(name, frozenset())
        if members and packages:
            if members not in hostlists:
                in_order = [host.name for host in cluster.hosts if host.name in members]
                hostlists[members] = compress(in_order)
            groups.append(LockGroup(name, hostlists[members], dict(sorted(packages.items()))))
    return groups


def all_group_vars(cluster: ResolvedCluster) -> list[GroupVars]:
    """One file per group that has nodes and something to set, sorted by group name:
    the pins of the concerns it carries (its rendered files: files/groups/<group>.yml)."""
    variables: dict[str, list[Variable]] = {}
    software = cluster.spec.software
    for concern in CONCERNS:
        pins = cluster.pins.by_concern[concern.name]
        comment = (
            f"{concern.title}: exact versions; role {concern.role} installs and holds them"
            if pins
            else f"{concern.title}: {concern.without_packages}"
        )
        variables.setdefault(concern.group, []).append(
            Variable(f"{concern.name}_packages", comment, pins, pin=concern.name)
        )
        if concern.reports is not None:
            variables[concern.group].append(
                Variable(
                    f"{concern.name}_version",
                    f"the version the running {concern.title} must report",
                    str(getattr(software, concern.reports)),
                    pin=concern.name,
                )
            )
    start = imex_start(cluster)
    if start is not None:
        variables.setdefault(NVLINK_GROUP, []).append(
            Variable(
                "imex_always_on",
                f"slurm.imex ({start.mode}): IMEX runs from boot; false: the Slurm Prolog "
                "starts it per job",
                start.always_on,
            )
        )
    variables.setdefault(GPU_GROUP, []).append(
        Variable(
            "nvidia_driver_siblings",
            "apt preferences records that hold every other package of the driver's build "
            "(those its packages pull in) at the driver packages' version (none on dnf)",
            driver_sibling_pins(software, cluster.pins.by_concern["nvidia_driver"]),
            pin="nvidia_driver",
        )
    )
    variables.setdefault(GPU_GROUP, []).extend(_nccl_tests_vars(cluster))
    rdma = software.rdma
    variables.setdefault(RDMA_GROUP, []).append(
        Variable(
            "rdma_stack",
            "software.rdma.stack: distribution (rdma_packages) or doca-ofed (doca_packages; "
            "the rdma role then loads nvidia-peermem on GPU nodes)",
            rdma.stack if rdma is not None else "distribution",
        )
    )
    for profile in rdma_profiles(cluster.spec.hardware, cluster.spec.network):
        variables.setdefault(hardware_group(profile), []).append(
            Variable(
                "rdma_devices",
                "the RDMA devices of this profile (fabric_hcas, topology hcas): the converge "
                "check records those the node has and reports the others (docs/rdma.md)",
                rdma_device_names(cluster.spec.hardware[profile]),
            )
        )
    every = vars_of_all(cluster)
    every.variables.append(
        _pins_by_concern({g: v for g, v in variables.items() if cluster.members.get(g)})
    )
    files = [every, *_arch_vars(cluster)]
    files += [
        GroupVars(group, GROUP_TITLES.get(group, f"Nodes of group {group}"), group_variables)
        for group, group_variables in variables.items()
        if cluster.members.get(group)
    ]
    return sorted(files, key=lambda f: f.group)


def _pins_by_concern(variables: Mapping[str, Sequence[Variable]]) -> Variable:
    """all.yml's map of the pins for the converge check: each concern of a group with
    nodes, the family whose plays install it alone (PIN_PLAYS; empty: none) and its pin
    variables. The check compares a node's recorded pins with this release's, concern by
    concern."""
    names: dict[str, list[str]] = {}
    for group_variables in variables.values():
        for variable in group_variables:
            if variable.pin is not None:
                names.setdefault(variable.pin, []).append(variable.name)
    if "nvidia_driver" in names:
        # Read by the driver's plan alone, set or not (ansible): the same list either way.
        names["nvidia_driver"].append(REBOOT_MODE_VARIABLE)
    concerns: list[Mapping[str, str | bool | list[str]]] = [
        {
            "concern": concern.name,
            "family": PIN_PLAYS.get(concern.role, ""),
            "variables": sorted(names[concern.name]),
        }
        for concern in CONCERNS
        if concern.name in names
    ]
    # JSON text, not a YAML list: Ansible makes every host's variables its own copy of
    # a structured group variable, and this one doubled `ansible-inventory --list` of
    # 16,384 nodes (1.2 GB against 0.7; benchmarks/RESULTS.md, issue 42). A concern a
    # line, folded: YAML joins the lines with spaces, which JSON allows.
    return Variable(
        "clustergen_pins",
        "the pinned concerns, the family whose plays install each alone (empty: the node "
        "converges in full) and the variables of its pins (roles/clustergen_state), as "
        "JSON text",
        "[" + ",\n".join(json.dumps(concern) for concern in concerns) + "]",
        folded=True,
    )


def base_vars(group_vars: GroupVars) -> GroupVars:
    """The group's variables less its pins: what the release's base digests."""
    return GroupVars(
        group_vars.group,
        group_vars.title,
        [variable for variable in group_vars.variables if variable.pin is None],
    )


def _nccl_tests_vars(cluster: ResolvedCluster) -> list[Variable]:
    """The nccl_tests role's inputs: the one directory it builds into and the acceptance
    jobs read, the release to build (empty: none) and the CUDA it is built with."""
    nccl, software = cluster.spec.nccl, cluster.spec.software
    source = software.nccl_tests
    major, minor = parse_version(software.cuda)[:2]
    return [
        Variable(
            NCCL_TESTS_DIR_VARIABLE,
            "nccl.acceptance.nccl_tests_dir: where nccl-tests' binaries are installed and "
            "where the acceptance jobs run all_reduce_perf from",
            (nccl.acceptance if nccl is not None else AcceptanceTools()).nccl_tests_dir,
        ),
        Variable(
            "nccl_tests_source",
            "software.nccl_tests: the release tarball the nccl_tests role builds (empty: "
            "nothing is built)",
            {"version": source.version, "url": source.url, "sha256": source.sha256}
            if source is not None
            else {},
        ),
        Variable(
            "nccl_tests_cuda_home",
            "the pinned CUDA toolkit's directory (cuda-toolkit-<major>-<minor>), CUDA_HOME "
            "of the build",
            f"{CUDA_PREFIX}{major}.{minor}",
        ),
    ]


def rdma_device_names(profile: HardwareProfile) -> list[str]:
    """The profile's RDMA devices: its topology table's HCAs (compute and storage), else
    fabric_hcas, each once, in order."""
    names = [h.name for h in profile.topology.hcas] if profile.topology is not None else []
    return list(dict.fromkeys(names or profile.fabric_hcas))


def _repositories(
    cluster: ResolvedCluster, arch: CpuArch
) -> list[dict[str, str | bool | list[str]]]:
    """The repositories the nodes of one CPU architecture get (catalog/architectures.py)."""
    family = cluster.pins.family
    repositories: list[dict[str, str | bool | list[str]]] = []
    for repository in cluster.spec.software.repositories:
        if not serves(repository, arch):
            continue
        url = nvidia_repository_url(repository.url, arch)
        entry: dict[str, str | bool | list[str]] = {"name": repository.name, "url": url}
        if family == "apt":
            entry["suite"] = repository.suite
            entry["components"] = list(repository.components)
        if repository.key_url is not None:
            entry["key_url"] = nvidia_repository_url(repository.key_url, arch)
            if repository.key_fingerprint is not None:
                entry["key_fingerprint"] = repository.key_fingerprint
        else:
            # Only the spec's trusted: true gets here (software.repository-unsigned).
            entry["trusted"] = True
        repositories.append(entry)
    return repositories


def _arch_vars(cluster: ResolvedCluster) -> list[GroupVars]:
    """Where any node is aarch64: each architecture group's repositories, over all.yml's."""
    return [
        GroupVars(
            arch_group(arch),
            ARCH_GROUP_TITLES[arch],
            [
                Variable("clustergen_cpu_arch", "from the hardware profiles (cpu.arch)", arch),
                Variable(
                    "repositories_list",
                    f"software.repositories for {arch} nodes",
                    _repositories(cluster, arch),
                ),
            ],
        )
        for arch in CPU_ARCHES
        if cluster.members.get(arch_group(arch))
    ]


def vars_of_all(cluster: ResolvedCluster) -> GroupVars:
    software = cluster.spec.software
    family = cluster.pins.family
    repositories = _repositories(cluster, DEFAULT_CPU_ARCH)
    return GroupVars(
        "all",
        "Every node",
        [
            Variable(
                "clustergen_package_family",
                f"from software.os ({software.os}): how roles pin and hold",
                family,
            ),
            Variable(
                "clustergen_lock_file",
                "read by verify.yml, the drift report",
                f"{FROM_INVENTORY}/versions.lock",
            ),
            Variable(
                "clustergen_start_services",
                "testbed switch: off only where no daemon can run",
                True,
            ),
            Variable(
                "clustergen_allow_reboot",
                "testbed switch: off only where nodes cannot reboot",
                True,
            ),
            Variable("repositories_list", "software.repositories", repositories),
            Variable(
                "clustergen_accounts",
                "cluster.accounts: created with these IDs before any package",
                {
                    "slurm": str(cluster.spec.cluster.accounts.slurm.uid),
                    "munge": str(cluster.spec.cluster.accounts.munge.uid),
                },
            ),
            Variable(
                "clustergen_hosts_file",
                "cluster.hosts_file: every node's name and address in /etc/hosts",
                cluster.spec.cluster.hosts_file,
            ),
            Variable(
                "clustergen_hosts_list",
                "the nodes' addresses and names, the lines of that /etc/hosts block",
                f"{FROM_INVENTORY}/{HOSTS_LIST}",
            ),
            *_file_list_vars(),
            Variable("clustergen_domain", "cluster.domain", cluster.spec.cluster.domain),
            Variable(
                "clustergen_time_sync",
                "cluster.time_sync: chrony on every node",
                cluster.spec.cluster.time_sync,
            ),
            Variable(
                "clustergen_time_servers",
                "cluster.time_servers: the NTP servers chrony follows",
                list(cluster.spec.cluster.time_servers),
            ),
            Variable(
                "clustergen_munge_key_variable",
                "cluster.munge_key_variable: the vault variable with the base64 MUNGE key",
                cluster.spec.cluster.munge_key_variable,
            ),
            Variable("clustergen_cluster_name", "cluster.name", cluster.spec.cluster.name),
            *_reboot_vars(cluster),
            Variable(
                "clustergen_slurm_firewall_sources",
                "slurm.isolation.firewall_sources: the networks the Slurm ports are open to "
                "on EL (firewalld); empty: every source",
                _firewall_sources(cluster),
            ),
        ],
    )


def _reboot_vars(cluster: ResolvedCluster) -> list[Variable]:
    """slurm.reboot mode slurm only (absent, the roles' default is ansible): site.yml
    then leaves a running GPU node's driver change to the Slurm-driven reboot. Only the
    driver's plan reads it, so it counts with the driver's pins: switching the mode
    converges the driver concern's plays, not every play."""
    reboot = cluster.spec.slurm.reboot
    if reboot is None or reboot.mode != "slurm":
        return []
    return [
        Variable(
            REBOOT_MODE_VARIABLE,
            "slurm.reboot.mode: Slurm reboots the nodes in service for a driver change",
            reboot.mode,
            pin="nvidia_driver",
        )
    ]


def _file_list_vars() -> list[Variable]:
    """all.yml's way to the rendered files: the tree, and the lists a node receives."""
    return [
        Variable(
            "clustergen_tree",
            "the rendered tree: where the roles read the rendered files from",
            FROM_INVENTORY,
        ),
        Variable(
            "clustergen_files",
            f"the rendered files this node receives: {FILE_LISTS}/groups/<group>.yml of "
            f"each of its groups and {FILE_LISTS}/hosts/<node>.yml, src absolute",
            GATHER_FILES,
            folded=True,
        ),
    ]


def _firewall_sources(cluster: ResolvedCluster) -> list[str]:
    """The cluster's own networks, when slurm.isolation.firewall_sources limits the Slurm
    ports to them."""
    spec = cluster.spec
    if not spec.slurm.isolation.firewall_sources:
        return []
    networks = [spec.network.management.cidr]
    if spec.network.fabric is not None:
        networks.append(spec.network.fabric.cidr)
    return [str(network) for network in networks]
