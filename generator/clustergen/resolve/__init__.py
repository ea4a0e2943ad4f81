"""The resolved cluster: the spec turned, once, into what checks and output families read.

Hosts with their profiles, roles and addresses; the expanded members of the
controllers, partitions and switches; the inventory groups as name sets; the
package pins; the physical plan of racks and power, and the switch ports; the checks'
warnings, which validation hands over (the cluster never runs the checks, which read
it). Nothing else expands a hostlist, derives a pin or plans a rack.

Each part is computed on first use from the sections it reads, and kept. So the
same object serves twice: during validation it is tolerant (built over the valid
sections only; a check that needs an invalid section does not run, and reading an
absent section fails loudly), and the render of a valid spec reuses the parts the
checks already computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from clustergen.base.errors import Problem
from clustergen.catalog.architectures import CPU_ARCHES, arch_group
from clustergen.catalog.gpus import profile_cpu_arch
from clustergen.catalog.groups import (
    ANSIBLE_PULL_GROUP,
    DCGM_EXPORTER_GROUP,
    EXPORTERS_GROUP,
    GPU_GROUP,
    HOST_NETWORK_GROUP,
    LUSTRE_CLIENT_GROUP,
    LUSTRE_LDISKFS_GROUP,
    LUSTRE_SERVER_GROUP,
    LUSTRE_SERVER_ROLES,
    LUSTRE_ZFS_GROUP,
    NFS_CLIENT_GROUP,
    NFS_SERVER_GROUP,
    NODE_EXPORTER_GROUP,
    NVLINK_GROUP,
    NVSWITCH_GROUP,
    OPENSM_GROUP,
    RDMA_GROUP,
    SLURM_CONF_GROUP,
    SLURM_CONF_ROLES,
    SLURM_EXPORTER_GROUP,
    SLURM_GROUP,
    SLURM_ROLES,
    hardware_group,
    nvlink_domain_group,
    role_group,
)
from clustergen.catalog.monitoring import slurm_metrics_kind
from clustergen.catalog.packages import PMIX_FEATURE, StackPins, derived_pins, with_overrides
from clustergen.catalog.switches import INFINIBAND_SWITCH_PORTS, switch_radix
from clustergen.catalog.versions import parse_version
from clustergen.model import Spec
from clustergen.model.common import expand_hostlist
from clustergen.model.hardware import HardwareProfile
from clustergen.model.monitoring import Monitoring, SlurmMetricsKind
from clustergen.model.network import Network
from clustergen.model.nodes import KNOWN_ROLES
from clustergen.spec.cable_plan import SwitchPorts, switch_ports
from clustergen.spec.hosts import Host, expand_hosts, hosts_by_name
from clustergen.spec.physical_plan import RackPlan, rack_plans


@dataclass(frozen=True)
class InventoryGroup:
    name: str
    hosts: tuple[str, ...]  # host names, in spec order
    children: tuple[str, ...]


Members = tuple[str, ...]


@dataclass(frozen=True)
class ResolvedDomain:
    """A multi-node NVLink domain and its trays."""

    name: str
    nodes: Members  # in the order listed (or racked)
    index: int | None  # in network.nvlink_domains; None for a rack's default domain


def _expand(expression: str | None) -> Members:
    return expand_hostlist(expression) if expression else ()


class ResolvedCluster:
    def __init__(self, spec: Spec, spec_name: str) -> None:
        self.spec = spec
        self.spec_name = spec_name  # the spec file's base name, for messages (never rendered)
        # The checks' warnings over the whole spec, for the facility overview, from the run
        # validation reported: validation hands them over (validate.validate_cluster), so the
        # cluster never runs the checks, which read it. Empty for a cluster not validated.
        self.warnings: tuple[Problem, ...] = ()

    # --- nodes and hardware ----------------------------------------------------------

    @cached_property
    def hosts(self) -> tuple[Host, ...]:
        """Every node, in spec order (reads nodes and hardware)."""
        return tuple(expand_hosts(self.spec))

    @cached_property
    def by_name(self) -> dict[str, Host]:
        """Name -> host; the first of duplicate names wins (a check reports the rest)."""
        return hosts_by_name(list(self.hosts))

    @cached_property
    def compute(self) -> tuple[Host, ...]:
        """Slurm compute nodes, in spec order."""
        return tuple(host for host in self.hosts if host.is_slurm_compute)

    # --- hostlists of the other sections, each expanded once ------------------------

    @cached_property
    def controller_entries(self) -> tuple[Members, ...]:
        """slurm.controllers, one tuple of names per entry."""
        return tuple(_expand(entry) for entry in self.spec.slurm.controllers)

    @cached_property
    def controllers(self) -> Members:
        """Controller names, primary first."""
        return tuple(name for entry in self.controller_entries for name in entry)

    @cached_property
    def partition_nodes(self) -> tuple[Members, ...]:
        """Members of each slurm.partitions entry, by index."""
        return tuple(_expand(partition.nodes) for partition in self.spec.slurm.partitions)

    @cached_property
    def switch_nodes(self) -> tuple[Members, ...]:
        """Nodes of each network.fabric.switches entry, by index (empty for non-leaves)."""
        fabric = self.spec.network.fabric
        return tuple(_expand(s.nodes) for s in fabric.switches) if fabric else ()

    @cached_property
    def switch_children(self) -> tuple[Members, ...]:
        """Child switches of each network.fabric.switches entry, by index."""
        fabric = self.spec.network.fabric
        return tuple(_expand(s.switches) for s in fabric.switches) if fabric else ()

    @cached_property
    def nvlink_domains(self) -> tuple[ResolvedDomain, ...]:
        """The multi-node NVLink domains (reads network, racks, nodes and hardware): those
        listed, or else one per rack of its trays (nodes whose profile has
        gpu.nvlink_domain), named after the rack."""
        listed = self.spec.network.nvlink_domains
        if listed:
            return tuple(
                ResolvedDomain(d.name, _expand(d.nodes), index) for index, d in enumerate(listed)
            )
        trays = {h.name for h in self.hosts if h.profiled and is_tray(h)}
        if not trays:
            return ()
        domains = []
        for rack in self.spec.racks:
            members = tuple(d.node for d in rack.devices if d.node is not None and d.node in trays)
            if members:
                domains.append(ResolvedDomain(rack.name, members, None))
        return tuple(domains)

    # --- the physical layer ---------------------------------------------------------

    @cached_property
    def rack_plans(self) -> tuple[RackPlan, ...]:
        """Every rack's devices, PSUs and feed loads (reads racks, nodes and hardware): the
        power checks judge it and the facility sheets print it."""
        return rack_plans(self.spec, self.by_name)

    @cached_property
    def switch_ports(self) -> tuple[SwitchPorts, ...]:
        """What each fabric switch has cabled to it (reads network, nodes and hardware)."""
        return switch_ports(
            self.spec,
            switch_radix,
            self.by_name,
            self.switch_nodes,
            self.switch_children,
            INFINIBAND_SWITCH_PORTS,
        )

    # --- packages -------------------------------------------------------------------

    @cached_property
    def derived_pins(self) -> StackPins:
        """The catalog's packages and versions for software, before overrides."""
        # Read from the hardware alone: a spec that failed its shape checks has no more.
        hardware = getattr(self.spec, "hardware", None) or {}
        trays = any(p.gpu is not None and p.gpu.nvlink_domain for p in hardware.values())
        network = getattr(self.spec, "network", None)
        rdma = bool(rdma_profiles(hardware, network))
        with_nodes = [*([NVLINK_GROUP] if trays else []), *([RDMA_GROUP] if rdma else [])]
        with_nodes += [OPENSM_GROUP] if opensm_nodes(network) else []
        slurm = getattr(self.spec, "slurm", None)
        features = frozenset([PMIX_FEATURE] if slurm is not None and slurm.mpi == "pmix" else [])
        monitoring = getattr(self.spec, "monitoring", None)
        with_nodes += exporter_groups(self.spec, monitoring, hardware)
        with_nodes += [ANSIBLE_PULL_GROUP] if pull_mode(self.spec) else []
        return derived_pins(self.spec.software, frozenset(with_nodes), features, monitoring)

    @cached_property
    def pins(self) -> StackPins:
        """Packages and exact versions per concern, software.packages applied."""
        return with_overrides(self.derived_pins, self.spec.software.packages)

    # --- inventory groups -----------------------------------------------------------

    @cached_property
    def groups(self) -> tuple[InventoryGroup, ...]:
        """Role groups, hardware profile groups and the derived groups (a group per NVLink
        domain among them), sorted by name."""
        groups = [*self._spec_groups]
        groups += [InventoryGroup(name, d.nodes, ()) for name, d in self.nvlink_domain_groups]
        return tuple(sorted(groups, key=lambda g: g.name))

    @cached_property
    def _spec_groups(self) -> tuple[InventoryGroup, ...]:
        """The groups the spec's roles, profiles and sections make (all but the domains')."""
        return inventory_groups(self.spec, self.hosts)

    @cached_property
    def nvlink_domain_groups(self) -> tuple[tuple[str, ResolvedDomain], ...]:
        """Each NVLink domain with its inventory group's name (nvlink_domain_<name>), in
        the order of the names: the order site.yml's driver roll-out takes them."""
        taken = {group.name for group in self._spec_groups}
        named = []
        for index, domain in enumerate(self.nvlink_domains, start=1):
            name = nvlink_domain_group(domain.name)
            if name in taken:  # two names alike once made group names (rack-1, rack_1)
                name = f"{name}_{index}"
            taken.add(name)
            named.append((name, domain))
        return tuple(sorted(named, key=lambda pair: pair[0]))

    @cached_property
    def nfs_clients(self) -> tuple[Members, ...]:
        """Per storage.nfs mount, the nodes that mount it, in spec order."""
        return nfs_mount_clients(self.spec, self.hosts)

    @cached_property
    def lustre_clients(self) -> frozenset[str]:
        """The nodes of the roles that mount Lustre (storage.lustre.mount.clients)."""
        lustre = self.spec.storage.lustre if self.spec.storage else None
        if lustre is None:
            return frozenset()
        roles = set(lustre.mount.clients)
        return frozenset(h.name for h in self.hosts if roles.intersection(h.roles))

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


