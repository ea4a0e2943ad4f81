"""The resolved cluster: a valid spec turned, once, into what every output family reads.

Hosts with their profiles, roles and addresses; the controllers and compute nodes;
the inventory groups as name sets; the package pins. Families read this and never
expand a hostlist or derive a pin themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from clustergen.catalog.packages import (
    GPU_GROUP,
    LUSTRE_CLIENT_GROUP,
    NVSWITCH_GROUP,
    SLURM_GROUP,
    SLURM_ROLES,
    StackPins,
    hardware_group,
    role_group,
    stack_pins,
)
from clustergen.hosts import Host, controller_names, expand_hosts, hosts_by_name
from clustergen.model import Spec
from clustergen.model.nodes import KNOWN_ROLES


@dataclass(frozen=True)
class InventoryGroup:
    name: str
    hosts: tuple[str, ...]  # host names, in spec order
    children: tuple[str, ...]


@dataclass(frozen=True)
class Cluster:
    spec: Spec
    spec_name: str  # the spec file's base name, for the headers of rendered files
    hosts: tuple[Host, ...]
    controllers: tuple[str, ...]  # primary first
    pins: StackPins
    groups: tuple[InventoryGroup, ...]  # sorted by name

    @cached_property
    def by_name(self) -> dict[str, Host]:
        return hosts_by_name(list(self.hosts))

    @cached_property
    def compute(self) -> tuple[Host, ...]:
        """Slurm compute nodes, in spec order."""
        return tuple(host for host in self.hosts if host.is_slurm_compute)

    @cached_property
    def members(self) -> dict[str, frozenset[str]]:
        """Host names in each group, children included (as Ansible resolves them)."""
        by_name = {group.name: group for group in self.groups}
        resolved: dict[str, frozenset[str]] = {}

        def members(name: str) -> frozenset[str]:
            if name not in resolved:
                group = by_name[name]
                names = set(group.hosts)
                for child in group.children:
                    names |= members(child)
                resolved[name] = frozenset(names)
            return resolved[name]

        for group in self.groups:
            members(group.name)
        return resolved


def resolve(spec: Spec, spec_name: str) -> Cluster:
    hosts = tuple(expand_hosts(spec))
    return Cluster(
        spec=spec,
        spec_name=spec_name,
        hosts=hosts,
        controllers=tuple(controller_names(spec)),
        pins=stack_pins(spec.software),
        groups=inventory_groups(spec, hosts),
    )


def inventory_groups(spec: Spec, hosts: tuple[Host, ...]) -> tuple[InventoryGroup, ...]:
    """Role groups, hardware profile groups and the derived groups, sorted by name."""
    roles = list(dict.fromkeys([*KNOWN_ROLES, *spec.cluster.extra_roles]))
    groups = [
        InventoryGroup(role_group(role), tuple(h.name for h in hosts if role in h.roles), ())
        for role in roles
    ]
    groups += [
        InventoryGroup(
            hardware_group(name), tuple(h.name for h in hosts if h.hardware_name == name), ()
        )
        for name in spec.hardware
    ]
    gpu_profiles = [name for name, p in spec.hardware.items() if p.gpu is not None]
    nvswitch_profiles = [n for n in gpu_profiles if (gpu := spec.hardware[n].gpu) and gpu.nvswitch]
    lustre = spec.storage.lustre if spec.storage else None
    lustre_roles = lustre.mount.clients if lustre else []

    def derived(name: str, children: set[str]) -> InventoryGroup:
        return InventoryGroup(name, (), tuple(sorted(children)))

    groups += [
        derived(GPU_GROUP, {hardware_group(n) for n in gpu_profiles}),
        derived(NVSWITCH_GROUP, {hardware_group(n) for n in nvswitch_profiles}),
        derived(SLURM_GROUP, {role_group(r) for r in SLURM_ROLES}),
        derived(LUSTRE_CLIENT_GROUP, {role_group(r) for r in lustre_roles}),
    ]
    return tuple(sorted(groups, key=lambda g: g.name))
