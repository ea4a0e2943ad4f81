"""Host network configuration: each route reaches its next hop over an interface of its
own network (docs/networks.md#routes), a NIC that carries several networks gets one
MTU (docs/networks.md#one-nic-for-several-networks), and an interface whose name says
its link layer is of its network's (docs/networks.md#link-layers)."""

from __future__ import annotations

import ipaddress

from clustergen.base import codes
from clustergen.base.errors import Problem
from clustergen.resolve import ResolvedCluster

_ROUTED = ("management", "fabric", "storage", "frontend")


def routes(cluster: ResolvedCluster) -> list[Problem]:
    """A route's `via` lies inside its network's cidr (then in one rail or storage
    subnet of it): only an interface in the next hop's subnet can reach it."""
    network = cluster.spec.network
    problems = []
    for name in _ROUTED:
        section = getattr(network, name)
        if section is None:
            continue
        cidr = ipaddress.IPv4Network(section.cidr)
        for index, route in enumerate(section.routes):
            if ipaddress.IPv4Address(route.via) in cidr:
                continue
            problems.append(
                Problem(
                    codes.NETWORK_ROUTE_VIA_OUTSIDE,
                    ("network", name, "routes", index, "via"),
                    f"route to {route.to} via {route.via}: {route.via} is outside "
                    f"network.{name} ({section.cidr}), so no interface of that network "
                    "reaches it; give a next hop inside the network",
                )
            )
    return problems


def _netdev_networks(cluster: ResolvedCluster, profile: str) -> dict[str, list[str]]:
    """netdev -> the networks the profile's interfaces put on it, in spec order."""
    network = cluster.spec.network
    interfaces = cluster.spec.hardware[profile].interfaces
    named: list[tuple[str, list[str | None]]] = [("management", [interfaces.management])]
    if network.fabric is not None:
        named.append(("fabric", list(interfaces.rails) or [interfaces.fabric]))
    if network.storage is not None:
        named.append(("storage", list(interfaces.storage)))
    if network.frontend is not None:
        named.append(("frontend", [interfaces.frontend]))
    on: dict[str, list[str]] = {}
    for name, netdevs in named:
        for netdev in netdevs:
            if netdev is not None and name not in on.setdefault(netdev, []):
                on[netdev].append(name)
    return on


def shared_links(cluster: ResolvedCluster) -> list[Problem]:
    """A netdev carrying several networks has one MTU: two that the spec sets differently
    cannot both hold (without one set, the netdev takes the largest default)."""
    network = cluster.spec.network
    if not network.hosts.configure:
        return []
    problems = []
    for profile in cluster.spec.hardware:
        for netdev, names in _netdev_networks(cluster, profile).items():
            given = {n: getattr(network, n).mtu for n in names if getattr(network, n).mtu}
            if len(set(given.values())) < 2:
                continue
            said = ", ".join(f"network.{n}.mtu {mtu}" for n, mtu in given.items())
            problems.append(
                Problem(
                    codes.NETWORK_SHARED_INTERFACE_MTU,
                    ("hardware", profile, "interfaces"),
                    f"{netdev} carries {' and '.join(names)}, whose MTUs differ ({said}), "
                    "and a link has one MTU: give them the same MTU, or put the networks on "
                    "their own interfaces",
                )
            )
    return problems


# The link layer a netdev's name says: systemd's predictable names start with the type
# ("en" Ethernet, "ib" InfiniBand: systemd.net-naming-scheme(7)), the kernel's own with
# "eth" and "ib" (IPoIB, Documentation/infiniband/ipoib.rst). Other names (host0, bond0,
# a site's udev names) say nothing and are not judged.
_NAMED_LINKS = (("en", "Ethernet"), ("eth", "Ethernet"), ("ib", "InfiniBand"))
# What each network type runs on: RoCE over Ethernet, IPoIB over InfiniBand.
_TYPE_LINKS = {"infiniband": "InfiniBand", "roce": "Ethernet", "spectrum-x": "Ethernet"}


def _named_link(netdev: str) -> str | None:
    for prefix, link in _NAMED_LINKS:
        if netdev.startswith(prefix):
            return link
    return None


def link_layers(cluster: ResolvedCluster) -> list[Problem]:
    """A fabric or storage netdev whose name says one link layer on a network of the other
    (an Ethernet port named enP6p3s0f0np0 on network.storage of type infiniband): LNet
    o2ib or NCCL over it cannot reach the network's InfiniBand ports, nor RoCE an IPoIB
    netdev, without a router."""
    network = cluster.spec.network
    problems = []
    for profile, hardware in cluster.spec.hardware.items():
        interfaces = hardware.interfaces
        named: list[tuple[str, str, list[str]]] = []
        if network.fabric is not None:
            fabric = [n for n in (*interfaces.rails, interfaces.fabric) if n is not None]
            named.append(("fabric", network.fabric.type, list(dict.fromkeys(fabric))))
        if network.storage is not None:
            named.append(("storage", network.storage.type, list(interfaces.storage)))
        for name, kind, netdevs in named:
            wanted = _TYPE_LINKS[kind]
            for netdev in netdevs:
                link = _named_link(netdev)
                if link is None or link == wanted:
                    continue
                problems.append(
                    Problem(
                        codes.NETWORK_LINK_LAYER,
                        ("hardware", profile, "interfaces"),
                        f"{netdev} is named as an {link} netdev, but network.{name} is of type "
                        f"{kind}, which runs over {wanted}: name the {wanted} netdev of the "
                        f"{name} HCA (ibdev2netdev), or give network.{name} the type its "
                        "ports have",
                    )
                )
    return problems


def roce_addresses(cluster: ResolvedCluster) -> list[Problem]:
    """On RoCE each compute HCA's traffic leaves from its netdev's address (its GIDs are
    made per IP address of the netdev): a compute HCA beyond the addressed fabric netdevs
    (interfaces.rails, else interfaces.fabric) has no GID NCCL can use, and NCCL_IB_HCA,
    which lists it, sends a share of every collective to a port that cannot connect."""
    fabric = cluster.spec.network.fabric
    if fabric is None or not fabric.ethernet:
        return []
    problems = []
    for profile, hardware in cluster.spec.hardware.items():
        hcas = hardware.compute_hcas()
        interfaces = hardware.interfaces
        # Each rail's netdev gets its rail's address only with rail_prefix; else the node's
        # one fabric_ip goes to one netdev.
        listed = list(interfaces.rails) or ([interfaces.fabric] if interfaces.fabric else [])
        netdevs = listed if fabric.rail_prefix is not None else listed[:1]
        if len(hcas) <= len(netdevs) or not netdevs:
            continue
        unaddressed = ", ".join(hca for hca, _ in hcas[len(netdevs) :])
        problems.append(
            Problem(
                codes.NETWORK_ROCE_HCA_WITHOUT_ADDRESS,
                ("hardware", profile, "interfaces"),
                f"{len(hcas)} compute HCAs on a RoCE fabric but {len(netdevs)} addressed "
                f"netdev(s) ({', '.join(netdevs)}): no address reaches {unaddressed}, so it "
                "has no RoCE GID (GIDs exist per IP address), yet NCCL_IB_HCA lists it; give "
                "each compute HCA's netdev in interfaces.rails (rail order) with "
                "network.fabric.rail_prefix, or list only the addressed HCAs (topology hcas "
                "of role compute, or fabric_hcas)",
            )
        )
    return problems