def is_tray(host: Host) -> bool:
    """A compute tray of a multi-node NVLink domain (its profile has gpu.nvlink_domain)."""
    gpu = host.hardware.gpu
    return gpu is not None and gpu.nvlink_domain is not None


def resolve(spec: Spec, spec_name: str) -> ResolvedCluster:
    return ResolvedCluster(spec, spec_name)


def rdma_profiles(hardware: Mapping[str, HardwareProfile], network: Network | None) -> list[str]:
    """The hardware profiles whose nodes run the RDMA stack: those with fabric HCAs (or
    topology HCAs), where the spec has a fabric (network.fabric or network.storage)."""
    if network is None or (network.fabric is None and network.storage is None):
        return []
    return [
        name
        for name, profile in hardware.items()
        if profile.fabric_hcas or (profile.topology is not None and profile.topology.hcas)
    ]


def host_network_nodes(network: Network, hosts: tuple[Host, ...]) -> Members:
    """The nodes roles/host_network configures: those with an interface of the spec to
    write (network.hosts), and those with RoCE compute HCAs, which get the RoCE QoS."""
    config = network.hosts
    fabric, storage, front = network.fabric, network.storage, network.frontend
    roce = fabric is not None and fabric.ethernet
    found = []
    for host in hosts:
        if not host.profiled:
            continue
        written = config.configure and bool(
            (config.management and host.management_ip)
            or host.fabric_addresses(fabric)
            or host.storage_addresses(storage)
            or host.frontend_address(front)
        )
        if written or (roce and host.hardware.compute_hcas()):
            found.append(host.name)
    return tuple(found)


