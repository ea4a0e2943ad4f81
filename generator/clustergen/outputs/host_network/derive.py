"""Each node's interfaces as the spec names them, and the RoCE QoS of each profile.

Addresses come from the host table (hosts.Host.fabric_addresses, storage_addresses,
frontend_address): the derivation the inventory and LNet use, never a second one. Only
interfaces the spec names get a file; the management interface only with
network.hosts.management (docs/networks.md#host-network-configuration).
"""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass

from clustergen.model.network import (
    ETHERNET_JUMBO_MTU,
    ETHERNET_MTU,
    IPOIB_DATAGRAM_MTU,
    Fabric,
    HostEthernet,
    Route,
)
from clustergen.resolve import ResolvedCluster
from clustergen.resolve.nccl_settings import settings_for
from clustergen.spec.hosts import Host, InterfaceAddress

# Policy routing tables (ip-rule(8)): rail r of the compute fabric is table 100 + r, storage
# interface j (1-based) 200 + j; the rule's priority is its table number, ahead of the
# kernel's main-table rule at 32766. 1-252 are free for sites (/etc/iproute2/rt_tables:
# 253 default, 254 main, 255 local).
FABRIC_TABLES = 100
STORAGE_TABLES = 200


@dataclass(frozen=True)
class HostRoute:
    to: str
    via: str | None  # None: on-link (the rail subnet's own route in its table)


@dataclass(frozen=True)
class HostInterface:
    netdev: str
    address: str  # 10.20.0.11/19
    network: str  # the spec's network: management, fabric, storage, frontend
    kind: str  # infiniband (IPoIB) or ethernet
    mtu: int
    gateway: str | None  # the default route (management only)
    routes: tuple[HostRoute, ...]
    table: int | None  # per-interface source routing: its table, its rule's priority
    subnet: str  # the (rail) subnet of its address

    @property
    def ip(self) -> str:
        return self.address.partition("/")[0]


@dataclass(frozen=True)
class HostLink:
    """One netdev of a node with every address the spec gives it, in network order: one
    NIC may carry several networks (management and fabric on a one-NIC RoCE node), and
    its file then holds all of them, since a netdev matches one file."""

    netdev: str
    addresses: tuple[HostInterface, ...]
    # The required NFS mounts of the node that reach their server through this link
    # (mounts_over): it then holds up network-online.target, which they start after.
    holds_mounts: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.addresses[0].kind

    @property
    def mtu(self) -> int:
        return self.addresses[0].mtu  # one per netdev (shared_mtu)

    @property
    def networks(self) -> str:
        return ", ".join(dict.fromkeys(f"network.{a.network}" for a in self.addresses))

    @property
    def gateway(self) -> str | None:
        return next((a.gateway for a in self.addresses if a.gateway), None)

    @property
    def carries_management(self) -> bool:
        """The node's way in: it holds up boot (network-online) like the distribution's."""
        return any(a.network == "management" for a in self.addresses)

    @property
    def required_for_online(self) -> bool:
        """Whether network-online.target waits for it: the management link, and a link a
        required mount needs; any other fabric link that is down does not hold up boot."""
        return self.carries_management or bool(self.holds_mounts)


@dataclass(frozen=True)
class NodeNetwork:
    node: str
    interfaces: tuple[HostInterface, ...]

    @property
    def links(self) -> tuple[HostLink, ...]:
        """The interfaces by netdev, in the order each netdev first appears."""
        by_netdev: dict[str, list[HostInterface]] = {}
        for i in self.interfaces:
            by_netdev.setdefault(i.netdev, []).append(i)
        return tuple(HostLink(netdev, tuple(found)) for netdev, found in by_netdev.items())


def default_mtu(network: HostEthernet | Fabric) -> int:
    """The spec's MTU, else the one an admin picks: 4092 for IPoIB (datagram mode), 9000
    on RoCE, 1500 on Ethernet."""
    if network.mtu is not None:
        return network.mtu
    if isinstance(network, Fabric):
        return IPOIB_DATAGRAM_MTU if network.type == "infiniband" else ETHERNET_JUMBO_MTU
    return ETHERNET_MTU


def _interfaces(
    addresses: tuple[InterfaceAddress, ...],
    name: str,
    network: HostEthernet | Fabric,
    first_table: int,
) -> list[HostInterface]:
    """One network's interfaces of a node. Several RoCE interfaces on one network get a
    table each: `from <address> lookup <table>` makes what a rail's address sends leave
    that rail's NIC, with the rail subnet's route and the network's routes of that rail
    in its table (NVIDIA's multi-rail RoCE hosts; Linux would otherwise answer and send
    from any interface, docs/networks.md)."""
    kind = (
        "infiniband" if isinstance(network, Fabric) and network.type == "infiniband" else "ethernet"
    )
    policy = kind == "ethernet" and isinstance(network, Fabric) and len(addresses) > 1
    found = []
    for index, a in enumerate(addresses, start=1):
        subnet = ipaddress.IPv4Network(f"{a.address}/{a.prefix}", strict=False)
        routes = _routes_in(network.routes, subnet)
        table = first_table + index if policy else None
        if table is not None:
            routes = (HostRoute(str(subnet), None), *routes)
        found.append(
            HostInterface(
                a.netdev,
                str(a),
                name,
                kind,
                default_mtu(network),
                None,
                routes,
                table,
                str(subnet),
            )
        )
    return found


