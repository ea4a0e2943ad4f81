"""Ansible: inventory/hosts.yml, inventory/group_vars/*.yml, versions.lock, and the
site repository's .gitignore.

site.yml and the roles consume these. Every node gets the packages of each
inventory group it is in, and the files of every family that declare an install
for one of its groups (files/groups/<group>.yml) or for it alone
(files/hosts/<node>.yml), gathered by all.yml's `clustergen_files` and installed by the
rendered_files role with the handler that a change needs. This family knows no
other family's files: it reads their artifacts. versions.lock carries the pins
for review and for the drift report (verify.yml). No secret is rendered: a file
that needs one names the vault variable its secret line is filled from.

group_vars/all.yml also carries `clustergen_release`, a digest of everything
site.yml applies (the site files, the inventory and every installed artifact): a
node whose recorded release equals it, and whose live state passes the
converge check, is skipped by every converge play (roles/clustergen_state).
`clustergen_release_base` is the same digest less the installed files and their lists
(files/): a release that differs from a node's only there converges, on that node, only
the plays of the families whose files it changes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import jinja2

from clustergen.artifacts import Artifact, Install
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
from clustergen.catalog.packages import CONCERNS, Pins, driver_sibling_pins
from clustergen.catalog.versions import parse_version
from clustergen.hosts import InterfaceAddress, compress
from clustergen.imex_mode import imex_start
from clustergen.model.hardware import CpuArch, HardwareProfile
from clustergen.model.nccl import AcceptanceTools
from clustergen.outputs import OWN_ROLE
from clustergen.resolve import InventoryGroup, ResolvedCluster, rdma_profiles
from clustergen.templating import render_template

# Keeps the vault file, an interrupted render's journal and temporaries, and the
# tools' local state out of the site repository (issue 21; docs/security.md).
GITIGNORE = ".gitignore"
# The GPU nodes' variable of nccl-tests' directory (nccl.acceptance.nccl_tests_dir): the
# nccl_tests role installs there, the acceptance jobs read the same spec key.
NCCL_TESTS_DIR_VARIABLE = "nccl_tests_dir"
# NVIDIA's cuda-toolkit-<major>-<minor> package installs under /usr/local/cuda-<major>.<minor>
# (CUDA Installation Guide for Linux, "Post-installation Actions": the PATH it adds).
CUDA_PREFIX = "/usr/local/cuda-"
# Rendered files are found from the inventory, wherever the output tree is copied.
_FROM_INVENTORY = "{{ inventory_dir }}/.."


# One rendered file's entry in files/groups/<group>.yml or files/hosts/<node>.yml:
# strings, and the list of paths it replaces (absent).
FileField = str | list[str] | dict[str, str]
FileEntry = dict[str, FileField]
# The role that installs the files of the families without a role of their own
# (outputs.OWN_ROLE), and the one handler it defines for their changes.
FAMILIES_ROLE = "families"
FAMILIES_HANDLER = "Restart the services of the families' changed files"


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
    # A Jinja expression of the roles' (never spec data): written as a folded block,
    # one line of the expression a line, not as one quoted string.
    folded: bool = False


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


def render(
    cluster: ResolvedCluster,
    env: jinja2.Environment,
    by_family: Mapping[str, Sequence[Artifact]],
    site: Sequence[Artifact],
) -> list[Artifact]:
    patterns: dict[tuple[str, ...], tuple[str, ...]] = {}  # groups of the same hosts share one
    groups = []
    for group in cluster.groups:
        if group.hosts not in patterns:
            patterns[group.hosts] = tuple(host_patterns(list(group.hosts)))
        groups.append(InventoryGroup(group.name, patterns[group.hosts], group.children))
    group_files, node_files = _installed_files(by_family, cluster.members)
    artifacts = [
        Artifact(
            "inventory/hosts.yml",
            render_template(
                env,
                "ansible/hosts.yml.j2",
                cluster,
                hosts=host_patterns([host.name for host in cluster.hosts]),
                groups=groups,
                architectures=arch_nodes(cluster),
            ),
        ),
        Artifact(
            "versions.lock",
            render_template(
                env,
                "ansible/versions.lock.j2",
                cluster,
                family=cluster.pins.family,
                lock_groups=lock_groups(cluster),
                architectures=arch_nodes(cluster),
            ),
        ),
    ]
    for group_vars in all_group_vars(cluster):
        artifacts.append(
            Artifact(
                f"inventory/group_vars/{group_vars.group}.yml",
                render_template(env, "ansible/group_vars.yml.j2", cluster, vars=group_vars),
            )
        )
    lists = file_lists(cluster, group_files, node_files)
    artifacts += lists
    artifacts += host_vars(cluster)
    artifacts.append(Artifact(HOSTS_LIST, _hosts_list(cluster)))
    # The digests cover all.yml as rendered without them, then all.yml carries them.
    installed = [a for family in by_family.values() for a in family if a.install is not None]
    listed = {a.path for a in lists}
    base = release_stamp([*site, *(a for a in artifacts if a.path not in listed)])
    all_vars = _all_vars(cluster)
    all_vars.variables.extend(
        [
            Variable(
                "clustergen_release",
                "digest of what site.yml applies (site files, inventory, installed files); "
                "a node that recorded it and passes the converge check is skipped",
                release_stamp([*installed, *site, *artifacts]),
            ),
            Variable(
                "clustergen_release_base",
                "the same digest less the rendered files and their lists (files/): a node "
                "that recorded it converges only the plays of the families whose files differ",
                base,
            ),
        ]
    )
    return [
        *(a for a in artifacts if a.path != f"inventory/group_vars/{all_vars.group}.yml"),
        Artifact(
            f"inventory/group_vars/{all_vars.group}.yml",
            render_template(env, "ansible/group_vars.yml.j2", cluster, vars=all_vars),
        ),
        # The repository's, not the nodes': outside the release stamp, it converges nothing.
        Artifact(GITIGNORE, render_template(env, "ansible/gitignore.j2", cluster)),
    ]


def release_stamp(artifacts: Sequence[Artifact]) -> str:
    """sha256 over every artifact's path, mode and text, in path order: byte-stable, and
    different whenever any file that site.yml applies is. versions.lock (the drift
    report's copy of the pins, which group_vars carry too) and files that are not
    installed (acceptance jobs, facility sheets) stay out, so they converge nothing; so
    does collect.yml, which only reads the nodes for `clustergen audit`."""
    digest = hashlib.sha256()
    for artifact in sorted(artifacts, key=lambda a: a.path):
        if artifact.path in ("versions.lock", "collect.yml"):
            continue
        for part in (artifact.path, f"{artifact.mode:o}", artifact.text):
            encoded = part.encode("utf-8")
            digest.update(len(encoded).to_bytes(8, "big"))
            digest.update(encoded)
    return digest.hexdigest()


# --- files/: the lists of rendered files each group and each node receives --------

# Outside inventory/: Ansible parses every file of an inventory directory, and a
# subdirectory's too, as inventory. Were these lists inventory variables, every host
# would carry its groups' copies in its merged variables (`ansible-inventory --list`:
# 16,384 hosts x 10 KB at 16k nodes); the roles read them from here (clustergen_files).
FILE_LISTS = "files"

# all.yml's clustergen_files: the entries of files/groups/<group>.yml for each of the
# node's groups and of files/hosts/<node>.yml, read on the controller, each src made
# absolute. Evaluated where a role uses it, for that node: a few files of a few KB each,
# whatever the cluster's size. The same list the roles gathered from the variables
# clustergen_files_<group> and clustergen_files_node before.
_GATHER_FILES = "\n".join(
    (
        "{%- set found = [] -%}",
        "{%- set lists = group_names | map('regex_replace', '^', 'groups/') | list -%}",
        "{%- for name in lists + ['hosts/' ~ inventory_hostname] -%}",
        "{%-   set path = clustergen_tree ~ '/" + FILE_LISTS + "/' ~ name ~ '.yml' -%}",
        "{%-   if path is file -%}",
        "{%-     set _ = found.extend(lookup('ansible.builtin.file', path) | from_yaml) -%}",
        "{%-   endif -%}",
        "{%- endfor -%}",
        "{%- set entries = [] -%}",
        "{%- for entry in found -%}",
        "{%-   set src = {'src': clustergen_tree ~ '/' ~ entry.src} -%}",
        "{%-   set _ = entries.append(entry | combine(src)) -%}",
        "{%- endfor -%}",
        "{{ entries }}",
    )
)


def file_lists(
    cluster: ResolvedCluster,
    group_files: Mapping[str, Sequence[Mapping[str, FileField]]],
    node_files: Mapping[str, Sequence[Mapping[str, FileField]]],
) -> list[Artifact]:
    """files/groups/<group>.yml for each group with nodes and files, files/hosts/<node>.yml
    for each node with files meant for it alone (its network files, its Lustre targets'):
    YAML lists of install entries, src relative to the tree. Written as text, as
    host_vars are: 16,384 of them at 16k nodes."""
    name = cluster.spec.cluster.name
    footer = [
        f"# Rendered by clustergen from the spec of cluster {name}. Do not edit this",
        "# file: change the spec and run `clustergen render` again; every render replaces it.",
        "---",
    ]
    artifacts = []
    for group, entries in group_files.items():
        if cluster.members.get(group):
            title = GROUP_TITLES.get(group, f"Nodes of group {group}")
            head = [
                f"# The rendered files every node of group {group} ({title}) receives;",
                "# the roles read this list (clustergen_files, group_vars/all.yml).",
            ]
            text = "\n".join(head + footer) + "\n" + _entries_text(entries)
            artifacts.append(Artifact(f"{FILE_LISTS}/groups/{group}.yml", text))
    for host, entries in node_files.items():
        head = [
            f"# The rendered files only {host} receives, beside its groups' (files/groups/);",
            "# the roles read this list (clustergen_files, group_vars/all.yml).",
        ]
        text = "\n".join(head + footer) + "\n" + _entries_text(entries)
        artifacts.append(Artifact(f"{FILE_LISTS}/hosts/{host}.yml", text))
    return artifacts


# --- host_vars: what only one node has ------------------------------------------


def host_vars(cluster: ResolvedCluster) -> list[Artifact]:
    """inventory/host_vars/<host>.yml for every host: its addresses (its rendered files
    are in files/hosts/). Ansible reads a host's file only when that host's variables are
    asked for, so listing the groups (--graph, --limit, a pull run on one node) never
    reads its peers' data. Written as text, not through the template: 16,384 files of a
    few lines each."""
    addresses = interface_addresses(cluster)
    name = cluster.spec.cluster.name
    artifacts = []
    for host in cluster.hosts:
        address = _quoted(host.management_ip)
        lines = [
            f"# Ansible host_vars for {host.name}: its addresses",
            f"# Rendered by clustergen from the spec of cluster {name}. Do not edit this",
            "# file: change the spec and run `clustergen render` again; every render replaces it.",
            "---",
            f"ansible_host: {address}",
            f"clustergen_address: {address}",
        ]
        text = "\n".join(lines) + "\n" + addresses.get(host.name, "")
        artifacts.append(Artifact(f"inventory/host_vars/{host.name}.yml", text))
    return artifacts


# Every node's management address and name, one line each, for the cluster_base role's
# /etc/hosts block: read as one file, where a template over every host's hostvars would
# compute every node's variables on every node (16,384 x 16,384 at 16k nodes). In
# inventory/ as .txt, which Ansible does not parse as an inventory source
# (INVENTORY_IGNORE_EXTS).
HOSTS_LIST = "inventory/etc-hosts.txt"


def _hosts_list(cluster: ResolvedCluster) -> str:
    """'address name' per node with a management address, in the order the role's
    template sorted the inventory's hosts before (Jinja's sort: case-insensitive)."""
    name = cluster.spec.cluster.name
    lines = [
        f"# The nodes of cluster {name} by management address: the cluster_base role's "
        "/etc/hosts block",
        f"# Rendered by clustergen from the spec of cluster {name}. Do not edit this",
        "# file: change the spec and run `clustergen render` again; every render replaces it.",
    ]
    hosts = sorted(cluster.hosts, key=lambda host: host.name.lower())
    lines += [f"{h.management_ip} {h.name}" for h in hosts if h.management_ip]
    return "\n".join(lines) + "\n"


def _entries_text(entries: Sequence[Mapping[str, FileField]]) -> str:
    """A YAML list of install entries, each value quoted as tojson writes it."""
    parts = []
    for entry in entries:
        first = True
        for key, value in entry.items():
            parts.append(f"{'- ' if first else '  '}{key}: {_quoted(value)}\n")
            first = False
    return "".join(parts)


def _quoted(value: str | bool | list[str] | dict[str, str] | None) -> str:
    """A scalar (or a list or mapping of strings) as the templates' tojson filter writes
    it (JSON, with <, >, & and ' escaped): a double-quoted YAML scalar (or flow sequence
    or mapping of them) whatever the value holds."""
    return (
        json.dumps(value)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("'", "\\u0027")
    )


def interface_addresses(cluster: ResolvedCluster) -> dict[str, str]:
    """Host name -> its host_vars lines of rail_ips, storage_ips and frontend_ip, for the
    hosts that have any (none without network.fabric.rail_prefix, network.storage and
    network.frontend). Written here, not by a template: a 16k-node cluster of 8 rails
    has 131,072 rail addresses (docs/networks.md shows the lines)."""
    network = cluster.spec.network
    fabric = network.fabric if network.fabric and network.fabric.rail_prefix else None
    storage, frontend = network.storage, network.frontend
    if fabric is None and storage is None and frontend is None:
        return {}
    found: dict[str, str] = {}
    for host in cluster.hosts:
        lines = _address_list("rail_ips", host.rail_addresses(fabric))
        lines += _address_list("storage_ips", host.storage_addresses(storage))
        front = host.frontend_address(frontend)
        if front is not None:
            lines += f"frontend_ip: {_flow(front)}\n"
        if lines:
            found.setdefault(host.name, lines)
    return found


def _address_list(key: str, addresses: tuple[InterfaceAddress, ...]) -> str:
    if not addresses:
        return ""
    return f"{key}:\n" + "".join(f"  - {_flow(a)}\n" for a in addresses)


def _flow(a: InterfaceAddress) -> str:
    """{netdev: "ib0", address: "10.10.1.11/19"}, as the tojson filter quotes them: a
    netdev is [A-Za-z0-9_.:-] (syntax.INTERFACE) and an address digits, dots and '/',
    which JSON writes as they are."""
    return f'{{netdev: "{a.netdev}", address: "{a.address}/{a.prefix}"}}'


# --- host ranges ------------------------------------------------------------------


_TRAILING_NUMBER = re.compile(r"^(?P<head>.*?)(?P<number>\d+)(?P<tail>\D*)$")


def host_patterns(names: list[str]) -> list[str]:
    """Names with runs of consecutive numbers folded into Ansible ranges (gpu[01:08]).

    A run is folded only when Ansible's own expansion of the range gives back exactly
    the run, so padding quirks (gpu9, gpu10 or gpu08, gpu100) never change a host.
    """
    patterns: list[str] = []
    run: list[tuple[str, re.Match[str] | None]] = []  # each name with its match, made once

    def flush() -> None:
        first, last = run[0][1], run[-1][1]
        if len(run) >= 2:
            assert first is not None and last is not None
            if _ansible_writes(first["number"], last["number"], [m for _, m in run]):
                patterns.append(
                    f"{first['head']}[{first['number']}:{last['number']}]{first['tail']}"
                )
                run.clear()
                return
        patterns.extend(name for name, _ in run)
        run.clear()

    for name in names:
        match = _TRAILING_NUMBER.match(name)
        if run and not _continues(run[-1][1], match):
            flush()
        run.append((name, match))
    if run:
        flush()
    return patterns


def _ansible_writes(begin: str, end: str, run: list[re.Match[str] | None]) -> bool:
    """Whether Ansible's range [begin:end] writes each number of the run as the run does
    (the run's names share head and tail and count up by one; _continues made sure).

    Ansible pads every number to the begin value's width when that value is zero-padded,
    and then needs begin and end of equal width; otherwise it writes numbers plainly.
    """
    if begin.startswith("0") and len(begin) > 1:
        return len(begin) == len(end)  # widths never shrink along a run, so all match
    return all(m is not None and (m["number"] == "0" or m["number"][0] != "0") for m in run)


def _continues(a: re.Match[str] | None, b: re.Match[str] | None) -> bool:
    """Whether the name matched as b follows the one matched as a in a range."""
    return (
        a is not None
        and b is not None
        and (a["head"], a["tail"]) == (b["head"], b["tail"])
        and int(b["number"]) == int(a["number"]) + 1
        and (len(a["number"]) == len(b["number"]) or not a["number"].startswith("0"))
    )


# --- pins per group ---------------------------------------------------------------


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


def arch_nodes(cluster: ResolvedCluster) -> dict[str, str]:
    """CPU architecture -> its nodes as a hostlist, where any node is aarch64; else empty
    (an all-x86_64 cluster's inventory and lock stay as they were)."""
    nodes: dict[str, str] = {}
    for arch in CPU_ARCHES:
        members = cluster.members.get(arch_group(arch), frozenset())
        if members:
            nodes[arch] = compress([host.name for host in cluster.hosts if host.name in members])
    return nodes


# --- group_vars -------------------------------------------------------------------


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
            Variable(f"{concern.name}_packages", comment, pins)
        )
        if concern.reports is not None:
            variables[concern.group].append(
                Variable(
                    f"{concern.name}_version",
                    f"the version the running {concern.title} must report",
                    str(getattr(software, concern.reports)),
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
        )
    )
    variables.setdefault(GPU_GROUP, []).extend(_nccl_tests_vars(cluster))
    rdma = software.rdma
    variables.setdefault(RDMA_GROUP, []).append(
        Variable(
            "rdma_stack",
            "software.rdma.stack: distribution (the packages above) or doca-ofed (the site "
            "installs DOCA-OFED; the rdma role then loads nvidia-peermem on GPU nodes)",
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
    files = [_all_vars(cluster), *_arch_vars(cluster)]
    files += [
        GroupVars(group, GROUP_TITLES.get(group, f"Nodes of group {group}"), group_variables)
        for group, group_variables in variables.items()
        if cluster.members.get(group)
    ]
    return sorted(files, key=lambda f: f.group)


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


def _installed_files(
    by_family: Mapping[str, Sequence[Artifact]], members: Mapping[str, frozenset[str]]
) -> tuple[dict[str, list[FileEntry]], dict[str, list[FileEntry]]]:
    """The install entries of the artifacts: inventory group -> those all its nodes
    receive, and host -> those meant for some of a group's nodes only (install.hosts),
    which go to each such node of the group, and nowhere else."""
    by_group: dict[str, list[FileEntry]] = {}
    by_node: dict[str, list[FileEntry]] = {}
    for family, artifacts in sorted(by_family.items()):
        for artifact in artifacts:
            install = artifact.install
            if install is None:
                continue
            entry = _install_entry(family, artifact, install)
            if install.hosts is None:
                by_group.setdefault(install.group, []).append(entry)
                continue
            in_group = members.get(install.group, frozenset())
            for host in install.hosts:
                if host in in_group:
                    by_node.setdefault(host, []).append(entry)
    return (
        {
            group: sorted(entries, key=lambda e: str(e["dest"]))
            for group, entries in by_group.items()
        },
        {host: sorted(entries, key=lambda e: str(e["dest"])) for host, entries in by_node.items()},
    )


def _install_entry(family: str, artifact: Artifact, install: Install) -> FileEntry:
    text = artifact.text
    entry: FileEntry = {
        "family": family,
        "src": artifact.path,  # in the tree; clustergen_files makes it absolute
        "dest": install.dest,
        "owner": install.owner,
        "group": install.file_group,
        "mode": f"0{install.mode:o}",
        "change": install.change.describe(),
    }
    if install.secret is None:
        # What the file must hash to on the node: the converge check compares it.
        entry["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    own_role = family in OWN_ROLE
    handler = handler_name(install, own_role)
    if handler is not None:
        entry["notify"] = handler
    if not own_role:
        entry["installed_by"] = FAMILIES_ROLE
    if install.start:
        entry["start"] = {"name": PurePosixPath(install.dest).name}
    if install.absent:
        entry["absent"] = list(install.absent)
    if install.secret is not None:
        entry["secret_key"] = install.secret.key
        entry["secret_variable"] = install.secret.variable
    return entry


def handler_name(install: Install, own_role: bool = True) -> str | None:
    """The handler a change notifies: roles name theirs 'Restart <service>',
    'Reconfigure <daemon>', 'Remount <file system>', 'Set_param <file system>',
    'Reboot', and 'Reformat' (which only reports: a reformat is never automatic). A
    family without a role of its own (outputs.OWN_ROLE) has the `families` role's one
    handler, which restarts the services its changed files name."""
    change = install.change
    if change.action == "nothing":
        return None
    if not own_role:
        if change.action != "restart":
            raise ValueError(
                f"{install.dest}: a family without a role of its own can only restart a "
                f"service on a change, not {change.describe()} (give it a role: OWN_ROLE)"
            )
        return FAMILIES_HANDLER
    if change.action in ("reboot", "reformat"):
        return change.action.capitalize()
    return f"{change.action.capitalize()} {change.service}"


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


def _all_vars(cluster: ResolvedCluster) -> GroupVars:
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
                f"{_FROM_INVENTORY}/versions.lock",
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
                f"{_FROM_INVENTORY}/{HOSTS_LIST}",
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
    then leaves a running GPU node's driver change to the Slurm-driven reboot."""
    reboot = cluster.spec.slurm.reboot
    if reboot is None or reboot.mode != "slurm":
        return []
    return [
        Variable(
            "clustergen_reboot_mode",
            "slurm.reboot.mode: Slurm reboots the nodes in service for a driver change",
            reboot.mode,
        )
    ]


def _file_list_vars() -> list[Variable]:
    """all.yml's way to the rendered files: the tree, and the lists a node receives."""
    return [
        Variable(
            "clustergen_tree",
            "the rendered tree: where the roles read the rendered files from",
            _FROM_INVENTORY,
        ),
        Variable(
            "clustergen_files",
            f"the rendered files this node receives: {FILE_LISTS}/groups/<group>.yml of "
            f"each of its groups and {FILE_LISTS}/hosts/<node>.yml, src absolute",
            _GATHER_FILES,
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