def opensm_nodes(network: Network | None) -> tuple[str, ...]:
    """The nodes that run OpenSM for network.fabric, primary first; none unless its
    subnet_manager says kind opensm."""
    fabric = network.fabric if network is not None else None
    manager = fabric.subnet_manager if fabric is not None else None
    if manager is None or manager.kind != "opensm":
        return ()
    return tuple(manager.nodes)


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

    tray_profiles = {
        hardware_group(n)
        for n in gpu_profiles
        if (gpu := spec.hardware[n].gpu) and gpu.nvlink_domain
    }
    if tray_profiles:  # only then: clusters without NVLink domains keep their inventory
        groups.append(derived(NVLINK_GROUP, tray_profiles))
    rdma = rdma_profiles(spec.hardware, spec.network)
    if rdma:  # only then: Ethernet-only clusters keep their inventory
        groups.append(derived(RDMA_GROUP, {hardware_group(n) for n in rdma}))
    sm_nodes = set(opensm_nodes(spec.network))
    if sm_nodes:  # only with kind opensm
        groups.append(
            InventoryGroup(OPENSM_GROUP, tuple(h.name for h in hosts if h.name in sm_nodes), ())
        )
    groups += [
        derived(GPU_GROUP, {hardware_group(n) for n in gpu_profiles}),
        derived(NVSWITCH_GROUP, {hardware_group(n) for n in nvswitch_profiles}),
        derived(SLURM_GROUP, {role_group(r) for r in SLURM_ROLES}),
        derived(LUSTRE_CLIENT_GROUP, {role_group(r) for r in lustre_roles}),
        derived(
            LUSTRE_SERVER_GROUP, {role_group(r) for r in LUSTRE_SERVER_ROLES} if lustre else set()
        ),
    ]
    # Each backend's OSD on the service nodes of the targets that use it, in host order.
    for group, backend in ((LUSTRE_LDISKFS_GROUP, "ldiskfs"), (LUSTRE_ZFS_GROUP, "zfs")):
        serving = (
            {
                name
                for target in lustre.targets()
                if lustre.backend_of(target) == backend
                for name in (target.node, *target.failover)
            }
            if lustre
            else set()
        )
        groups.append(InventoryGroup(group, tuple(h.name for h in hosts if h.name in serving), ()))
    slurm = getattr(spec, "slurm", None)  # validation's tolerant spec may lack it
    if slurm is not None and slurm.configless:  # only then: others keep their inventory
        groups.append(derived(SLURM_CONF_GROUP, {role_group(r) for r in SLURM_CONF_ROLES}))
    groups += nfs_groups(spec, hosts)
    configured = host_network_nodes(spec.network, hosts)
    if configured:  # only then: a spec without fabric, storage or front end keeps its inventory
        groups.append(InventoryGroup(HOST_NETWORK_GROUP, configured, ()))
    groups += monitoring_groups(spec, hosts)
    if pull_mode(spec):  # only then: push-only specs keep their inventory
        groups.append(derived(ANSIBLE_PULL_GROUP, {hardware_group(n) for n in spec.hardware}))
    groups += arch_groups(spec, hosts)
    return tuple(sorted(groups, key=lambda g: g.name))


