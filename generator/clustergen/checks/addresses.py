"""Addresses: inside their networks (and rail subnets), within range, never used twice;
storage and front-end interfaces on a defined network with an address.

A node group's problem is reported once, at the group's key, however many of its nodes
it touches; the work is linear in the nodes.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterator, Sequence

from clustergen.base import codes
from clustergen.base.errors import Problem, SpecPath
from clustergen.model import Spec
from clustergen.model.hardware import HardwareProfile
from clustergen.model.network import EthernetNetwork, Fabric
from clustergen.model.nodes import NodeGroup
from clustergen.resolve import ResolvedCluster
from clustergen.spec.hosts import Host, nth_address

_NETWORK_OF = {
    "management_ip": "management",
    "bmc_ip": "bmc",
    "fabric_ip": "fabric",
    "storage_ip": "storage",
    "frontend_ip": "frontend",
}
_NETWORKS = tuple(_NETWORK_OF.values())
_RAILED = ("fabric", "storage")  # the networks that may have a rail_prefix


def check(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    hosts = cluster.hosts
    return [
        *_networks_disjoint(spec),
        *_interfaces(spec),
        *_rails(spec),
        *_group_ranges(spec, hosts),
        *_no_reuse(spec, hosts),
    ]


def _network(spec: Spec, name: str) -> ipaddress.IPv4Network | None:
    section = getattr(spec.network, name)
    return ipaddress.IPv4Network(section.cidr) if section is not None else None


def _networks_disjoint(spec: Spec) -> list[Problem]:
    problems = []
    names = [n for n in _NETWORKS if getattr(spec.network, n) is not None]
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = _network(spec, first), _network(spec, second)
            if a and b and a.overlaps(b):
                problems.append(
                    Problem(
                        codes.NETWORK_OVERLAP,
                        ("network", second, "cidr"),
                        f"{b} overlaps the {first} network {a}",
                    )
                )
    for name in names:
        section = getattr(spec.network, name)
        gateway = section.gateway if isinstance(section, EthernetNetwork) else None
        network = _network(spec, name)
        if gateway and network and not _usable(ipaddress.IPv4Address(gateway), network):
            problems.append(
                Problem(
                    codes.NETWORK_GATEWAY_NOT_HOST,
                    ("network", name, "gateway"),
                    f"gateway {gateway} is not a host address of {network}",
                )
            )
    return problems


def _usable(address: ipaddress.IPv4Address, network: ipaddress.IPv4Network) -> bool:
    return address in network and address not in (
        network.network_address,
        network.broadcast_address,
    )


# --- storage and front-end interfaces -----------------------------------------------


def _netdevs(profile: HardwareProfile, network_name: str) -> list[str]:
    interfaces = profile.interfaces
    if network_name == "storage":
        return list(interfaces.storage)
    return [interfaces.frontend] if interfaces.frontend else []


def _interfaces(spec: Spec) -> list[Problem]:
    """Per node group: storage_ip and frontend_ip only with the profile's interfaces, the
    interfaces only on a defined network and with a first address."""
    problems = []
    for index, group in enumerate(spec.nodes):
        profile = spec.hardware.get(group.hardware)
        if profile is None:
            continue  # references.node_groups reports it
        for kind in ("storage_ip", "frontend_ip"):
            problem = _interface_problem(spec, index, group, profile, kind)
            if problem is not None:
                problems.append(problem)
    return problems


def _interface_problem(
    spec: Spec, index: int, group: NodeGroup, profile: HardwareProfile, kind: str
) -> Problem | None:
    name = _NETWORK_OF[kind]
    netdevs = _netdevs(profile, name)
    first = getattr(group, kind)
    network = getattr(spec.network, name)
    if first is not None and not netdevs:
        return Problem(
            codes.NODES_ADDRESS_WITHOUT_INTERFACE,
            ("nodes", index, kind),
            f"{kind} is given but hardware '{group.hardware}' has no interfaces.{name} to carry it",
        )
    if netdevs and first is None and network is None:
        return Problem(
            codes.NODES_INTERFACES_WITHOUT_NETWORK,
            ("nodes", index, "hardware"),
            f"hardware '{group.hardware}' has {name} interfaces ({', '.join(netdevs)}), but "
            f"network.{name} is not defined",
        )
    if netdevs and first is None:
        return Problem(
            codes.NODES_INTERFACES_WITHOUT_ADDRESS,
            ("nodes", index, kind),
            f"hardware '{group.hardware}' has {name} interfaces ({', '.join(netdevs)}) on "
            f"network.{name}, but the group gives no {kind} (the first node's address)",
        )
    return None


# --- rails ----------------------------------------------------------------------------


def _addressed_profiles(spec: Spec, kind: str) -> dict[str, HardwareProfile]:
    """The defined profiles of the node groups that give `kind`, in spec order."""
    return {
        group.hardware: spec.hardware[group.hardware]
        for group in spec.nodes
        if getattr(group, kind) is not None and group.hardware in spec.hardware
    }


def _rails(spec: Spec) -> list[Problem]:
    problems: list[Problem] = []
    fabric, storage = spec.network.fabric, spec.network.storage
    if fabric is not None and fabric.rail_prefix is not None:
        profiles = _addressed_profiles(spec, "fabric_ip")
        problems += _rail_interfaces(profiles)
        most = max((len(p.interfaces.rails) for p in profiles.values()), default=0)
        problems += _subnets_fit("fabric", fabric, most, "rails")
    if storage is not None:
        profiles = _addressed_profiles(spec, "storage_ip")
        if storage.rail_prefix is None:
            problems += _storage_needs_prefix(profiles)
        else:
            most = max((len(p.interfaces.storage) for p in profiles.values()), default=0)
            problems += _subnets_fit("storage", storage, most, "storage interfaces")
    return problems


def _rail_interfaces(profiles: dict[str, HardwareProfile]) -> Iterator[Problem]:
    """interfaces.rails names every compute HCA's netdev; a profile of one compute HCA may
    leave it out (its fabric_ip is on interfaces.fabric, in rail 1's subnet)."""
    for name, profile in profiles.items():
        rails, hcas = len(profile.interfaces.rails), len(profile.compute_hcas())
        if rails == hcas or (rails == 0 and hcas <= 1):
            continue
        yield Problem(
            codes.NETWORK_RAIL_INTERFACES,
            ("hardware", name, "interfaces", "rails"),
            f"{rails} rail interfaces for the profile's {hcas} compute HCAs: with "
            "network.fabric.rail_prefix each compute HCA's netdev is listed here, in rail "
            "order, and gets its rail's address",
        )


def _subnets_fit(name: str, network: Fabric, count: int, what: str) -> list[Problem]:
    """`count` subnets of the rail_prefix (at least one) fit in the cidr."""
    assert network.rail_prefix is not None
    cidr = ipaddress.IPv4Network(network.cidr)
    needed = max(count, 1)
    if needed << (32 - network.rail_prefix) <= cidr.num_addresses:
        return []
    room = cidr.num_addresses >> (32 - network.rail_prefix)
    holds = (
        f"which holds {room}"
        if room
        else f"which is smaller than one (rail_prefix is at least the cidr's /{cidr.prefixlen})"
    )
    return [
        Problem(
            codes.NETWORK_RAIL_SUBNETS_PAST_CIDR,
            ("network", name, "rail_prefix"),
            f"{needed} subnets of /{network.rail_prefix} (one per {what[:-1]}) do not fit in "
            f"{cidr}, {holds}: lengthen rail_prefix or widen the cidr",
        )
    ]


def _storage_needs_prefix(profiles: dict[str, HardwareProfile]) -> Iterator[Problem]:
    for name, profile in profiles.items():
        netdevs = profile.interfaces.storage
        if len(netdevs) > 1:
            yield Problem(
                codes.NETWORK_STORAGE_NEEDS_RAIL_PREFIX,
                ("hardware", name, "interfaces", "storage"),
                f"{len(netdevs)} storage interfaces ({', '.join(netdevs)}) need "
                "network.storage.rail_prefix: each gets an address in a subnet of its own "
                "(docs/networks.md)",
            )


# --- each group's range -----------------------------------------------------------------


def _subnet(spec: Spec, network_name: str) -> tuple[ipaddress.IPv4Network | None, str]:
    """The network a group's first address and range must lie in (rail 1's subnet of a
    network with a rail_prefix), and how messages name it."""
    network = _network(spec, network_name)
    section = getattr(spec.network, network_name)
    prefix = section.rail_prefix if network_name in _RAILED and section is not None else None
    if network is None or prefix is None or prefix < network.prefixlen:
        return network, f"the {network_name} network {network}"
    rail_one = ipaddress.IPv4Network((network.network_address, prefix))
    return rail_one, f"rail 1's subnet {rail_one} of the {network_name} network"


def _group_ranges(spec: Spec, hosts: Sequence[Host]) -> list[Problem]:
    group_sizes = Counter(host.group_index for host in hosts)
    subnets = {name: _subnet(spec, name) for name in _NETWORKS}
    problems = []
    for index, group in enumerate(spec.nodes):
        for kind, network_name in _NETWORK_OF.items():
            first = getattr(group, kind)
            if first is not None:
                problems += _range(
                    ("nodes", index, kind), kind, first, group_sizes[index], subnets[network_name]
                )
    return problems


def _range(
    path: SpecPath,
    kind: str,
    first: str,
    count: int,
    subnet: tuple[ipaddress.IPv4Network | None, str],
) -> list[Problem]:
    network, where = subnet
    network_name = _NETWORK_OF[kind]
    if network is None:
        return [
            Problem(
                codes.NODES_ADDRESS_WITHOUT_NETWORK,
                path,
                f"{kind} is given but network.{network_name} is not defined",
            )
        ]
    if not _usable(ipaddress.IPv4Address(first), network):
        return [
            Problem(codes.NODES_ADDRESS_NOT_HOST, path, f"{first} is not a host address of {where}")
        ]
    last = nth_address(first, count - 1)
    if last is None or not _usable(ipaddress.IPv4Address(last), network):
        return [
            Problem(
                codes.NODES_ADDRESS_RANGE_PAST_NETWORK,
                path,
                f"{count} nodes from {first} run past {where} (the last would be {last}; the "
                f"last host address is {network.broadcast_address - 1})",
            )
        ]
    return []


# --- no address twice -------------------------------------------------------------------


# Who holds an address: (host name, its key); a gateway's host name is empty and its
# key names the network. Formatted only for a message.
_Owner = tuple[str, str]


def _owner_text(owner: _Owner) -> str:
    host, kind = owner
    return f"{host}'s {kind}" if host else f"the {kind} gateway"


def _no_reuse(spec: Spec, hosts: Sequence[Host]) -> list[Problem]:
    """Every address once across every network's interfaces and gateways, in one pass over
    each node's first address on each network; one report per node group and key (a
    shifted range collides many times).

    A node's further addresses (rails 2.., storage interfaces 2..) need no pass of their
    own: interface r's address is the first + (r - 1) x 2^(32 - rail_prefix), in subnet r
    of the network, once every group's range lies in subnet 1 (_group_ranges) and the
    subnets fit in the cidr (_rails). Two such addresses are then equal only on the same
    interface number with equal first addresses, which this pass reports, and no network
    overlaps another (_networks_disjoint). So the work stays one step per node and network
    (tests/test_networks.py checks the claim on every address)."""
    owners: dict[str, _Owner] = {}
    for name in _NETWORKS:
        section = getattr(spec.network, name)
        if isinstance(section, EthernetNetwork) and section.gateway:
            owners[section.gateway] = ("", name)
    kinds = [kind for kind in _NETWORK_OF if any(getattr(g, kind) for g in spec.nodes)]
    clashes: dict[tuple[int, str], tuple[str, _Owner, _Owner]] = {}
    for host in hosts:
        for kind in kinds:
            address = getattr(host, kind)
            if address is not None:
                owner = (host.name, kind)
                earlier = owners.setdefault(address, owner)
                if earlier is not owner:
                    clashes.setdefault((host.group_index, kind), (address, owner, earlier))
    return [
        Problem(
            codes.NODES_ADDRESS_REUSED,
            ("nodes", group_index, kind),
            f"{address} ({_owner_text(owner)}) is already used as {_owner_text(earlier)}",
        )
        for (group_index, kind), (address, owner, earlier) in clashes.items()
    ]
