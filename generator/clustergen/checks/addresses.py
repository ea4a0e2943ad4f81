"""Addresses: inside their networks, within range, never used twice."""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Sequence

from clustergen import codes
from clustergen.errors import Problem, SpecPath
from clustergen.hosts import Host, nth_address
from clustergen.model import Spec
from clustergen.resolve import ResolvedCluster

_NETWORK_OF = {"management_ip": "management", "bmc_ip": "bmc", "fabric_ip": "fabric"}


def check(cluster: ResolvedCluster) -> list[Problem]:
    spec = cluster.spec
    hosts = cluster.hosts
    return [*_networks_disjoint(spec), *_group_ranges(spec, hosts), *_no_reuse(spec, hosts)]


def _network(spec: Spec, name: str) -> ipaddress.IPv4Network | None:
    section = getattr(spec.network, name)
    return ipaddress.IPv4Network(section.cidr) if section is not None else None


def _networks_disjoint(spec: Spec) -> list[Problem]:
    problems = []
    names = [n for n in ("management", "bmc", "fabric") if getattr(spec.network, n) is not None]
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
        gateway = getattr(spec.network, name).gateway if name != "fabric" else None
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


def _group_ranges(spec: Spec, hosts: Sequence[Host]) -> list[Problem]:
    group_sizes = Counter(host.group_index for host in hosts)
    problems = []
    for index, group in enumerate(spec.nodes):
        count = group_sizes[index]
        for kind, network_name in _NETWORK_OF.items():
            first = getattr(group, kind)
            if first is None:
                continue
            path: SpecPath = ("nodes", index, kind)
            network = _network(spec, network_name)
            if network is None:
                problems.append(
                    Problem(
                        codes.NODES_ADDRESS_WITHOUT_NETWORK,
                        path,
                        f"{kind} is given but network.{network_name} is not defined",
                    )
                )
                continue
            if not _usable(ipaddress.IPv4Address(first), network):
                problems.append(
                    Problem(
                        codes.NODES_ADDRESS_NOT_HOST,
                        path,
                        f"{first} is not a host address of the {network_name} network {network}",
                    )
                )
                continue
            last = nth_address(first, count - 1)
            if last is None or not _usable(ipaddress.IPv4Address(last), network):
                problems.append(
                    Problem(
                        codes.NODES_ADDRESS_RANGE_PAST_NETWORK,
                        path,
                        f"{count} nodes from {first} run past the {network_name} network {network} "
                        f"(the last would be {last}; the last host address is "
                        f"{network.broadcast_address - 1})",
                    )
                )
    return problems


def _no_reuse(spec: Spec, hosts: Sequence[Host]) -> list[Problem]:
    owners: dict[str, str] = {}
    problems = []
    for name in ("management", "bmc"):
        section = getattr(spec.network, name)
        if section is not None and section.gateway:
            owners[section.gateway] = f"the {name} gateway"
    reported_groups: set[tuple[int, str]] = set()
    for host in hosts:
        for kind in _NETWORK_OF:
            address = host.address(kind)
            if address is None:
                continue
            owner = f"{host.name}'s {kind}"
            if address in owners and (host.group_index, kind) not in reported_groups:
                # One report per group and address kind: a shifted range collides many times.
                reported_groups.add((host.group_index, kind))
                problems.append(
                    Problem(
                        codes.NODES_ADDRESS_REUSED,
                        ("nodes", host.group_index, kind),
                        f"{address} ({owner}) is already used as {owners[address]}",
                    )
                )
            owners.setdefault(address, owner)
    return problems