def pull_mode(spec: Spec) -> bool:
    """Whether the spec has ansible.pull (read where the section is valid)."""
    ansible = getattr(spec, "ansible", None)
    return ansible is not None and ansible.pull is not None


def slurm_metrics(spec: Spec) -> SlurmMetricsKind | None:
    """How Slurm's metrics are served (monitoring.slurm's kind or its default for the
    release and slurm.isolation.private_data); None without monitoring.slurm. Read from
    the software and slurm sections only where they are valid (validation's tolerant
    spec): without the slurm section, PrivateData is taken as set, its default."""
    monitoring = getattr(spec, "monitoring", None)
    if monitoring is None or monitoring.slurm is None:
        return None
    slurm = getattr(spec, "slurm", None)
    private = slurm.isolation.private_data if slurm is not None else True
    return slurm_metrics_kind(monitoring.slurm, parse_version(spec.software.slurm), private)


def exporter_groups(
    spec: Spec, monitoring: Monitoring | None, hardware: Mapping[str, HardwareProfile]
) -> list[str]:
    """The exporters' groups the spec has: node_exporter with monitoring.node_exporter,
    dcgm_exporter with monitoring.dcgm_exporter and GPU nodes, slurm_exporter where Slurm's
    metrics come from the exporter."""
    if monitoring is None:
        return []
    groups = [NODE_EXPORTER_GROUP] if monitoring.node_exporter is not None else []
    gpus = any(p.gpu is not None for p in hardware.values())
    groups += [DCGM_EXPORTER_GROUP] if monitoring.dcgm_exporter is not None and gpus else []
    groups += [SLURM_EXPORTER_GROUP] if slurm_metrics(spec) == "exporter" else []
    return groups