def _routes_in(routes: list[Route], subnet: ipaddress.IPv4Network) -> tuple[HostRoute, ...]:
    """The network's routes whose next hop lies in this interface's subnet."""
    return tuple(HostRoute(r.to, r.via) for r in routes if ipaddress.IPv4Address(r.via) in subnet)


def _management(cluster: ResolvedCluster, host: Host, shared: bool) -> list[HostInterface]:
    """The management address, when network.hosts.management asks for it or when its
    netdev also carries a network clustergen configures (`shared`): the netdev's one
    file then holds it too, or the node would lose its way in."""
    management = cluster.spec.network.management
    wanted = cluster.spec.network.hosts.management or shared
    if not wanted or host.management_ip is None:
        return []
    prefix = int(management.cidr.rpartition("/")[2])
    address = InterfaceAddress(host.hardware.interfaces.management, host.management_ip, prefix)
    (interface,) = _interfaces((address,), "management", management, 0)
    return [
        HostInterface(**{**interface.__dict__, "gateway": management.gateway}),
    ]


def node_network(cluster: ResolvedCluster, host: Host) -> NodeNetwork:
    """The node's interfaces the spec names, management first (when configured), then
    the compute fabric's in rail order, the storage interfaces and the front end."""
    network = cluster.spec.network
    others: list[HostInterface] = []
    if network.fabric is not None:
        found = host.fabric_addresses(network.fabric)
        others += _interfaces(found, "fabric", network.fabric, FABRIC_TABLES)
    if network.storage is not None:
        found = host.storage_addresses(network.storage)
        others += _interfaces(found, "storage", network.storage, STORAGE_TABLES)
    front = host.frontend_address(network.frontend)
    if network.frontend is not None and front is not None:
        others += _interfaces((front,), "frontend", network.frontend, 0)
    shared = host.hardware.interfaces.management in {i.netdev for i in others}
    interfaces = [*_management(cluster, host, shared), *others]
    return NodeNetwork(host.name, tuple(_one_mtu_per_netdev(cluster, interfaces)))


def shared_mtu(cluster: ResolvedCluster, networks: list[str]) -> int:
    """The MTU of a netdev carrying these networks: the one MTU the spec sets among them
    (checks.host_network refuses two that differ), else the largest default (a RoCE
    fabric's 9000 beside management's 1500: the switch port carries jumbo frames for
    the fabric anyway)."""
    sections: list[HostEthernet | Fabric] = [getattr(cluster.spec.network, n) for n in networks]
    given = {s.mtu for s in sections if s.mtu is not None}
    if given:
        return max(given)
    return max(default_mtu(s) for s in sections)


def _one_mtu_per_netdev(
    cluster: ResolvedCluster, interfaces: list[HostInterface]
) -> list[HostInterface]:
    """A link has one MTU (and one kind): each address on a shared netdev takes the
    netdev's."""
    on: dict[str, list[str]] = {}
    for i in interfaces:
        on.setdefault(i.netdev, []).append(i.network)
    shared = {n: names for n, names in on.items() if len(set(names)) > 1}
    if not shared:
        return interfaces
    kinds = {n: {i.kind for i in interfaces if i.netdev == n} for n in shared}
    return [
        dataclasses.replace(
            i,
            mtu=shared_mtu(cluster, shared[i.netdev]),
            kind="infiniband" if "infiniband" in kinds[i.netdev] else "ethernet",
        )
        if i.netdev in shared
        else i
        for i in interfaces
    ]


def _server_addresses(cluster: ResolvedCluster, server: str) -> set[ipaddress.IPv4Address]:
    """Where a mount's server is reached: its address as written, or a node of the spec
    by the management address /etc/hosts gives its name (roles/cluster_base); none for a
    DNS name, which only the site's resolver knows."""
    try:
        return {ipaddress.IPv4Address(server)}
    except ValueError:
        host = cluster.by_name.get(server)
        if host is None or host.management_ip is None:
            return set()
        return {ipaddress.IPv4Address(host.management_ip)}


