"""Ansible: inventory/hosts.yml, inventory/group_vars/*.yml and versions.lock.

site.yml and the roles at the repository root consume these. Every node gets the
packages of each inventory group it is in; the group_vars carry the pins and the
paths of the rendered config files, versions.lock the same pins for review and for
the drift report (verify.yml). No secret is rendered: slurmdbd's password stays a
vault variable reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import jinja2

from clustergen.catalog.packages import (
    CONCERN_GROUP,
    CONCERN_TITLE,
    CONCERNS,
    GPU_GROUP,
    LUSTRE_CLIENT_GROUP,
    NVSWITCH_GROUP,
    SLURM_GROUP,
    SLURM_ROLES,
    Pins,
    StackPins,
    hardware_group,
    role_group,
    stack_pins,
)
from clustergen.derive import EPILOG_NAME, SLURM_ETC, Context, compress
from clustergen.hosts import Host
from clustergen.model.nodes import KNOWN_ROLES
from clustergen.render import RenderedFile, render_template

# Rendered files are found from the inventory, wherever the output tree is copied.
_FROM_INVENTORY = "{{ inventory_dir }}/.."
# The variable the slurm role reads the database password from.
_ROLE_PASSWORD_VARIABLE = "vault_slurmdbd_storage_pass"
# Slurm config files every Slurm node reads (besides slurmdbd.conf and the epilog).
_SLURM_CONF = "slurm.conf"


@dataclass(frozen=True)
class InventoryGroup:
    name: str
    hosts: list[str]  # host names or Ansible ranges such as gpu[01:08]
    children: list[str]


@dataclass(frozen=True)
class Variable:
    """One group variable: a scalar, a flat mapping, or a list of flat mappings."""

    name: str
    comment: str
    value: str | bool | dict[str, str] | list[dict[str, str | bool]]


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


def render(context: Context, env: jinja2.Environment) -> dict[str, RenderedFile]:
    pins = stack_pins(context.spec.software)
    groups = inventory_groups(context)
    members = group_members(groups)
    files = {
        "inventory/hosts.yml": RenderedFile(
            render_template(
                env, "ansible/hosts.yml.j2", context, hosts=context.hosts, groups=groups
            )
        ),
        "versions.lock": RenderedFile(
            render_template(
                env,
                "ansible/versions.lock.j2",
                context,
                family=pins.family,
                lock_groups=lock_groups(pins, members, context.hosts),
            )
        ),
    }
    for group_vars in all_group_vars(context, pins, members):
        files[f"inventory/group_vars/{group_vars.group}.yml"] = RenderedFile(
            render_template(env, "ansible/group_vars.yml.j2", context, vars=group_vars)
        )
    return files


# --- inventory groups -------------------------------------------------------------


def inventory_groups(context: Context) -> list[InventoryGroup]:
    """Role groups, hardware profile groups and the derived groups, sorted by name."""
    spec = context.spec
    roles = list(dict.fromkeys([*KNOWN_ROLES, *spec.cluster.extra_roles]))
    groups = [
        InventoryGroup(
            role_group(role), host_patterns([h.name for h in context.hosts if role in h.roles]), []
        )
        for role in roles
    ]
    groups += [
        InventoryGroup(
            hardware_group(name),
            host_patterns([h.name for h in context.hosts if h.hardware_name == name]),
            [],
        )
        for name in spec.hardware
    ]
    gpu_profiles = [name for name, p in spec.hardware.items() if p.gpu is not None]
    nvswitch_profiles = [n for n in gpu_profiles if (gpu := spec.hardware[n].gpu) and gpu.nvswitch]
    lustre = spec.storage.lustre if spec.storage else None
    lustre_roles = lustre.mount.clients if lustre else []
    groups += [
        InventoryGroup(GPU_GROUP, [], sorted(hardware_group(n) for n in gpu_profiles)),
        InventoryGroup(NVSWITCH_GROUP, [], sorted(hardware_group(n) for n in nvswitch_profiles)),
        InventoryGroup(SLURM_GROUP, [], sorted(role_group(r) for r in SLURM_ROLES)),
        InventoryGroup(LUSTRE_CLIENT_GROUP, [], sorted({role_group(r) for r in lustre_roles})),
    ]
    return sorted(groups, key=lambda g: g.name)


def group_members(groups: list[InventoryGroup]) -> dict[str, set[str]]:
    """Host names in each group, children included (as Ansible resolves them)."""
    by_name = {group.name: group for group in groups}

    def members(name: str) -> set[str]:
        group = by_name[name]
        names = {host for pattern in group.hosts for host in expand_pattern(pattern)}
        for child in group.children:
            names |= members(child)
        return names

    return {name: members(name) for name in by_name}


_TRAILING_NUMBER = re.compile(r"^(?P<head>.*?)(?P<number>\d+)(?P<tail>\D*)$")
_RANGE = re.compile(r"^(?P<head>[^\[]*)\[(?P<begin>\d+):(?P<end>\d+)\](?P<tail>.*)$")


def expand_pattern(pattern: str) -> list[str]:
    """An Ansible host range as Ansible expands it: zero padding follows the begin value."""
    match = _RANGE.match(pattern)
    if match is None:
        return [pattern]
    begin, end = match["begin"], match["end"]
    padded = begin.startswith("0") and len(begin) > 1
    if padded and len(begin) != len(end):
        raise ValueError(f"Ansible rejects {pattern}: padded ranges need equal widths")
    numbers = range(int(begin), int(end) + 1)
    return [
        f"{match['head']}{str(n).zfill(len(begin)) if padded else n}{match['tail']}"
        for n in numbers
    ]


def host_patterns(names: list[str]) -> list[str]:
    """Names with runs of consecutive numbers folded into Ansible ranges (gpu[01:08]).

    A run is folded only when Ansible's own expansion of the range gives back exactly
    the run, so padding quirks (gpu9, gpu10 or gpu08, gpu100) never change a host.
    """
    patterns: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= 2:
            first = _TRAILING_NUMBER.match(run[0])
            last = _TRAILING_NUMBER.match(run[-1])
            assert first is not None and last is not None
            pattern = f"{first['head']}[{first['number']}:{last['number']}]{first['tail']}"
            try:
                if expand_pattern(pattern) == run:
                    patterns.append(pattern)
                    run.clear()
                    return
            except ValueError:
                pass
        patterns.extend(run)
        run.clear()

    for name in names:
        if run and not _continues(run[-1], name):
            flush()
        run.append(name)
    flush()
    return patterns


def _continues(previous: str, name: str) -> bool:
    a, b = _TRAILING_NUMBER.match(previous), _TRAILING_NUMBER.match(name)
    return (
        a is not None
        and b is not None
        and (a["head"], a["tail"]) == (b["head"], b["tail"])
        and int(b["number"]) == int(a["number"]) + 1
        and (len(a["number"]) == len(b["number"]) or not a["number"].startswith("0"))
    )


# --- pins per group ---------------------------------------------------------------


def group_pins(pins: StackPins) -> dict[str, Pins]:
    """Inventory group -> the packages its nodes get, from every concern it carries."""
    by_group: dict[str, Pins] = {}
    for concern in CONCERNS:
        by_group.setdefault(CONCERN_GROUP[concern], {}).update(pins.by_concern[concern])
    return by_group


def lock_groups(
    pins: StackPins, members: dict[str, set[str]], hosts: list[Host]
) -> list[LockGroup]:
    """Groups that have nodes and packages, sorted by name, packages sorted by name."""
    order = {host.name: index for index, host in enumerate(hosts)}
    groups = []
    for name, packages in sorted(group_pins(pins).items()):
        nodes = sorted(members.get(name, set()), key=order.__getitem__)
        if nodes and packages:
            groups.append(LockGroup(name, compress(nodes), dict(sorted(packages.items()))))
    return groups


# --- group_vars -------------------------------------------------------------------


def all_group_vars(
    context: Context, pins: StackPins, members: dict[str, set[str]]
) -> list[GroupVars]:
    """One file per group that has nodes and something to set, sorted by group name."""
    files = [_all_vars(context, pins)]
    by_concern = pins.by_concern
    software = context.spec.software
    slurm = context.slurm

    def packages(concern: str) -> Variable:
        role = "slurm" if concern.startswith("slurm_") else concern
        pins = by_concern[concern]
        title = CONCERN_TITLE[concern]
        comment = (
            f"{title}: exact versions; role {role} installs and holds them"
            if pins
            else f"{title}: not in the spec's software block, nothing installed"
        )
        return Variable(f"{concern}_packages", comment, pins)

    files.append(
        GroupVars(
            GPU_GROUP,
            "The pinned NVIDIA stack on every GPU node",
            [
                Variable(
                    "nvidia_driver_version",
                    "what nvidia-smi must report after the driver rolls out",
                    software.nvidia_driver,
                ),
                *(packages(c) for c in ("nvidia_driver", "cuda", "nccl", "cudnn", "dcgm")),
            ],
        )
    )
    if by_concern["fabric_manager"]:
        files.append(
            GroupVars(
                NVSWITCH_GROUP,
                "NVIDIA fabric manager on NVSwitch nodes (equal to the driver)",
                [packages("fabric_manager")],
            )
        )

    config_files = {
        _SLURM_CONF: f"{_FROM_INVENTORY}/slurm/{_SLURM_CONF}",
        "cgroup.conf": f"{_FROM_INVENTORY}/slurm/cgroup.conf",
    }
    if slurm.gres:
        config_files["gres.conf"] = f"{_FROM_INVENTORY}/slurm/gres.conf"
    if slurm.topology:
        config_files["topology.conf"] = f"{_FROM_INVENTORY}/slurm/topology.conf"
    files.append(
        GroupVars(
            SLURM_GROUP,
            "Slurm configuration files, as rendered (copied, never re-templated)",
            [
                Variable(
                    "slurm_config_dir",
                    "where the Slurm daemons read their configuration",
                    SLURM_ETC,
                ),
                Variable(
                    "slurm_config_files",
                    "file name under slurm_config_dir -> rendered file",
                    dict(sorted(config_files.items())),
                ),
            ],
        )
    )

    compute_vars = [packages("slurm_compute")]
    if slurm.epilog_checks is not None:
        compute_vars += [
            Variable(
                "slurm_epilog_src",
                "GPU health check run after every job (slurm.health_check)",
                f"{_FROM_INVENTORY}/slurm/{EPILOG_NAME}",
            ),
            Variable("slurm_epilog_dest", "slurm.conf's Epilog=", f"{SLURM_ETC}/{EPILOG_NAME}"),
        ]
    files.append(GroupVars("compute", "Slurm compute nodes", compute_vars))
    files.append(GroupVars("slurm_controller", "Slurm controllers", [packages("slurm_controller")]))
    files.append(GroupVars("login", "Login nodes", [packages("slurm_login")]))

    if slurm.slurmdbd is not None:
        dbd_vars = [
            packages("slurm_dbd"),
            Variable(
                "slurm_dbd_config_src",
                "slurmdbd.conf without StoragePass; the role appends it from the vault",
                f"{_FROM_INVENTORY}/slurm/slurmdbd.conf",
            ),
        ]
        password = slurm.password_variable
        if password is not None and password != _ROLE_PASSWORD_VARIABLE:
            dbd_vars.append(
                Variable(
                    _ROLE_PASSWORD_VARIABLE,
                    f"a reference only: the password lives in the vault variable {password}",
                    "{{ " + password + " }}",
                )
            )
        files.append(GroupVars("slurm_dbd", "Slurm accounting (slurmdbd)", dbd_vars))

    if by_concern["lustre_client"]:
        files.append(GroupVars(LUSTRE_CLIENT_GROUP, "Lustre clients", [packages("lustre_client")]))

    kept = [f for f in files if f.group == "all" or members.get(f.group)]
    return sorted(kept, key=lambda f: f.group)


def _all_vars(context: Context, pins: StackPins) -> GroupVars:
    software = context.spec.software
    repositories: list[dict[str, str | bool]] = []
    for repository in software.repositories:
        entry: dict[str, str | bool] = {"name": repository.name, "url": repository.url}
        if pins.family == "apt":
            entry["suite"] = "/"  # NVIDIA's and most vendor apt repositories are flat
        if repository.key_url is not None:
            entry["key_url"] = repository.key_url
        else:
            entry["trusted"] = True
        repositories.append(entry)
    return GroupVars(
        "all",
        "Every node",
        [
            Variable(
                "clustergen_package_family",
                f"from software.os ({software.os}): how roles pin and hold",
                pins.family,
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
        ],
    )