def monitoring_groups(spec: Spec, hosts: tuple[Host, ...]) -> list[InventoryGroup]:
    """node_exporter (every node), dcgm_exporter (the GPU nodes) and slurm_exporter (the
    controllers), each only where the spec asks for it: others keep their inventory."""
    present = exporter_groups(spec, spec.monitoring, spec.hardware)
    members = {
        NODE_EXPORTER_GROUP: tuple(h.name for h in hosts),
        DCGM_EXPORTER_GROUP: tuple(h.name for h in hosts if spec.hardware[h.hardware_name].gpu),
        SLURM_EXPORTER_GROUP: tuple(h.name for h in hosts if "slurm_controller" in h.roles),
    }
    groups = [InventoryGroup(group, members[group], ()) for group in present]
    if present:  # their parent, site.yml's monitoring play
        groups.append(InventoryGroup(EXPORTERS_GROUP, (), tuple(sorted(present))))
    return groups


def nfs_mount_clients(spec: Spec, hosts: tuple[Host, ...]) -> tuple[Members, ...]:
    """Per storage.nfs mount, the nodes of its roles and of its hostlist, in spec order
    (a name that is no node is left out; checks.nfs reports it)."""
    mounts = spec.storage.nfs if spec.storage else []
    selected = []
    for mount in mounts:
        named = set(_expand(mount.nodes))
        roles = set(mount.roles)
        selected.append(
            tuple(h.name for h in hosts if h.name in named or roles.intersection(h.roles))
        )
    return tuple(selected)


def nfs_groups(spec: Spec, hosts: tuple[Host, ...]) -> list[InventoryGroup]:
    """nfs_client (every node that mounts NFS) and nfs_server (the nodes of the spec that
    export a mount's path), only where the spec has NFS mounts: others keep their
    inventory."""
    mounts = spec.storage.nfs if spec.storage else []
    if not mounts:
        return []
    clients = {name for selected in nfs_mount_clients(spec, hosts) for name in selected}
    servers = {mount.server for mount in mounts}
    return [
        InventoryGroup(NFS_CLIENT_GROUP, tuple(h.name for h in hosts if h.name in clients), ()),
        InventoryGroup(NFS_SERVER_GROUP, tuple(h.name for h in hosts if h.name in servers), ()),
    ]


def arch_groups(spec: Spec, hosts: tuple[Host, ...]) -> list[InventoryGroup]:
    """One group per CPU architecture, of the hardware profile groups, where any node is
    not x86_64; none in an all-x86_64 cluster, whose inventory stays as it was."""
    arches = {name: profile_cpu_arch(profile) for name, profile in spec.hardware.items()}
    used = {arches[h.hardware_name] for h in hosts if h.hardware_name in arches}
    if used <= {"x86_64"}:
        return []
    return [
        InventoryGroup(
            arch_group(arch),
            (),
            tuple(sorted(hardware_group(n) for n, a in arches.items() if a == arch)),
        )
        for arch in CPU_ARCHES
    ]