def mounts_over(cluster: ResolvedCluster, node: NodeNetwork) -> dict[str, tuple[str, ...]]:
    """netdev -> the required NFS mounts of the node that go over it, for its links that
    do not carry management (which holds up boot already). A mount unit starts after
    network-online.target (outputs/nfs), which does not wait for a link with
    RequiredForOnline=no: a required mount over such a link could start before its link
    is up, fail, and leave the node without it. Its link is the one whose subnet holds
    the server's address; for NFS over RDMA to a server known only by a DNS name, the
    node's storage links, else its fabric links (RDMA goes over an RDMA device)."""
    storage = cluster.spec.storage
    if storage is None:
        return {}
    links = [link for link in node.links if not link.carries_management]
    found: dict[str, list[str]] = {}
    for mount, clients in zip(storage.nfs, cluster.nfs_clients, strict=True):
        if not mount.required or node.node not in clients:
            continue
        addresses = _server_addresses(cluster, mount.server)
        over = [
            link
            for link in links
            if any(
                ip in ipaddress.IPv4Network(i.subnet) for i in link.addresses for ip in addresses
            )
        ]
        if not addresses and mount.transport == "rdma":
            for network in ("storage", "fabric"):
                over = [link for link in links if any(i.network == network for i in link.addresses)]
                if over:
                    break
        for link in over:
            found.setdefault(link.netdev, []).append(mount.path)
    return {netdev: tuple(paths) for netdev, paths in found.items()}


def node_links(cluster: ResolvedCluster, node: NodeNetwork) -> tuple[HostLink, ...]:
    """The node's links, each with the required mounts that need it up at boot."""
    needed = mounts_over(cluster, node)
    return tuple(
        dataclasses.replace(link, holds_mounts=needed.get(link.netdev, ())) for link in node.links
    )


def node_networks(cluster: ResolvedCluster) -> tuple[NodeNetwork, ...]:
    """Every node with an interface to configure, in spec order; none with
    network.hosts.configure false."""
    if not cluster.spec.network.hosts.configure:
        return ()
    found = (node_network(cluster, host) for host in cluster.hosts)
    return tuple(n for n in found if n.interfaces)


# --- RoCE QoS ----------------------------------------------------------------------


@dataclass(frozen=True)
class RocePort:
    ibdev: str  # mlx5_0
    netdev: str  # ens1f0np0


@dataclass(frozen=True)
class RoceQos:
    """The host side of a RoCE traffic class: DSCP trust, PFC and ECN on its priority."""

    profile: str
    nodes: tuple[str, ...]
    ports: tuple[RocePort, ...]
    traffic_class: int  # the IP ToS byte NCCL_IB_TC puts in the GRH
    source: str  # where the traffic class came from

    @property
    def dscp(self) -> int:
        """The ToS byte's upper six bits (RFC 2474: DSCP; RFC 3168: the low two are ECN):
        106 = 0b011010_10 is DSCP 26 (AF31) with ECT(0)."""
        return self.traffic_class >> 2

    @property
    def priority(self) -> int:
        """The priority the NIC gives that DSCP when it trusts DSCP: mlx5's default
        dscp2prio map puts DSCP 8p..8p+7 on priority p (`mlnx_qos -i <if>` prints
        "prio:3 dscp:31,30,29,28,27,26,25,24"), so DSCP 26 is priority 3."""
        return self.dscp >> 3

    @property
    def pfc(self) -> str:
        """mlnx_qos --pfc: one 0/1 per priority 0..7, PFC on the RoCE priority only."""
        return ",".join("1" if p == self.priority else "0" for p in range(8))


def _roce_ports(cluster: ResolvedCluster, profile: str) -> tuple[RocePort, ...]:
    """The compute HCAs of a profile with their netdevs, in rail order: interfaces.rails,
    else interfaces.fabric for a profile with one compute HCA."""
    hardware = cluster.spec.hardware[profile]
    hcas = [name for name, _port in hardware.compute_hcas()]
    netdevs = list(hardware.interfaces.rails)
    if not netdevs and hardware.interfaces.fabric is not None and len(hcas) == 1:
        netdevs = [hardware.interfaces.fabric]
    if len(netdevs) != len(hcas):
        return ()  # checks.addresses reports rails that do not match the compute HCAs
    return tuple(RocePort(h, n) for h, n in zip(hcas, netdevs, strict=True))


def roce_qos(cluster: ResolvedCluster) -> tuple[RoceQos, ...]:
    """One per profile with RoCE compute HCAs whose nodes are in the spec, when the
    traffic class is set. The traffic class is the NCCL_IB_TC the profile's NCCL gets
    (nccl_settings.settings_for: network.fabric.roce.traffic_class unless nccl.env sets
    it), so NCCL, ib_write_bw --tclass and the NIC agree."""
    fabric = cluster.spec.network.fabric
    if fabric is None or not fabric.ethernet:
        return ()
    found = []
    for profile in cluster.spec.hardware:
        nodes = tuple(h.name for h in cluster.hosts if h.hardware_name == profile)
        ports = _roce_ports(cluster, profile)
        if not nodes or not ports:
            continue
        by_name = {s.name: s for s in settings_for(cluster, profile)}
        setting = by_name.get("NCCL_IB_TC")
        if setting is None or not setting.value.strip().isdigit():
            continue
        found.append(
            RoceQos(profile, nodes, ports, int(setting.value), f"NCCL_IB_TC from {setting.source}")
        )
    return tuple(found)
